"""Reductions over axes, arg-reductions, cumulative scans and top-k.

Every ``nn.reduce_*`` op has ONNX's newest (opset 18) shape: the axes are an optional i64
operand (absent or empty: all axes, or with ``noop_with_empty_axes`` none at all, which leaves
only the elementwise steps, such as ReduceSumSquare's square), and ``keepdims`` keeps reduced
axes as size-1 dims.  Reducing an empty set gives the reduction's
identity (0 for sums, 1 for products, -inf/+inf or the dtype's extreme for max/min).
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.core import Operation
from pir.ir.dialects.nn.base import NUMERIC
from pir.ir.dialects.nn.symbolic import shape_value
from pir.ir.opdef import Pure, Reduction, attr, operand, result
from pir.ir.attributes import BOOL, INT
from pir.ir.typerules import const_value, normalize_axis, reduce_shape, tensor
from pir.ir.types import DType, TensorType

__all__ = [
    "ReduceOp", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
    "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
    "CumSum", "CumProd", "TopK",
]

_I64 = frozenset({DType.I64})
_AXIS_INTS = frozenset({DType.I32, DType.I64})


class ReduceOp(Operation):
    """reduced = f(data) over ``axes`` (when absent or empty: all axes, or none with
    ``noop_with_empty_axes``)."""

    traits = frozenset({Pure, Reduction})
    data = operand(dtypes=NUMERIC)
    axes = operand(optional=True, dtypes=_I64)
    keepdims = attr(BOOL, True)
    noop_with_empty_axes = attr(BOOL, False)
    reduced = result()

    def verify_(self) -> None:
        if self.axes is not None:
            shape = tensor(self.axes).shape
            if shape is not None and len(shape) != 1:
                raise PirError(f"axes must be a 1-D tensor, got rank {len(shape)}")

    def infer(self):
        t = tensor(self.data)
        return [TensorType(t.dtype, self._shape(t.shape))]

    def _shape(self, shape):
        axes = None if self.axes is None else const_value(self.axes)
        if self.axes is None or axes is not None:
            if (axes is None or axes.size == 0) and self.noop_with_empty_axes:
                return shape  # no axes to reduce: elementwise
            listed = None if axes is None else [int(a) for a in axes.reshape(-1)]
            return reduce_shape(shape, listed, self.keepdims)
        # The axes are only known at run time: the rank may still be.
        if shape is None:
            return None
        count = (tensor(self.axes).shape or (None,))[0]
        if count == 0:
            return shape if self.noop_with_empty_axes else reduce_shape(shape, None, self.keepdims)
        if self.keepdims:
            return tuple(1 if d == 1 else None for d in shape)
        if isinstance(count, int):
            return (None,) * (len(shape) - count)
        return None


class ReduceSum(ReduceOp):
    """reduced = sum(data) over axes."""

    name = "nn.reduce_sum"


class ReduceMean(ReduceOp):
    """reduced = mean(data) over axes."""

    name = "nn.reduce_mean"


class ReduceMax(ReduceOp):
    """reduced = max(data) over axes (booleans allowed: logical or)."""

    name = "nn.reduce_max"
    data = operand(dtypes=NUMERIC | {DType.BOOL})


class ReduceMin(ReduceOp):
    """reduced = min(data) over axes (booleans allowed: logical and)."""

    name = "nn.reduce_min"
    data = operand(dtypes=NUMERIC | {DType.BOOL})


class ReduceProd(ReduceOp):
    """reduced = prod(data) over axes."""

    name = "nn.reduce_prod"


class ReduceL1(ReduceOp):
    """reduced = sum(|data|) over axes."""

    name = "nn.reduce_l1"


class ReduceL2(ReduceOp):
    """reduced = sqrt(sum(data^2)) over axes."""

    name = "nn.reduce_l2"


class ReduceLogSum(ReduceOp):
    """reduced = log(sum(data)) over axes."""

    name = "nn.reduce_log_sum"


class ReduceLogSumExp(ReduceOp):
    """reduced = log(sum(exp(data))) over axes."""

    name = "nn.reduce_log_sum_exp"


class ReduceSumSquare(ReduceOp):
    """reduced = sum(data^2) over axes."""

    name = "nn.reduce_sum_square"


class ArgOp(Operation):
    """reduced = index of the extreme element of data along ``axis`` (i64)."""

    traits = frozenset({Pure, Reduction})
    data = operand(dtypes=NUMERIC)
    axis = attr(INT, 0)
    keepdims = attr(BOOL, True)
    select_last_index = attr(BOOL, False)
    reduced = result()

    def infer(self):
        t = tensor(self.data)
        return [TensorType(DType.I64, reduce_shape(t.shape, [self.axis], self.keepdims))]


class ArgMax(ArgOp):
    """reduced = argmax(data) along axis (first or last of equal maxima)."""

    name = "nn.arg_max"


class ArgMin(ArgOp):
    """reduced = argmin(data) along axis (first or last of equal minima)."""

    name = "nn.arg_min"


class ScanOp(Operation):
    """y = cumulative f of x along the 0-D ``axis`` operand; ``exclusive`` leaves out the
    element itself, ``reverse`` scans from the end."""

    traits = frozenset({Pure})
    x = operand(dtypes=NUMERIC)
    axis = operand(dtypes=_AXIS_INTS)
    exclusive = attr(BOOL, False)
    reverse = attr(BOOL, False)
    y = result()

    def verify_(self) -> None:
        shape = tensor(self.axis).shape
        if shape is not None and len(shape) > 1:  # ONNX says 0-D; a 1-element 1-D also occurs
            raise PirError(f"axis must be a scalar, got rank {len(shape)}")
        axis, rank = const_value(self.axis), tensor(self.x).rank
        if axis is not None and rank is not None:
            normalize_axis(int(axis.reshape(-1)[0]), rank)

    def infer(self):
        return [tensor(self.x)]


class CumSum(ScanOp):
    """y = cumulative sum of x along axis."""

    name = "nn.cum_sum"


class CumProd(ScanOp):
    """y = cumulative product of x along axis."""

    name = "nn.cum_prod"


class TopK(Operation):
    """values, indices = the k largest (or smallest) elements of x along ``axis``; equal
    values keep their original order (the lower index first)."""

    name = "nn.top_k"
    traits = frozenset({Pure})
    x = operand(dtypes=NUMERIC)
    k = operand(dtypes=_I64)
    axis = attr(INT, -1)
    largest = attr(BOOL, True)
    sorted = attr(BOOL, True)
    values = result()
    indices = result()

    def infer(self):
        t = tensor(self.x)
        if t.shape is None:
            return [t, TensorType(DType.I64, None)]
        axis = normalize_axis(self.axis, len(t.shape))
        k = const_value(self.k)
        size = None
        if k is not None:
            size = int(k.reshape(-1)[0])
            dim = t.shape[axis]
            if size < 0 or (isinstance(dim, int) and size > dim):
                raise PirError(f"k = {size} is out of range for a dim of size {dim}")
        else:  # k read from a shape (exporters clamp it: min(S, k))
            computed = shape_value(self.k)
            size = computed[0] if computed is not None and len(computed) == 1 else None
        shape = t.shape[:axis] + (size,) + t.shape[axis + 1:]
        return [TensorType(t.dtype, shape), TensorType(DType.I64, shape)]
