"""Shared pieces of the prim dialect: the op base class, dtype sets and strict shape checks.

Prim ops are stricter than nn ops: no implicit broadcasting, no negative axes, no implicit
type promotion.  Their type rules raise :class:`PirError` (without the op name: the verifier
and :meth:`PrimOp.build` put the op and its location in front) on anything malformed.

Dims compare strictly: two static dims must be equal, two symbols must have the same name, and
a static dim never matches a symbol (``B`` is not known to be 4), and expressions compare by
their canonical form (``2*(H + 1)`` is ``2*H + 2``).  An unknown dim (``None``) matches
anything; the merged dim keeps whatever is known.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from pir.errors import PirError
from pir.ir.core import Operation, Value
from pir.ir.dimexpr import DimExpr, dim_text
from pir.ir.types import Dim, DType, TensorType
from pir.ir.verifier import verify_op

__all__ = [
    "PrimOp",
    "DeclaredResultOp",
    "FLOAT",
    "INT",
    "SIGNED",
    "NUMERIC",
    "BITS",
    "ANY",
    "operand_type",
    "same_dtype",
    "merge_dim",
    "merge_shapes",
    "check_axes",
    "check_axis",
    "check_shape_fits",
    "show",
]

FLOAT = frozenset(d for d in DType if d.is_float)
INT = frozenset(d for d in DType if d.is_int)
SIGNED = frozenset({DType.I2, DType.I4, DType.I8, DType.I16, DType.I32, DType.I64}) | FLOAT
NUMERIC = FLOAT | INT
BITS = INT | {DType.BOOL}  # what bitwise/logical ops accept
ANY = frozenset(d for d in DType if d is not DType.STRING)


def show(shape: Sequence[Dim] | None) -> str:
    """A shape as the IR prints it inside tensor<...>: [Bx4], [?x3], [] for a scalar."""
    if shape is None:
        return "[*]"
    return "[" + "x".join("?" if d is None else dim_text(d) if isinstance(d, DimExpr) else str(d)
                          for d in shape) + "]"


class PrimOp(Operation):
    """Base of every prim op.

    ``build`` checks the new op at once (counts, element types, attributes and the type rule,
    declared result types included), so a malformed prim op never gets into a block.
    """

    @classmethod
    def build(cls, *operands, result_types=None, loc=None, **kwargs):
        try:
            for key, adef in cls.signature.attrs.items():  # before the type rule reads them
                if adef.required and kwargs.get(key) is None:
                    raise PirError(f"missing required attribute '{key}'")
            op = super().build(*operands, result_types=result_types, loc=loc, **kwargs)
            # An op whose result types its rule computed, or whose rule just checked the
            # declared ones, need not run that rule again in the verifier.
            ruled = result_types is None
            if not ruled and isinstance(op, DeclaredResultOp):
                op.infer()
                ruled = True
        except PirError as e:
            if e.message.startswith(cls.name):
                raise
            where = f'{cls.name} "{loc}"' if loc else cls.name
            raise PirError(f"{where}: {e.message}") from None
        verify_op(op, types_inferred=ruled)
        return op


class DeclaredResultOp(PrimOp):
    """An op whose result shape (and, for iota and random, element type) is read from its
    declared result type, because attributes cannot hold symbolic dims: build it with
    ``result_types=[TensorType(...)]``.  The type rule checks that the declared type fits the
    operands and returns it."""

    def declared(self, index: int = 0) -> TensorType:
        if len(self.results) <= index:
            raise PirError("the result type must be given (build with result_types=[...]): "
                           "this op takes its result shape from it")
        t = self.results[index].type
        if not isinstance(t, TensorType) or t.shape is None:
            raise PirError(f"the result type must be a ranked tensor, got {t}")
        return t


def operand_type(v: Value, what: str) -> TensorType:
    t = v.type
    if not isinstance(t, TensorType):
        raise PirError(f"{what} must be a tensor, got {t}")
    return t


def same_dtype(values: Iterable[tuple[str, Value]]) -> DType:
    """The one element type of the named operands; raises if they differ."""
    pairs = [(n, operand_type(v, n)) for n, v in values]
    first_name, first = pairs[0]
    for n, t in pairs[1:]:
        if t.dtype != first.dtype:
            raise PirError(f"operands must have one element type: {first_name} is "
                           f"{first.dtype.value}, {n} is {t.dtype.value}")
    return first.dtype


def merge_dim(a: Dim, b: Dim) -> Dim:
    """The dim both ``a`` and ``b`` describe; raises when they cannot be the same size."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise PirError(f"dims {a} and {b} differ")


def merge_shapes(named: Sequence[tuple[str, TensorType]]) -> tuple[Dim, ...] | None:
    """The common shape of tensors that must have the same shape (elementwise operands)."""
    out: tuple[Dim, ...] | None = None
    first = None
    for name, t in named:
        if t.shape is None:
            continue
        if out is None:
            out, first = t.shape, (name, t)
            continue
        if len(out) != len(t.shape):
            raise PirError(f"operands must have the same shape: {first[0]} is "
                           f"{show(first[1].shape)}, {name} is {show(t.shape)}")
        try:
            out = tuple(merge_dim(a, b) for a, b in zip(out, t.shape))
        except PirError:
            raise PirError(f"operands must have the same shape: {first[0]} is "
                           f"{show(first[1].shape)}, {name} is {show(t.shape)} (broadcast "
                           "explicitly with prim.broadcast_in_dim)") from None
    return out


def check_axis(axis: int, rank: int | None, what: str = "axis") -> int:
    """A non-negative axis below ``rank`` (prim ops take no negative axes)."""
    if axis < 0 or (rank is not None and axis >= rank):
        bound = f"[0, {rank})" if rank is not None else "non-negative"
        raise PirError(f"{what} {axis} is out of range {bound}")
    return axis


def check_axes(axes: Sequence[int], rank: int | None, what: str = "axes") -> tuple[int, ...]:
    """Distinct non-negative axes below ``rank``."""
    for a in axes:
        check_axis(a, rank, f"{what} entry")
    if len(set(axes)) != len(axes):
        raise PirError(f"{what} {list(axes)} has repeated entries")
    return tuple(axes)


def check_shape_fits(declared: Sequence[Dim], inferred: Sequence[Dim], what: str) -> None:
    """Raise unless each declared dim can be the inferred one (symbols by name)."""
    if len(declared) != len(inferred):
        raise PirError(f"{what}: rank {len(declared)} where {len(inferred)} is expected")
    for i, (d, e) in enumerate(zip(declared, inferred)):
        try:
            merge_dim(d, e)
        except PirError:
            raise PirError(f"{what}: dim {i} is {d}, expected {e}") from None
