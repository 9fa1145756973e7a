"""Reference rules for shape queries, generated tensors and data-dependent ops."""

from __future__ import annotations

import numpy as np

from pir.ir.dialects.nn.symbolic import shape_slice
from pir.ir.typerules import normalize_axis
from pir.ir.types import DType
from pir.runtimes.reference.registry import evaluates


@evaluates("nn.shape")
def shape(op, x):
    start, end = shape_slice(x.ndim, op.start, op.end)
    return np.array(x.shape[start:end], np.int64)


@evaluates("nn.size")
def size(op, x):
    return np.array(x.size, np.int64)


@evaluates("nn.constant_of_shape")
def constant_of_shape(op, shape):
    fill = op.fill()
    return np.full([int(d) for d in shape], fill.reshape(-1)[0], dtype=fill.dtype)


@evaluates("nn.range")
def range_(op, start, limit, delta):
    dtype = start.dtype
    compute = dtype
    if dtype in (DType.F16.numpy, DType.BF16.numpy):
        compute = op.stash_type.numpy  # accumulate narrow floats in a wider type
    return np.arange(start.astype(compute).item(), limit.astype(compute).item(),
                     delta.astype(compute).item(), dtype=compute).astype(dtype)


@evaluates("nn.eye_like")
def eye_like(op, x):
    dtype = op.dtype.numpy if op.dtype is not None else x.dtype
    return np.eye(x.shape[0], x.shape[1], k=op.k, dtype=dtype)


@evaluates("nn.trilu")
def trilu(op, x, k=None):
    k = 0 if k is None else int(k)
    return np.triu(x, k) if op.upper else np.tril(x, k)


@evaluates("nn.one_hot")
def one_hot(op, indices, depth, values):
    depth = int(np.asarray(depth).reshape(-1)[0])
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)  # negative indices count from the end
    hot = idx[..., None] == np.arange(depth)  # out-of-range indices match nothing
    hot = np.moveaxis(hot, -1, normalize_axis(op.axis, idx.ndim + 1))
    return np.where(hot, values[1], values[0]).astype(values.dtype)


@evaluates("nn.non_zero")
def non_zero(op, x):
    if x.ndim == 0:
        return np.zeros((0, int(bool(x))), np.int64)
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


@evaluates("nn.unique")
def unique(op, x):
    axis = None if op.axis is None else normalize_axis(op.axis, x.ndim)
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not op.sorted:  # order of first occurrence instead of sorted order
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        first, counts, inverse = first[order], counts[order], rank[inverse]
        y = np.take(x.reshape(-1) if axis is None else x, first, axis=axis or 0)
    i64 = np.int64
    return y, first.astype(i64), inverse.astype(i64), counts.astype(i64)


@evaluates("nn.compress")
def compress(op, x, condition):
    return np.compress(condition.astype(bool), x, axis=op.axis)
