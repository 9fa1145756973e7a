"""Symbolic dim expressions: ``2*H + 2``, ``(H + 1) floordiv 2``, ``min(S, 512)``.

A dim is an ``int`` (a static size), a ``str`` (a named symbol), ``None`` (unknown) or a
:class:`DimExpr`: a polynomial with integer coefficients over *atoms*, where an atom is a
symbol, ``e floordiv k`` (``k`` an integer > 1) or ``min``/``max`` of expressions.  This is
the algebra of MLIR's affine expressions and of CINN's ``DimExpr``, restricted to what shape
rules need.

Every operation returns the **canonical form** (:func:`canon`): an ``int`` when the value is
constant, the symbol's ``str`` when it is one symbol, else a ``DimExpr`` whose terms are
sorted, so that equal expressions are equal Python values with equal hashes: ``2*(H+1)`` and
``2*H + 2`` are one object, and dims can key dicts and union-finds as before.  ``ceildiv``
and ``mod`` have no atoms of their own (``a ceildiv k = (a + k - 1) floordiv k``, ``a mod k =
a - k*(a floordiv k)``), and ``floordiv`` pulls out every term its divisor divides, so one
value has one spelling.

Arithmetic on dims goes through the functions of this module (:func:`add`, :func:`mul`,
:func:`floordiv` ...), which take any mix of the four kinds and give ``None`` when an
operand is unknown or the result leaves the algebra (a division by a symbol).  Python's
operators are not used on dims because ``"H" + "W"`` is string concatenation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Union

__all__ = ["DimExpr", "FloorDiv", "MinMax", "canon", "add", "sub", "mul", "neg", "floordiv",
           "ceildiv", "mod", "minimum", "maximum", "exact_div", "product", "evaluate", "solve", "linear",
           "substitute", "symbols", "is_symbolic", "never_one", "parse_dim_expr",
           "dim_text", "KEYWORDS"]

#: Words of the expression syntax; a symbol spelled like one is quoted inside an expression.
KEYWORDS = frozenset({"floordiv", "ceildiv", "mod", "min", "max"})

# A monomial is a sorted tuple of atoms (a product; an atom may repeat); a term is
# (monomial, coefficient); the constant term has the empty monomial.
Atom = Union[str, "FloorDiv", "MinMax"]
Monomial = tuple
Terms = tuple  # tuple[tuple[Monomial, int], ...], sorted by monomial key, no zero coefficient


def _atom_key(a) -> tuple:
    if isinstance(a, str):
        return (0, a)
    return a.key


def _mono_key(m: Monomial) -> tuple:
    # lower degree first, then atom by atom: H before H*W before W*W
    return (len(m), tuple(_atom_key(a) for a in m))


@dataclass(frozen=True, slots=True)
class FloorDiv:
    """The atom ``num floordiv den``: ``num`` a canonical non-constant expression whose
    coefficients lie in ``[0, den)`` (the rest was pulled out), ``den > 1``."""

    num: object  # str | DimExpr
    den: int

    @property
    def key(self) -> tuple:
        return (1, _dim_key(self.num), self.den)

    def __str__(self) -> str:
        return f"{_text(self.num, 1)} floordiv {self.den}"


@dataclass(frozen=True, slots=True)
class MinMax:
    """The atom ``min(args)`` or ``max(args)`` (``kind``), over two or more canonical dims
    sorted by key, no two of which differ by a constant (that pair is decided)."""

    kind: str
    args: tuple

    @property
    def key(self) -> tuple:
        return (2 if self.kind == "min" else 3, tuple(_dim_key(a) for a in self.args))

    def __str__(self) -> str:
        return f"{self.kind}({', '.join(_text(a, 0) for a in self.args)})"


@dataclass(frozen=True, slots=True)
class DimExpr:
    """A non-trivial canonical expression: a sum of terms (see the module doc).  Build one
    with the functions of this module, never directly."""

    terms: Terms

    def __str__(self) -> str:
        return _text(self, 0)

    def __repr__(self) -> str:
        return f"DimExpr({str(self)!r})"


def _dim_key(d) -> tuple:
    if isinstance(d, int):
        return (0, d)
    if isinstance(d, str):
        return (1, ((1, ((0, d),)), 1),)
    return (1,) + tuple((_mono_key(m), c) for m, c in d.terms)


# -- terms <-> canonical dims ----------------------------------------------------------------


def _terms(d) -> dict:
    """The terms of a known dim as a dict monomial -> coefficient."""
    if isinstance(d, bool):
        raise TypeError(f"a dim cannot be a bool: {d!r}")
    if isinstance(d, int):
        return {(): d} if d else {}
    if isinstance(d, str):
        return {(d,): 1}
    if isinstance(d, DimExpr):
        return dict(d.terms)
    raise TypeError(f"not a dim: {d!r}")


def canon(terms: Mapping) -> object:
    """The canonical dim with ``terms`` (monomial -> coefficient)."""
    items = sorted(((m, c) for m, c in terms.items() if c), key=lambda t: _mono_key(t[0]))
    if not items:
        return 0
    if len(items) == 1:
        m, c = items[0]
        if m == ():
            return c
        if c == 1 and len(m) == 1 and isinstance(m[0], str):
            return m[0]
    return DimExpr(tuple(items))


def is_symbolic(d) -> bool:
    """A symbol or an expression (a dim that is known but not static)."""
    return isinstance(d, (str, DimExpr))


# -- arithmetic ------------------------------------------------------------------------------


def _lift(fn: Callable) -> Callable:
    def op(*dims):
        if any(d is None for d in dims):
            return None
        return fn(*dims)

    op.__name__, op.__doc__ = fn.__name__, fn.__doc__
    return op


@_lift
def add(a, b):
    """``a + b``."""
    t = _terms(a)
    for m, c in _terms(b).items():
        t[m] = t.get(m, 0) + c
    return canon(t)


@_lift
def neg(a):
    """``-a``."""
    return canon({m: -c for m, c in _terms(a).items()})


@_lift
def sub(a, b):
    """``a - b``."""
    return add(a, neg(b))


@_lift
def mul(a, b):
    """``a * b`` (symbols may multiply symbols)."""
    out: dict = {}
    for ma, ca in _terms(a).items():
        for mb, cb in _terms(b).items():
            m = tuple(sorted(ma + mb, key=_atom_key))
            out[m] = out.get(m, 0) + ca * cb
    return canon(out)


def product(dims: Iterable):
    """The product of ``dims`` (1 for none; None when one is unknown)."""
    out = 1
    for d in dims:
        out = mul(out, d)
        if out is None:
            return None
    return out


def _int(k) -> int | None:
    return k if isinstance(k, int) and not isinstance(k, bool) else None


@_lift
def floordiv(a, k):
    """``a floordiv k`` for an integer ``k > 0``; None when ``k`` is not a positive integer."""
    k = _int(k)
    if k is None or k <= 0:
        return None
    if k == 1:
        return a
    pulled: dict = {}
    rest: dict = {}
    for m, c in _terms(a).items():
        q, r = divmod(c, k)  # floor((k*q + r) * m / k) = q*m + floor(r*m / k) for integer m
        if q:
            pulled[m] = q
        if r:
            rest[m] = r
    const = rest.pop((), 0)
    if not rest:  # 0 <= const < k
        return canon(pulled)
    nested = next((m for m, c in rest.items()
                   if c == 1 and len(m) == 1 and isinstance(m[0], FloorDiv)), None)
    if nested is not None:
        # floor((floor(a / m) + r) / k) = floor((a + m*r) / (m*k)) for any integer r: one
        # division, so a chain of stride-2 convolutions' ((H + 1) floordiv 2 + 1) floordiv 2
        # is (H + 3) floordiv 4, the form TVM's simplifier writes too (it must prove the
        # two equal where a buffer's shape meets a loop's extent)
        inner = nested[0]
        r = canon({**{m: c for m, c in rest.items() if m != nested}, (): const})
        return add(canon(pulled), floordiv(add(inner.num, mul(inner.den, r)), inner.den * k))
    g = math.gcd(k, const, *rest.values())
    if g > 1:  # floor(g*x / (g*k')) = floor(x / k')
        k //= g
        const //= g
        rest = {m: c // g for m, c in rest.items()}
    if const:
        rest[()] = const
    num = canon(rest)
    pulled[(FloorDiv(num, k),)] = pulled.get((FloorDiv(num, k),), 0) + 1
    return canon(pulled)


@_lift
def ceildiv(a, k):
    """``a ceildiv k`` (``(a + k - 1) floordiv k``) for an integer ``k > 0``."""
    k = _int(k)
    if k is None or k <= 0:
        return None
    return floordiv(add(a, k - 1), k)


@_lift
def mod(a, k):
    """``a mod k`` (``a - k*(a floordiv k)``) for an integer ``k > 0``."""
    q = floordiv(a, k)
    return None if q is None else sub(a, mul(k, q))


def never_one(d) -> bool:
    """True when dim ``d`` can be no value of its symbols equal 1, so it never broadcasts:
    an int other than 1, a multiple of an integer >= 2 (``2*((H + 31) floordiv 32)``), or a
    constant >= 2 plus terms that are never negative (``H + 2``)."""
    if d is None:
        return False
    if isinstance(d, int):
        return d != 1
    if isinstance(d, str):
        return False
    terms = _terms(d)
    if math.gcd(*terms.values()) >= 2:
        return True
    rest = {m: c for m, c in terms.items() if m}
    return terms.get((), 0) >= 2 and (not rest or _nonneg(canon(rest)))


def _nonneg(d) -> bool:
    """True when ``d`` is known to be >= 0 (dims, and so symbols, are never negative)."""
    if isinstance(d, int):
        return d >= 0
    if isinstance(d, str):
        return True
    return all(c > 0 and all(_nonneg_atom(a) for a in m) for m, c in d.terms)


def _nonneg_atom(a) -> bool:
    if isinstance(a, str):
        return True
    if isinstance(a, FloorDiv):
        return _nonneg(a.num)
    return all(_nonneg(x) for x in a.args)


def _min_max(kind: str, dims: tuple):
    if any(d is None for d in dims):
        return None
    pick = min if kind == "min" else max
    flat: list = []
    for d in dims:  # min(min(a, b), c) = min(a, b, c)
        inner = _single_atom(d)
        if isinstance(inner, MinMax) and inner.kind == kind:
            flat.extend(inner.args)
        else:
            flat.append(d)
    kept: list = []
    for d in flat:
        for i, e in enumerate(kept):
            diff = sub(d, e)
            if isinstance(diff, int):  # the pair is decided
                kept[i] = pick(d, e, key=lambda x: 0 if x is e else diff)
                break
            if _nonneg(diff) or _nonneg(neg(diff)):  # d >= e (or e >= d) everywhere
                d_wins = _nonneg(diff) == (kind == "max")
                kept[i] = d if d_wins else e
                break
        else:
            kept.append(d)
    if len(kept) == 1:
        return kept[0]
    # integers last, as people write them: min(S, 512)
    args = tuple(sorted(kept, key=lambda x: (isinstance(x, int), _dim_key(x))))
    return canon({(MinMax(kind, args),): 1})


def minimum(*dims):
    """``min(dims)``."""
    return _min_max("min", dims)


def maximum(*dims):
    """``max(dims)``."""
    return _min_max("max", dims)


def _single_atom(d):
    if isinstance(d, DimExpr) and len(d.terms) == 1:
        (m, c), = d.terms
        if c == 1 and len(m) == 1:
            return m[0]
    return None


def exact_div(a, b):
    """``a / b`` when ``b`` divides ``a`` exactly as polynomials and ``b`` is one term
    (``(N*H*W*4) / (N*4) = H*W``); else None."""
    if a is None or b is None:
        return None
    tb = _terms(b)
    if len(tb) != 1:
        return a if a == b else None
    (mb, cb), = tb.items()
    if cb == 0:
        return None
    out: dict = {}
    for m, c in _terms(a).items():
        rest = list(m)
        for atom in mb:
            if atom not in rest:
                return None
            rest.remove(atom)
        if c % cb:
            return None
        out[tuple(rest)] = c // cb
    return canon(out)


# -- evaluation and substitution -------------------------------------------------------------


def evaluate(d, sizes: Mapping[str, int]) -> int | None:
    """The value of ``d`` with symbols from ``sizes``; None when one is missing or ``d`` is
    unknown."""
    if d is None or isinstance(d, int):
        return d
    if isinstance(d, str):
        return sizes.get(d)
    total = 0
    for m, c in d.terms:
        v = c
        for a in m:
            x = _eval_atom(a, sizes)
            if x is None:
                return None
            v *= x
        total += v
    return total


def _eval_atom(a, sizes) -> int | None:
    if isinstance(a, str):
        return sizes.get(a)
    if isinstance(a, FloorDiv):
        n = evaluate(a.num, sizes)
        return None if n is None else n // a.den
    vals = [evaluate(x, sizes) for x in a.args]
    if any(v is None for v in vals):
        return None
    return min(vals) if a.kind == "min" else max(vals)


def linear(d, sizes: Mapping[str, int]) -> tuple[str, int, int] | None:
    """(S, k, c) when ``d``, with the symbols of ``sizes`` put in, is ``k*S + c`` in one
    symbol ``S`` (``k != 0``); else None."""
    free = [s for s in symbols(d) if s not in sizes]
    if len(free) != 1:
        return None
    s = free[0]
    rest = substitute(d, {k: v for k, v in sizes.items() if k in symbols(d)})
    t = _terms(rest) if rest is not None else {}
    if set(t) - {(), (s,)} or (s,) not in t:
        return None
    return s, t[(s,)], t.get((), 0)


def solve(d, value: int, sizes: Mapping[str, int]) -> tuple[str, int] | None:
    """(symbol, its value) when ``d`` is linear in one symbol not in ``sizes``
    (:func:`linear`) and ``d == value`` holds for a size of it; else None."""
    lin = linear(d, sizes)
    if lin is None:
        return None
    s, k, c = lin
    if (value - c) % k or (value - c) // k < 0:
        return None
    return s, (value - c) // k


def substitute(d, mapping: Mapping[str, object]):
    """``d`` with each symbol in ``mapping`` replaced by its dim (recanonicalised)."""
    if d is None or isinstance(d, int):
        return d
    if isinstance(d, str):
        return mapping.get(d, d)
    out = 0
    for m, c in d.terms:
        v = c
        for a in m:
            v = mul(v, _subst_atom(a, mapping))
            if v is None:
                return None
        out = add(out, v)
        if out is None:
            return None
    return out


def _subst_atom(a, mapping):
    if isinstance(a, str):
        return mapping.get(a, a)
    if isinstance(a, FloorDiv):
        return floordiv(substitute(a.num, mapping), a.den)
    return _min_max(a.kind, tuple(substitute(x, mapping) for x in a.args))


def symbols(d) -> set[str]:
    """The symbols ``d`` mentions."""
    if isinstance(d, str):
        return {d}
    if not isinstance(d, DimExpr):
        return set()
    out: set[str] = set()
    for m, _ in d.terms:
        for a in m:
            if isinstance(a, str):
                out.add(a)
            elif isinstance(a, FloorDiv):
                out |= symbols(a.num)
            else:
                for x in a.args:
                    out |= symbols(x)
    return out


# -- text ------------------------------------------------------------------------------------


def _sym_text(s: str) -> str:
    return f'"{s}"' if s in KEYWORDS else s


def _atom_text(a) -> str:
    if isinstance(a, str):
        return _sym_text(a)
    if isinstance(a, FloorDiv):
        return f"({a})"  # a floordiv inside a product is parenthesised
    return str(a)


def _text(d, prec: int) -> str:
    """``d`` spelled for the expression grammar; ``prec`` 1 asks for an operand of
    ``floordiv`` (a sum or product is parenthesised)."""
    if isinstance(d, int):
        return str(d) if d >= 0 or prec == 0 else f"({d})"
    if isinstance(d, str):
        return _sym_text(d)
    # as people write polynomials: higher degree first, the constant last (4*H*W + H + 7)
    terms = sorted(d.terms, key=lambda t: (-len(t[0]), _mono_key(t[0])))
    parts = []
    for i, (m, c) in enumerate(terms):
        if m == ():
            body = str(abs(c))
        else:
            atoms = [_atom_text(a) for a in m]
            if len(m) == 1 and isinstance(m[0], FloorDiv) and abs(c) == 1 and (i or c == 1):
                atoms = [str(m[0])]  # a lone floordiv after '+'/'-' needs no parentheses
            body = "*".join(([str(abs(c))] if abs(c) != 1 else []) + atoms)
        parts.append(("-" if c < 0 else "+", body))
    text = ("-" if parts[0][0] == "-" else "") + parts[0][1]
    for sign, body in parts[1:]:
        text += f" {sign} {body}"
    lone_minmax = len(terms) == 1 and terms[0][1] == 1 and len(terms[0][0]) == 1 \
        and isinstance(terms[0][0][0], MinMax)
    return f"({text})" if prec == 1 and not lone_minmax else text


def dim_text(d) -> str:
    """A dim as a ``tensor<...>`` type spells it: an expression in parentheses."""
    return f"({_text(d, 0)})"


# The text grammar's parser lives beside this module (it builds with the functions above).
from pir.ir.dimexpr_parse import parse_dim_expr  # noqa: E402
