"""Decomposition rules for shape queries and generated tensors (pir/ir/dialects/nn/shape.py):
shape, size, constant_of_shape, range, eye_like, trilu, one_hot; and the ops that stay nn ops
(data-dependent sizes, and the sampling ops of pir/ir/dialects/nn/resize.py).

prim has no shape op: a shape query is a constant when its dims are static, and counts a
symbolic dim at run time otherwise (:func:`~pir.passes.decompose.index_math.dim_size`).
Generated tensors are ``iota`` arithmetic at their result type.
"""

from __future__ import annotations

import numpy as np

from pir.ir.dialects.nn.symbolic import shape_slice
from pir.ir import dimexpr
from pir.ir.typerules import const_value, normalize_axis, tensor
from pir.ir.types import DType
from pir.passes.decompose.index_math import (I64, dim_size, input_symbols, iota, sizable,
                                             wrap_index)
from pir.passes.decompose.registry import decomposes, keep

# -- shape queries -------------------------------------------------------------------------------


@decomposes("nn.shape")
def shape(b, op):
    """A constant when the dims are static.  prim has no shape op, so a symbolic dim S is
    counted: the sum of ones broadcast to (S,) when the function's inputs size S, else
    counted from the operand (:func:`_counted`)."""
    all_dims = b.known(tensor(op.data).shape, "input")
    start, end = shape_slice(len(all_dims), op.start, op.end)[:2]
    axes = list(range(len(all_dims)))[start:end]
    dims = all_dims[start:end]
    if all(isinstance(d, int) for d in dims):
        return [b.const(np.array(dims, dtype=np.int64), I64)]
    inputs = input_symbols(op)
    parts, run = [], []
    for axis, d in list(zip(axes, dims)) + [(None, None)]:
        if isinstance(d, int):
            run.append(d)
            continue
        if run:
            parts.append(b.const(np.array(run, dtype=np.int64), I64))
            run = []
        if d is None:
            continue
        if dimexpr.symbols(d) - inputs and tensor(op.data).dtype is not DType.STRING:
            n = _counted(b, op.data, axis, len(all_dims))
        else:
            n = dim_size(b, d)
        parts.append(b.reshape(n, (1,)))
    return [parts[0] if len(parts) == 1 else b.op("concat", parts, dimension=0)]


def _count(b, x):
    """The number of elements of ``x``, counted (NaN too)."""
    ones = b.cast(b.op("or", b.op("eq", x, x), b.op("ne", x, x)), I64)
    return b.reduce("sum", ones, list(range(len(b.known(tensor(x).shape)))), keepdims=False)


def _counted(b, x, axis: int, rank: int):
    """Dim ``axis`` of ``x``, counted from ``x`` itself: a dim only ``x`` binds (a Slice
    whose length is computed at run time inside a Loop: paddle2onnx's SLANet) has no other
    source once the program keeps just its shape, and ``x`` stays computed.  The sums
    over the other axes are a vector of that length (zeros if another dim is 0), whose
    elements are counted."""
    others = [a for a in range(rank) if a != axis]
    per = b.reduce("sum", b.cast(b.op("or", b.op("eq", x, x), b.op("ne", x, x)), I64),
                   others, keepdims=False) if others else x
    return _count(b, per)


#: Ops whose result has as many elements as their first operand: Size looks through them.
_SAME_COUNT = frozenset({"nn.reshape", "nn.flatten", "nn.squeeze", "nn.unsqueeze",
                         "nn.transpose", "nn.identity", "nn.cast", "prim.reshape",
                         "prim.transpose", "prim.cast"})


@decomposes("nn.size")
def size(b, op):
    """The product of the dims (counted as for nn.shape when symbolic).  A reshape keeps
    the element count, so Size looks through it to a value with known dims; where a dim
    is still bound only by the operand itself (a reshape to a run-time shape), the count
    is taken from the operand, which keeps the operand computed and so its dims sized."""
    x = op.data
    while getattr(x, "op", None) is not None and x.op.name in _SAME_COUNT \
            and x.op.operands and tensor(x.op.operands[0]).shape is not None:
        x = x.op.operands[0]
    dims = b.known(tensor(x).shape, "input")
    loose = set().union(*(dimexpr.symbols(d) for d in dims)) - input_symbols(op)
    if loose and tensor(x).dtype is not DType.STRING:
        return [_count(b, x)]
    n = b.const(int(np.prod([d for d in dims if isinstance(d, int)])), I64)
    for d in dims:
        if not isinstance(d, int):
            n = b.mul(n, dim_size(b, d))
    return [n]


