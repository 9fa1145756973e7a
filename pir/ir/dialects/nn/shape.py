"""Shape queries and generated tensors: shape, size, constant_of_shape, range, eye_like,
trilu, one_hot, and the ops whose result size depends on the data (non_zero, unique,
compress).  The symbolic shape arithmetic their rules share is in
:mod:`pir.ir.dialects.nn.symbolic`.
"""

from __future__ import annotations

import math

import numpy as np

from pir.errors import PirError
from pir.ir import dimexpr as de
from pir.ir.attributes import BOOL, DTYPE, INT, TENSOR
from pir.ir.core import Operation
from pir.ir.dialects.nn.base import NUMERIC
from pir.ir.dialects.nn.symbolic import I64, shape_operand, shape_slice, shape_value
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import const_value, normalize_axis, tensor
from pir.ir.types import Dim, DType, TensorType

# -- shape queries ---------------------------------------------------------------------------


class Shape(Operation):
    """shape = the dims [start, end) of data's shape, as an i64 vector."""

    name = "nn.shape"
    traits = frozenset({Pure})
    data = operand()
    start = attr(INT, 0)
    end = attr(INT, None)
    shape = result()

    def infer(self):
        shape = tensor(self.data).shape
        if shape is None:
            return [TensorType(DType.I64, (None,))]
        start, end = shape_slice(len(shape), self.start, self.end)
        return [TensorType(DType.I64, (end - start,))]


class Size(Operation):
    """size = the number of elements of data, as an i64 scalar."""

    name = "nn.size"
    traits = frozenset({Pure})
    data = operand()
    size = result()

    def infer(self):
        return [TensorType(DType.I64, ())]


# -- generated tensors -----------------------------------------------------------------------


class ConstantOfShape(Operation):
    """output = a tensor of the given shape filled with ``value`` (one element; f32 0 when
    absent)."""

    name = "nn.constant_of_shape"
    traits = frozenset({Pure})
    input = operand(dtypes=I64)
    value = attr(TENSOR, None)
    output = result()

    def fill(self) -> np.ndarray:
        from pir.ir.attributes import DenseAttr

        if self.value is None:
            return np.zeros(1, np.float32)
        if not isinstance(self.value, DenseAttr):
            raise PirError("value must be an inline one-element tensor")
        return self.value.array

    def infer(self):
        fill = self.fill()
        if fill.size != 1:
            raise PirError(f"value must hold one element, it holds {fill.size}")
        dims = shape_operand(self.input, "the shape")
        return [TensorType(DType.from_numpy(fill.dtype), dims)]


class Range(Operation):
    """output = [start, start + delta, ...] up to limit (exclusive); scalars in, a vector out.
    f16/bf16 ranges are computed in ``stash_type``."""

    name = "nn.range"
    traits = frozenset({Pure})
    start = operand(dtypes=NUMERIC)
    limit = operand(dtypes=NUMERIC)
    delta = operand(dtypes=NUMERIC)
    stash_type = attr(DTYPE, DType.F32)
    output = result()

    def infer(self):
        ts = [tensor(v) for v in (self.start, self.limit, self.delta)]
        for t in ts:
            if t.shape is not None and t.shape != ():
                raise PirError(f"start, limit and delta must be scalars, got {t}")
        if len({t.dtype for t in ts}) != 1:
            raise PirError("start, limit and delta must have one element type")
        vals = [const_value(v) for v in (self.start, self.limit, self.delta)]
        n = None
        if all(x is not None for x in vals):
            start, limit, delta = (float(x) for x in vals)
            if delta == 0:
                raise PirError("delta must not be zero")
            n = max(math.ceil((limit - start) / delta), 0)
        elif ts[0].dtype.is_int:
            n = _range_length(*(shape_value(v) for v in (self.start, self.limit, self.delta)))
        return [TensorType(ts[0].dtype, (n,))]


def _range_length(start, limit, delta) -> Dim:
    """max(ceil((limit - start) / delta), 0) for integer bounds read from shapes
    (``range(0, S, 1)`` has ``S`` elements: position ids of a sequence); the step must be a
    constant.  The clamp at 0 is left out where the length is known to be >= 0."""
    if any(v is None or len(v) != 1 for v in (start, limit, delta)):
        return None
    (start,), (limit,), (delta,) = start, limit, delta
    if not isinstance(delta, int) or delta == 0:
        if delta == 0:
            raise PirError("delta must not be zero")
        return None
    span = de.sub(limit, start) if delta > 0 else de.sub(start, limit)
    return de.maximum(de.ceildiv(span, abs(delta)), 0)


