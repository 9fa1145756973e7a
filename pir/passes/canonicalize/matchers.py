"""What the canonicalization patterns share: constraints (``where=`` functions of a DRR match)
and result builders.

The constraints are where the care goes: a rewrite is only correct when the replacement has
the same value *at run time*, and a type with unknown dims (``?``) proves less than it seems
(``tensor<?x3xf32>`` may be 1x3 while a broadcast makes it 4x3).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pir.errors import PirError
from pir.ir.core import OPS, Operation, Value
from pir.ir.dialects.builtin import enclosing_module, make_constant
from pir.ir.typerules import const_value
from pir.ir.types import DType, TensorType
from pir.ir.verifier import types_compatible
from pir.passes.drr import Match
from pir.passes.rewriter import RewritePattern, Rewriter

__all__ = ["splat", "splat_is", "is_int", "fits_in", "same_shape", "known_dims", "rebuild",
           "zeros", "const_ints", "operand_of", "OneOf", "RESHAPE_LIKE", "exact_in",
           "producer", "derived_name"]

Where = Callable[[Match], bool]


def producer(v: Value, name: str) -> Operation | None:
    """The op named ``name`` that makes ``v`` (None for another op or a block argument)."""
    owner = getattr(v, "op", None)
    return owner if owner is not None and owner.name == name else None


def derived_name(op: Operation, k: int) -> str | None:
    """The name of the ``k``-th value a rewrite of ``op`` makes: ``<op's name>.k`` (None when
    ``op``'s result has no name)."""
    base = op.results[0].name
    return f"{base}.{k}" if base else None

#: Ops that keep the elements in row-major order and only change the shape.
RESHAPE_LIKE = ("nn.reshape", "nn.squeeze", "nn.unsqueeze", "nn.flatten", "prim.reshape")

#: Broadcasts: a splat stays a splat through them.
_BROADCASTS = ("prim.broadcast_in_dim", "nn.expand")


def splat(v: Value) -> Any:
    """The one value every element of ``v`` holds, when ``v`` is a constant (or a broadcast
    of one) whose elements are all equal; else None.  NaN is never a splat."""
    owner = getattr(v, "op", None)
    while owner is not None and owner.name in _BROADCASTS:
        v = owner.operands[0]
        owner = getattr(v, "op", None)
    arr = const_value(v)
    if arr is None or arr.size == 0 or arr.dtype == object:
        return None
    first = arr.flat[0]
    return first.item() if np.all(arr == first) else None


def splat_is(name: str, value: int | float) -> Where:
    """The operand bound to ``name`` is a splat of ``value``."""

    def check(m: Match) -> bool:
        s = splat(m[name])
        return s is not None and not isinstance(s, bool) and s == value

    return check


def _tensor(v: Value) -> TensorType | None:
    return v.type if isinstance(v.type, TensorType) else None


def is_int(name: str) -> Where:
    """The value bound to ``name`` has an integer element type: x*0 = 0 and x-x = 0 hold for
    integers, not floats (NaN*0 and inf-inf are NaN)."""
    return lambda m: (t := _tensor(m[name])) is not None and t.dtype.is_int


def fits_in(small: str, big: str) -> Where:
    """Broadcasting ``small`` against ``big`` provably gives ``big``'s shape: every dim of
    ``small`` (right-aligned) is 1 or equal to a known dim of ``big``.  Type equality of the
    result is not enough: with an unknown dim, ``?x3 + 4x3`` may broadcast ``?`` = 1 to 4."""

    def check(m: Match) -> bool:
        s, b = _tensor(m[small]), _tensor(m[big])
        if s is None or b is None or s.shape is None or b.shape is None:
            return False
        if len(s.shape) > len(b.shape):
            return False
        tail = b.shape[len(b.shape) - len(s.shape):]
        return all(d == 1 or (d is not None and d == e) for d, e in zip(s.shape, tail))

    return check


def same_shape(a: TensorType | None, b: TensorType | None) -> bool:
    """Values of types ``a`` and ``b`` with the same number of elements surely have the same
    shape: equal ranks and equal dims, of which at most one is unknown (the element count
    fixes it).  What a reshape-like op needs to be a no-op."""
    if a is None or b is None or a.shape is None or a != b:
        return False
    return sum(d is None for d in a.shape) <= 1


def known_dims(t: TensorType | None) -> bool:
    return t is not None and t.shape is not None and all(d is not None for d in t.shape)


