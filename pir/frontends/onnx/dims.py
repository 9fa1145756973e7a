"""ONNX dims as exporters write them, read into pir's dims.

An ONNX dim is a ``dim_value`` or a ``dim_param`` string, and exporters disagree on what the
string means:

- a name (``batch``, ``N``, ``DynamicDimension.0``): a symbol;
- ``?``, an empty string, a missing field, or a ``dim_value`` of -1: "unknown" (on a graph
  input each becomes a fresh symbol, named after the input and the position, so that two
  unknown dims are not taken for one);
- an expression of other dims (PyTorch's exporters write sympy's spelling on value_info:
  ``floor(H/2 - 1/2) + 1``, ``2*s0``, ``((s0 - 1)//2) + 1``, ``Max(1, s1)``): a
  :class:`~pir.ir.dimexpr.DimExpr` over the same symbols;
- ``unk__N``: what ONNX's own shape inference names a dim it cannot compute (a placeholder,
  which our type rules' result replaces).

:func:`parse_exporter_expr` reads the expression dialect: ``+ - *``, ``/`` by an integer (a
rational value, made integral by an enclosing ``floor``/``ceiling``), ``//`` and ``%`` by an
integer, ``floor``, ``ceiling``/``ceil``, ``FloorDiv``, ``CeilDiv``/``CeilToInt``, ``Mod``,
``Max``/``Min`` (either case).  A string it cannot read is an opaque symbol, as before.
"""

from __future__ import annotations

import re
from typing import Callable

from pir.errors import PirError
from pir.frontends.onnx.context import quoted
from pir.ir import dimexpr
from pir.ir.types import TensorType