# -- generated tensors ---------------------------------------------------------------------------


def _scalar(b, v):
    """A one-element operand as a rank-0 tensor."""
    return v if b.known(tensor(v).shape, "a scalar") == () else b.reshape(v, ())


@decomposes("nn.constant_of_shape")
def constant_of_shape(b, op):
    """The fill value broadcast to the result type."""
    out = op.output.type
    fill = b.const(op.fill().reshape(()), out.dtype)
    return [b.broadcast_to(fill, sizable(b, out.shape, "the result shape"))]


@decomposes("nn.range")
def range_(b, op):
    """start + delta * iota(n), with n from the result type (range(0, S, 1) of a sequence
    length S is iota(S)); f16/bf16 ranges are computed in stash_type, as the runtime does."""
    out = op.output.type
    shape = sizable(b, out.shape, "the length")
    work = op.stash_type if out.dtype in (DType.F16, DType.BF16) else out.dtype
    v = iota(b, shape, 0, work)
    start, delta = const_value(op.start), const_value(op.delta)
    if delta is None or delta != 1:
        v = b.mul(v, b.broadcast_to(b.cast(_scalar(b, op.delta), work), shape))
    if start is None or start != 0:
        v = b.add(v, b.broadcast_to(b.cast(_scalar(b, op.start), work), shape))
    return [b.cast(v, out.dtype)]


def _diagonals(b, shape):
    """col - row over the last two dims of ``shape`` (i64): which diagonal each place is on."""
    square = sizable(b, shape[-2:], "the matrix shape")
    return b.sub(iota(b, square, 1), iota(b, square, 0))


@decomposes("nn.eye_like")
def eye_like(b, op):
    out = op.output.type
    diag = _diagonals(b, b.known(out.shape, "result"))
    return [b.cast(b.op("eq", diag, b.scalar_like(op.k, diag)), out.dtype)]


@decomposes("nn.trilu")
def trilu(b, op):
    """x where col - row >= k (upper) or <= k (lower), else 0; k may be computed."""
    t = tensor(op.input)
    shape = sizable(b, t.shape, "the input shape")
    diag = _diagonals(b, shape)
    square = tensor(diag).shape
    k = b.scalar_like(0, diag) if op.k is None else b.broadcast_to(_scalar(b, op.k), square)
    keep_it = b.op("ge" if op.upper else "le", diag, k)
    keep_it = b.op("broadcast_in_dim", keep_it, result_type=tensor(keep_it).with_shape(shape),
                   broadcast_dimensions=(len(shape) - 2, len(shape) - 1))
    return [b.op("select", keep_it, op.input, b.zeros_like(op.input))]


@decomposes("nn.one_hot")
def one_hot(b, op):
    """values[1] where iota along the new axis equals the (wrapped) index, else values[0];
    out-of-range indices match no position."""
    out = op.output.type
    shape = sizable(b, out.shape, "the result shape")
    axis = normalize_axis(op.axis, len(shape))
    depth = shape[axis]
    idx = wrap_index(b, op.indices, depth)
    here = iota(b, shape, axis)
    spread = b.op("broadcast_in_dim", idx, result_type=tensor(here),
                  broadcast_dimensions=tuple(d for d in range(len(shape)) if d != axis))
    off, on = (b.broadcast_to(b.reshape(b.op("slice", op.values, start_indices=(i,),
                                                 limit_indices=(i + 1,)), ()), shape)
               for i in (0, 1))
    return [b.op("select", b.op("eq", here, spread), on, off)]


# -- ops that stay -------------------------------------------------------------------------------

keep("nn.non_zero", "its output size depends on the input's values")
keep("nn.unique", "its output size depends on the input's values")
keep("nn.grid_sample", "bilinear/bicubic sampling at data-dependent positions; no prim form yet")
keep("nn.roi_align", "bilinear sampling in data-dependent regions; no prim form yet")
keep("nn.affine_grid", "no prim form yet (a grid of iota coordinates times theta)")
keep("nn.non_max_suppression", "its output size depends on the scores (a greedy selection)")
