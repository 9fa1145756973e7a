"""Reductions: reduce_sum/max/min/prod over explicit axes, argmax/argmin, cumsum.

Axes are explicit, distinct and non-negative; an empty ``axes`` reduces nothing (unlike ONNX,
where it means "all axes": the decomposition spells the axes out).  Reducing an empty axis
gives the reduction's identity: 0, 1, -inf / the smallest integer (max), +inf / the largest
integer (min).
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import BOOL, INT, INTS
from pir.ir.dialects.prim.base import NUMERIC, PrimOp, check_axes, check_axis, operand_type
from pir.ir.opdef import Pure, Reduction, attr, operand, result
from pir.ir.types import Dim, DType, TensorType

__all__ = ["ReduceOp", "ReduceSumOp", "ReduceMaxOp", "ReduceMinOp", "ReduceProdOp",
           "ArgReduceOp", "ArgmaxOp", "ArgminOp", "CumsumOp"]


def _reduced(shape: tuple[Dim, ...] | None, axes: tuple[int, ...], keepdims: bool):
    if shape is None:
        return None
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class ReduceOp(PrimOp):
    """out = the reduction of x over ``axes``; reduced dims are dropped, or kept as 1 with
    ``keepdims``."""

    traits = frozenset({Pure, Reduction})
    x = operand(dtypes=NUMERIC)
    axes = attr(INTS)
    keepdims = attr(BOOL, False)
    out = result()

    def infer(self):
        t = operand_type(self.x, "x")
        axes = check_axes(self.axes, t.rank)
        return [t.with_shape(_reduced(t.shape, axes, self.keepdims))]


class ReduceSumOp(ReduceOp):
    """out = the sum of x over ``axes`` (floats narrower than f32 accumulate in f32)."""

    name = "prim.reduce_sum"


class ReduceProdOp(ReduceOp):
    """out = the product of x over ``axes``."""

    name = "prim.reduce_prod"


class ReduceMaxOp(ReduceOp):
    """out = the maximum of x over ``axes`` (NaN if any reduced element is NaN)."""

    name = "prim.reduce_max"


class ReduceMinOp(ReduceOp):
    """out = the minimum of x over ``axes`` (NaN if any reduced element is NaN)."""

    name = "prim.reduce_min"


class ArgReduceOp(PrimOp):
    """out = the i64 index along ``axis`` of the extreme element of x; ties give the first
    index, or the last with ``select_last_index``; NaN counts as the extreme.  The axis must
    not be empty."""

    traits = frozenset({Pure, Reduction})
    x = operand(dtypes=NUMERIC)
    axis = attr(INT)
    keepdims = attr(BOOL, False)
    select_last_index = attr(BOOL, False)
    out = result()

    def infer(self):
        t = operand_type(self.x, "x")
        check_axis(self.axis, t.rank)
        if t.shape is not None and t.shape[self.axis] == 0:
            raise PirError(f"axis {self.axis} is empty: there is no extreme element")
        return [TensorType(DType.I64, _reduced(t.shape, (self.axis,), self.keepdims))]


class ArgmaxOp(ArgReduceOp):
    """out = the index of the largest element of x along ``axis`` (i64)."""

    name = "prim.argmax"


class ArgminOp(ArgReduceOp):
    """out = the index of the smallest element of x along ``axis`` (i64)."""

    name = "prim.argmin"


class CumsumOp(PrimOp):
    """out = the running sum of x along ``axis``: out[..., i, ...] = sum of x[..., j, ...]
    for j <= i (j < i with ``exclusive``; j >= i, or j > i, with ``reverse``).  Same type as
    x.  A primitive because no other prim computes a scan."""

    name = "prim.cumsum"
    traits = frozenset({Pure})
    x = operand(dtypes=NUMERIC)
    axis = attr(INT)
    exclusive = attr(BOOL, False)
    reverse = attr(BOOL, False)
    out = result()

    def infer(self):
        t = operand_type(self.x, "x")
        check_axis(self.axis, t.rank)
        return [t]