__all__ = ["symbol_for", "parse_exporter_expr", "is_unknown_param", "bind_shape",
           "named_symbols", "fresh_symbols"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


def symbol_for(dim_param: str) -> str | None:
    """A legal symbolic dim name for an ONNX ``dim_param`` (None when nothing is left)."""
    from pir.ir.types import is_symbol_name

    name = re.sub(r"[^A-Za-z0-9_]", "_", dim_param)
    if name and name[0].isdigit():
        name = "d" + name
    if not name:
        return None
    return name if is_symbol_name(name) and name not in dimexpr.KEYWORDS else "s_" + name


def is_unknown_param(text: str) -> bool:
    """``?``, ``-1`` or blank: the ways exporters spell "unknown" in a ``dim_param``."""
    return text.strip() in ("", "?", "-1")


# -- the exporters' expression dialect -------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_.]*)|(//|\*\*|[-+*/%(),]))")

# A value in this parser is (numerator, denominator): a dim over a positive integer.
_FUNCS = {"floor", "ceiling", "ceil", "floordiv", "ceildiv", "ceiltoint", "mod", "max", "min",
          "int", "trunc", "inttruediv"}


class _Unreadable(ValueError):
    pass


def _reduce(num, den: int):
    if den == 1:
        return num, 1
    q = dimexpr.floordiv(num, den)
    if q is not None and dimexpr.mul(q, den) == num:  # divides exactly
        return q, 1
    return num, den


def _integral(v) -> object:
    num, den = _reduce(*v)
    if den != 1:
        raise _Unreadable("a fractional dim")
    return num


class _Parser:
    def __init__(self, text: str):
        self.toks: list[str] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                if text[pos:].strip():
                    raise _Unreadable(text)
                break
            self.toks.append(m.group(1) or m.group(2) or m.group(3))
            pos = m.end()
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> str:
        t = self.peek()
        if t is None or (want is not None and t != want):
            raise _Unreadable(want or "more")
        self.i += 1
        return t

    def expr(self):
        v = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            w = self.term()
            v = self._add(v, w if op == "+" else (dimexpr.neg(w[0]), w[1]))
        return v

    @staticmethod
    def _add(a, b):
        (na, da), (nb, db) = a, b
        return _reduce(dimexpr.add(dimexpr.mul(na, db), dimexpr.mul(nb, da)), da * db)

    def term(self):
        v = self.unary()
        while self.peek() in ("*", "/", "//", "%"):
            op = self.take()
            w = self.unary()
            if op == "*":
                v = _reduce(dimexpr.mul(v[0], w[0]), v[1] * w[1])
            else:
                k = _integral(w)
                if not isinstance(k, int) or k <= 0:
                    raise _Unreadable("a division by a symbol")
                if op == "/":
                    v = _reduce(v[0], v[1] * k)
                elif op == "//":
                    v = (dimexpr.floordiv(v[0], v[1] * k), 1)
                else:
                    v = (dimexpr.mod(_integral(v), k), 1)
        return v

    def unary(self):
        t = self.peek()
        if t == "-":
            self.take()
            n, d = self.unary()
            return dimexpr.neg(n), d
        if t == "+":
            self.take()
            return self.unary()
        if t == "(":
            self.take()
            v = self.expr()
            self.take(")")
            return v
        if t is None:
            raise _Unreadable("the end")
        if t.isdigit():
            self.take()
            return int(t), 1
        if _IDENT.match(t) and t.lower() in _FUNCS and self.toks[self.i + 1:self.i + 2] == ["("]:
            return self.call(self.take().lower())
        if _IDENT.match(t):
            self.take()
            sym = symbol_for(t)
            if sym is None:
                raise _Unreadable(t)
            return sym, 1
        raise _Unreadable(t)

    def call(self, fn: str):
        self.take("(")
        args = [self.expr()]
        while self.peek() == ",":
            self.take()
            args.append(self.expr())
        self.take(")")
        if fn in ("floor", "int", "trunc") and len(args) == 1:
            # trunc and int() equal floor here: dims are never negative
            n, d = args[0]
            return dimexpr.floordiv(n, d), 1
        if fn in ("ceiling", "ceil", "ceiltoint") and len(args) == 1:
            n, d = args[0]
            return dimexpr.ceildiv(n, d), 1
        if fn in ("floordiv", "ceildiv", "inttruediv", "mod") and len(args) == 2:
            a, k = _integral(args[0]), _integral(args[1])
            if not isinstance(k, int) or k <= 0:
                raise _Unreadable("a division by a symbol")
            f = {"floordiv": dimexpr.floordiv, "inttruediv": dimexpr.floordiv,
                 "ceildiv": dimexpr.ceildiv, "mod": dimexpr.mod}[fn]
            return f(a, k), 1
        if fn in ("max", "min") and len(args) >= 2:
            f = dimexpr.maximum if fn == "max" else dimexpr.minimum
            return f(*[_integral(a) for a in args]), 1
        raise _Unreadable(fn)


def parse_exporter_expr(text: str):
    """The dim an exporter's ``dim_param`` expression denotes (an int, a symbol or a
    DimExpr), or None when ``text`` is no expression this reader knows.  A plain name is
    not an expression (the caller makes it a symbol)."""
    if not re.search(r"[-+*/%()]", text) or is_unknown_param(text):
        return None
    try:
        p = _Parser(text)
        v = p.expr()
        if p.peek() is not None:
            return None
        d = _integral(v)
    except (_Unreadable, IndexError, RecursionError):
        return None
    if d is None or (isinstance(d, int) and d < 0):
        return None
    return d


# -- the graph inputs' symbols ---------------------------------------------------------------


def bind_shape(name: str, t: TensorType, shape: tuple[int, ...],
                pins: dict[str, int]) -> dict[str, int]:
    """The symbol sizes that input ``name`` of type ``t`` having ``shape`` implies."""
    if t.shape is None:
        return {}
    if len(shape) != len(t.shape):
        raise PirError(f"--static: input {quoted(name)} has shape {list(shape)}, but the model "
                       f"declares rank {len(t.shape)} ({t})")
    out: dict[str, int] = {}
    for d, n in zip(t.shape, shape):
        if isinstance(d, int) and d != n:
            raise PirError(f"--static: input {quoted(name)} has shape {list(shape)}, but the "
                           f"model declares {t}")
        if isinstance(d, str):
            if out.get(d, pins.get(d, n)) != n:
                raise PirError(f"--static: dim {d} of input {quoted(name)} is {n}, but it is "
                               f"{out.get(d, pins.get(d))} elsewhere")
            out[d] = n
    return out


def named_symbols(inputs) -> set[str]:
    """The symbols the graph inputs name themselves (fresh ones must differ from these)."""
    out = set()
    for i in inputs:
        for d in i.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and not is_unknown_param(d.dim_param):
                out |= dimexpr.symbols(parse_exporter_expr(d.dim_param)
                                       or symbol_for(d.dim_param))
    return out


def fresh_symbols(input_name: str, taken: set[str]) -> Callable[[int], str]:
    """Names for the unknown dims of one graph input: ``<input>_<position>`` (``x_2``),
    suffixed where that name is taken."""
    def fresh(pos: int) -> str:
        base = symbol_for(f"{input_name}_{pos}") or f"d_{pos}"
        name, k = base, 1
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        return name

    return fresh
