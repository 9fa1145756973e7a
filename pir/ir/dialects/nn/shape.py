"""Shape queries and generated tensors: shape, size, constant_of_shape, range, eye_like,
trilu, one_hot, and the ops whose result size depends on the data (non_zero, unique,
compress).

It also holds the symbolic shape arithmetic that the type rules of this family share:
:func:`shape_value` reads the value of a small integer tensor as a tuple of dims (ints,
symbols, ``None``) by looking through the ops that exported models use to compute shapes
(``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``), so that a reshape to a computed
shape keeps its symbolic dims.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

import numpy as np

from pir.errors import PirError
from pir.ir.attributes import BOOL, DTYPE, INT, TENSOR
from pir.ir.core import Operation, Value
from pir.ir.dialects.nn.base import INTS, NUMERIC
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import const_value, normalize_axis, tensor
from pir.ir.types import Dim, DType, TensorType

__all__ = ["shape_value", "dim_product", "const_ints", "rank_of"]

I64 = frozenset({DType.I64})
INDEX = frozenset({DType.I32, DType.I64})

# -- symbolic shape arithmetic -------------------------------------------------------------


def const_ints(v: Value | None) -> list[int] | None:
    """The elements of a constant integer operand as Python ints, else None."""
    arr = const_value(v)
    if arr is None or arr.dtype.kind not in "iu":
        return None
    return [int(x) for x in arr.reshape(-1)]


def rank_of(v: Value) -> int:
    """The rank of a tensor operand, which the rule needs to know."""
    t = tensor(v)
    if t.shape is None:
        raise PirError(f"the rank of {t} is unknown")
    return len(t.shape)


def dim_product(dims: Sequence[Dim]) -> Dim:
    """The product of dims: an int when all are static, the symbol when one symbol is
    multiplied by ones, else unknown (``None``)."""
    ints = [d for d in dims if isinstance(d, int)]
    rest = [d for d in dims if not isinstance(d, int)]
    n = math.prod(ints)
    if n == 0:
        return 0
    if not rest:
        return n
    if len(rest) == 1 and rest[0] is not None and n == 1:
        return rest[0]
    return None


def infer_dim(total: Sequence[Dim], known: Sequence[Dim]) -> Dim:
    """The dim ``d`` with ``prod(known) * d == prod(total)`` (a reshape's -1), cancelling
    symbols: ``(B, S, 768)`` reshaped to ``(B, -1, 768)`` gives ``S``."""
    if any(d is None for d in total) or any(d is None for d in known):
        return None
    left = Counter(d for d in total if isinstance(d, str))
    right = Counter(d for d in known if isinstance(d, str))
    if right - left:
        return None  # a symbol of the target that the input lacks
    syms = list((left - right).elements())
    num = math.prod(d for d in total if isinstance(d, int))
    den = math.prod(d for d in known if isinstance(d, int))
    if den == 0 or num % den:
        return None
    if not syms:
        return num // den
    return syms[0] if len(syms) == 1 and num == den else None


def _elements(v: Value) -> int | None:
    """The number of elements of a 0-d or 1-d tensor with a static length."""
    shape = tensor(v).shape
    if shape is None or len(shape) > 1:
        return None
    if not shape:
        return 1
    return shape[0] if isinstance(shape[0], int) else None


def _binary(name: str, a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        if name == "nn.add":
            return a + b
        if name == "nn.sub":
            return a - b
        if name == "nn.mul":
            return a * b
        return int(a / b) if b else None  # nn.div truncates toward zero
    if name == "nn.mul" and (a == 1 or b == 1):
        return b if a == 1 else a
    if name in ("nn.add", "nn.sub") and b == 0:
        return a
    if name == "nn.add" and a == 0:
        return b
    return None


def shape_value(v: Value | None, depth: int = 0) -> tuple[Dim, ...] | None:
    """The elements of a small integer tensor ``v`` (0-d or 1-d) as dims, when they can be
    known: constants give ints, ``nn.shape`` gives its input's (maybe symbolic) dims, and
    ops that move, pick or combine elements (concat, gather, slice, unsqueeze ...) pass them
    through.  Elements that are not known are ``None``; None when even the count is not."""
    if v is None or depth > 64:
        return None
    ints = const_ints(v)
    if ints is not None:
        return tuple(ints)
    op = getattr(v, "op", None)
    if op is None or not tensor(v).dtype.is_int:
        return None
    rule = _SHAPE_VALUE_RULES.get(op.name)
    out = rule(op, depth + 1) if rule is not None else None
    if out is None:
        n = _elements(v)
        return None if n is None else (None,) * n
    return out


def _sv_shape(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    shape = tensor(op.operands[0]).shape
    if shape is None:
        return None
    return tuple(shape[slice(*shape_slice(len(shape), op.start, op.end))])


def _sv_concat(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    parts = [shape_value(x, depth) for x in op.operands]
    if any(p is None for p in parts):
        return None
    return tuple(d for p in parts for d in p)


def _sv_same(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    return shape_value(op.operands[0], depth)  # reshapes keep the elements in order


def _sv_gather(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    data = shape_value(op.operands[0], depth)
    idx = const_ints(op.operands[1])
    if data is None or idx is None or op.attributes.get("axis", 0) not in (0, -1):
        return None
    try:
        return tuple(data[i] for i in idx)
    except IndexError:
        return None


def _sv_slice(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    data = shape_value(op.operands[0], depth)
    starts, ends = const_ints(op.starts), const_ints(op.ends)
    steps = const_ints(op.steps) if op.steps is not None else [1]
    if data is None or starts is None or ends is None or steps is None or len(starts) != 1:
        return None
    return tuple(data[slice(starts[0], ends[0], steps[0])])


def _sv_binary(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    a, b = shape_value(op.operands[0], depth), shape_value(op.operands[1], depth)
    if a is None or b is None or (len(a) != len(b) and 1 not in (len(a), len(b))):
        return None
    n = max(len(a), len(b))
    a, b = (a * n if len(a) == 1 else a), (b * n if len(b) == 1 else b)
    return tuple(_binary(op.name, x, y) for x, y in zip(a, b))


_SHAPE_VALUE_RULES = {
    "nn.shape": _sv_shape,
    "nn.concat": _sv_concat,
    "nn.unsqueeze": _sv_same,
    "nn.squeeze": _sv_same,
    "nn.reshape": _sv_same,
    "nn.flatten": _sv_same,
    "nn.cast": _sv_same,
    "nn.gather": _sv_gather,
    "nn.slice": _sv_slice,
    "nn.add": _sv_binary,
    "nn.sub": _sv_binary,
    "nn.mul": _sv_binary,
    "nn.div": _sv_binary,
}


def shape_slice(rank: int, start: int, end: int | None) -> tuple[int, int]:
    """The dims [start, end) that ``nn.shape`` returns, clamped as ONNX does."""
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = rank if end is None else end
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return start, max(start, end)


def shape_operand(v: Value, what: str) -> tuple[Dim, ...] | None:
    """A 1-d shape operand's elements as dims (None where unknown); None when its length
    is unknown."""
    t = tensor(v)
    if t.shape is not None and len(t.shape) != 1:
        raise PirError(f"{what} must be a 1-d tensor, got {t}")
    return shape_value(v)


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
        dtype = DType.from_numpy(fill.dtype)
        if dims is None:
            return [TensorType(dtype, None)]
        if any(isinstance(d, int) and d < 0 for d in dims):
            raise PirError(f"shape {list(dims)} has a negative dim")
        return [TensorType(dtype, dims)]


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
        return [TensorType(ts[0].dtype, (n,))]


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