class EyeLike(Operation):
    """output = a 2-d tensor shaped like input with ones on diagonal k and zeros elsewhere,
    of element type ``dtype`` (input's when absent)."""

    name = "nn.eye_like"
    traits = frozenset({Pure})
    input = operand()
    dtype = attr(DTYPE, None)
    k = attr(INT, 0)
    output = result()

    def infer(self):
        t = tensor(self.input)
        if t.shape is not None and len(t.shape) != 2:
            raise PirError(f"input must be 2-d, got {t}")
        return [TensorType(self.dtype or t.dtype, t.shape if t.shape is not None else (None,) * 2)]


class Trilu(Operation):
    """output = the upper (or lower) triangle of the last two dims, from diagonal k on."""

    name = "nn.trilu"
    traits = frozenset({Pure})
    input = operand()
    k = operand(optional=True, dtypes=I64)
    upper = attr(BOOL, True)
    output = result()

    def infer(self):
        t = tensor(self.input)
        if t.shape is not None and len(t.shape) < 2:
            raise PirError(f"input must have rank >= 2, got {t}")
        return [t]


class OneHot(Operation):
    """output = values[1] where index == position along a new axis of size depth, else
    values[0] (negative indices count from depth)."""

    name = "nn.one_hot"
    traits = frozenset({Pure})
    indices = operand(dtypes=NUMERIC)
    depth = operand(dtypes=NUMERIC)
    values = operand()
    axis = attr(INT, -1)
    output = result()

    def infer(self):
        ti, tv = tensor(self.indices), tensor(self.values)
        if tv.shape is not None and tv.shape not in ((2,), (None,)):
            raise PirError(f"values must be a vector of two elements, got {tv}")
        depth = const_value(self.depth)
        n = None if depth is None else int(depth.reshape(-1)[0])
        if depth is None and tensor(self.depth).dtype.is_int:
            computed = shape_value(self.depth)  # a depth read from a shape
            n = computed[0] if computed is not None and len(computed) == 1 else None
        if isinstance(n, int) and n < 1:
            raise PirError(f"depth must be positive, got {n}")
        if ti.shape is None:
            return [TensorType(tv.dtype, None)]
        axis = normalize_axis(self.axis, len(ti.shape) + 1)
        shape = list(ti.shape)
        shape.insert(axis, n)
        return [TensorType(tv.dtype, tuple(shape))]


# -- data-dependent sizes ----------------------------------------------------------------------


class NonZero(Operation):
    """y = the indices of the non-zero elements of x, one column per element (rank x n)."""

    name = "nn.non_zero"
    traits = frozenset({Pure})
    x = operand()
    y = result()

    def infer(self):
        shape = tensor(self.x).shape
        return [TensorType(DType.I64, (None if shape is None else len(shape), None))]


class Unique(Operation):
    """y = the unique elements (or slices along ``axis``) of x, sorted or in order of first
    occurrence; with the index of each first occurrence, the inverse map and the counts."""

    name = "nn.unique"
    traits = frozenset({Pure})
    x = operand()
    axis = attr(INT, None)
    sorted = attr(BOOL, True)
    y = result()
    indices = result()
    inverse_indices = result()
    counts = result()

    def infer(self):
        t = tensor(self.x)
        if self.axis is None:
            y = TensorType(t.dtype, (None,))
            n = t.numel
        elif t.shape is None:
            y, n = TensorType(t.dtype, None), None
        else:
            axis = normalize_axis(self.axis, len(t.shape))
            y = t.with_shape(t.shape[:axis] + (None,) + t.shape[axis + 1:])
            n = t.shape[axis]
        vec = TensorType(DType.I64, (None,))
        return [y, vec, TensorType(DType.I64, (n,)), vec]


class Compress(Operation):
    """output = the slices of input along ``axis`` (of the flattened input when absent)
    whose condition is true."""

    name = "nn.compress"
    traits = frozenset({Pure})
    input = operand()
    condition = operand(dtypes=frozenset({DType.BOOL}))
    axis = attr(INT, None)
    output = result()

    def infer(self):
        t, tc = tensor(self.input), tensor(self.condition)
        if tc.shape is not None and len(tc.shape) != 1:
            raise PirError(f"condition must be 1-d, got {tc}")
        cond = const_value(self.condition)
        n = None if cond is None else int(np.count_nonzero(cond))
        if self.axis is None:
            return [t.with_shape((n,))]
        if t.shape is None:
            return [t]
        axis = normalize_axis(self.axis, len(t.shape))
        return [t.with_shape(t.shape[:axis] + (n,) + t.shape[axis + 1:])]