def rebuild(name: str, *operands: str, **attrs: Any) -> Callable[[Match, Rewriter, Operation], Value | None]:
    """A DRR result: op ``name`` on the bound ``operands``, with the replaced op's result type
    (type rules may infer a less precise one, e.g. a ``?`` where the source had a symbol).
    Attribute values are constants or functions of the match.  As a safety net, no rewrite
    when the new op's type rule contradicts that type."""

    def build(m: Match, rw: Rewriter, root: Operation) -> Value | None:
        cls = OPS[name]
        values = {k: (v(m) if callable(v) else v) for k, v in attrs.items()}
        values = {k: v for k, v in values.items()  # defaults are not printed: leave them out
                  if v != getattr(cls.signature.attrs.get(k), "default", None)}
        want = root.results[0].type
        try:
            op = cls.build(*(m[o] for o in operands), result_types=[want], loc=root.loc,
                           **values)
            if not types_compatible(want, op.infer()[0]):
                return None
        except PirError:
            return None
        return rw.insert(op, root).results[0]

    return build


def zeros(m: Match, rw: Rewriter, root: Operation) -> Value | None:
    """A zero of the root's result type: the root's own zero operand when it has that type,
    ``broadcast_in_dim`` of a scalar for prim (symbolic dims allowed), a splat constant for
    nn when the shape is static; None (no rewrite) otherwise."""
    t = root.results[0].type
    for v in root.operands:
        if v.type == t and known_dims(t) and splat(v) == 0:
            return v
    if not known_dims(t):
        return None
    module = enclosing_module(root)
    if root.name.startswith("prim."):
        name = f"{root.results[0].name}.zero" if root.results[0].name else None
        scalar = rw.insert(make_constant(module, np.zeros((), t.dtype.numpy), name),
                           root).results[0]
        if not t.shape:
            return scalar
        return rw.value(OPS["prim.broadcast_in_dim"], scalar, before=root, result_types=[t],
                        broadcast_dimensions=())
    if not all(isinstance(d, int) for d in t.shape):
        return None
    return rw.insert(make_constant(module, np.zeros(t.shape, t.dtype.numpy)), root).results[0]


def const_ints(v: Value | None) -> list[int] | None:
    """The integers a constant 1-D (or scalar) operand holds; None when not a constant."""
    arr = const_value(v)
    if arr is None or arr.dtype.kind not in "iu":
        return None
    return [int(i) for i in arr.reshape(-1)]


def operand_of(index: int) -> Callable[[Match, Rewriter, Operation], Value]:
    """A DRR result: operand ``index`` of the replaced op (for sources matched by name only,
    such as ops with optional operands)."""
    return lambda m, rw, root: root.operands[index]


class OneOf(RewritePattern):
    """Several patterns under one name: a rewrite with several source shapes (a squeeze of
    an unsqueeze, an unsqueeze of a squeeze ...) that ``disable=`` switches off as one."""

    def __init__(self, name: str, *patterns: RewritePattern):
        self.name = name
        roots = {p.root for p in patterns}
        self.root = roots.pop() if len(roots) == 1 else None
        self.by_root: dict[str | None, list[RewritePattern]] = {}
        for p in patterns:
            self.by_root.setdefault(p.root, []).append(p)

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:
        return any(p.match_and_rewrite(op, rewriter) for p in self.by_root.get(op.name, ()))

    def __repr__(self) -> str:
        return f"<one-of {self.name}>"


# -- exact conversions -----------------------------------------------------------------------

_SIGNED = {DType.I8: 8, DType.I16: 16, DType.I32: 32, DType.I64: 64}
_UNSIGNED = {DType.U8: 8, DType.U16: 16, DType.U32: 32, DType.U64: 64}
#: Significand bits (with the implicit one) and exponent bits of the IEEE-like floats.
_FLOAT = {DType.F16: (11, 5), DType.BF16: (8, 8), DType.F32: (24, 8), DType.F64: (53, 11)}


def exact_in(src: DType, mid: DType) -> bool:
    """Every value of ``src`` is exactly a value of ``mid``, so casting through ``mid`` loses
    nothing: cast(cast(x, mid), to) = cast(x, to)."""
    if src == mid or src == DType.BOOL:
        return src == mid or mid in _SIGNED or mid in _UNSIGNED or mid in _FLOAT
    if src in _FLOAT:
        if mid not in _FLOAT:
            return False
        (sm, se), (mm, me) = _FLOAT[src], _FLOAT[mid]
        return mm >= sm and me >= se
    if src in _SIGNED:
        bits = _SIGNED[src]
        return (_SIGNED.get(mid, 0) >= bits
                or (mid in _FLOAT and _FLOAT[mid][0] >= bits - 1))
    if src in _UNSIGNED:
        bits = _UNSIGNED[src]
        return (_UNSIGNED.get(mid, 0) >= bits or _SIGNED.get(mid, 0) > bits
                or (mid in _FLOAT and _FLOAT[mid][0] >= bits))
    return False
