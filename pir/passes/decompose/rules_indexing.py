"""Decomposition rules for the gather/scatter family (pir/ir/dialects/nn/indexing.py) and the
other ops that read at computed positions: compress, reverse_sequence.

All of them become prim's one-axis ``gather`` / ``scatter_add`` on a tensor whose indexed
dims are flattened into one, at a linear index built from ``iota`` coordinates (see
:mod:`pir.passes.decompose.index_math`).  The indexed dims must therefore be static; other
dims may be symbolic.
"""

from __future__ import annotations

import numpy as np

from pir.ir.dialects.nn.indexing import unpooled_shape
from pir.ir.typerules import const_value, normalize_axis, tensor
from pir.passes.decompose.index_math import (
    I64,
    fit,
    iota,
    linear_index,
    put_flat,
    sizable,
    static_dims,
    take_flat,
    wrap_index,
)
from pir.passes.decompose.registry import Keep, decomposes

# -- gathers -------------------------------------------------------------------------------------


@decomposes("nn.gather")
def gather(b, op):
    """take(data, indices, axis) is prim.gather once negative indices are wrapped."""
    t = tensor(op.data)
    axis = normalize_axis(op.axis, len(b.known(t.shape, "data")))
    idx = wrap_index(b, op.indices, t.shape[axis])
    return [fit(b, b.op("gather", op.data, idx, axis=axis), op.out.type)]


def _element_coords(b, indices, dims, axis):
    """The coordinates of every element of ``indices`` in data (of static ``dims``): iota
    along each dim, and the (wrapped) index itself along ``axis``."""
    shape = sizable(b, tensor(indices).shape, "indices")
    return [wrap_index(b, indices, dims[d]) if d == axis else iota(b, shape, d)
            for d in range(len(dims))]


@decomposes("nn.gather_elements")
def gather_elements(b, op):
    """out[i, j] = data[indices[i, j], j] (axis 0): a gather from the flattened data at the
    linear position of each element's coordinates."""
    dims = static_dims(tensor(op.data).shape, "data")
    axis = normalize_axis(op.axis, len(dims))
    lin = linear_index(b, _element_coords(b, op.indices, dims, axis), dims)
    return [take_flat(b, op.data, len(dims), lin)]


def _tuple_coords(b, indices, dims, batch_dims=0):
    """For index tuples in the last axis of ``indices``: the batch coordinates (iota) and the
    components of each tuple (wrapped), each shaped indices.shape[:-1]."""
    ti = tensor(indices)
    shape = sizable(b, ti.shape[:-1], "indices")
    k = ti.shape[-1]
    coords = [iota(b, shape, d) for d in range(batch_dims)]
    for j in range(k):
        part = b.op("slice", indices, start_indices=(j,), limit_indices=(j + 1,),
                    axes=(len(ti.shape) - 1,))
        coords.append(wrap_index(b, b.reshape(part, shape), dims[batch_dims + j]))
    return coords


@decomposes("nn.gather_nd")
def gather_nd(b, op):
    """data[idx[..., 0], idx[..., 1], ...] (per batch entry): a gather from data with its
    batch and indexed dims flattened into one."""
    k = tensor(op.indices).shape[-1]
    if not isinstance(k, int):
        raise Keep("the length of the index tuples is not static")
    lead = op.batch_dims + k
    dims = static_dims(tensor(op.data).shape[:lead], "the indexed dims of data")
    lin = linear_index(b, _tuple_coords(b, op.indices, dims, op.batch_dims), dims)
    return [take_flat(b, op.data, lead, lin)]


# -- scatters ------------------------------------------------------------------------------------


@decomposes("nn.scatter_elements")
def scatter_elements(b, op):
    """The transpose of gather_elements: a scatter into the flattened data."""
    dims = static_dims(tensor(op.data).shape, "data")
    axis = normalize_axis(op.axis, len(dims))
    lin = linear_index(b, _element_coords(b, op.indices, dims, axis), dims)
    return [put_flat(b, op.data, len(dims), lin, op.updates, op.reduction)]


@decomposes("nn.scatter_nd")
def scatter_nd(b, op):
    """The transpose of gather_nd (without batch dims)."""
    k = tensor(op.indices).shape[-1]
    if not isinstance(k, int):
        raise Keep("the length of the index tuples is not static")
    dims = static_dims(tensor(op.data).shape[:k], "the indexed dims of data")
    lin = linear_index(b, _tuple_coords(b, op.indices, dims), dims)
    return [put_flat(b, op.data, k, lin, op.updates, op.reduction)]


@decomposes("nn.tensor_scatter")
def tensor_scatter(b, op):
    """A KV-cache write is a scatter_elements along ``axis`` at positions
    write_indices[n] + j (modulo the cache length in circular mode)."""
    tc, tu = tensor(op.past_cache), tensor(op.update)
    dims = static_dims(tc.shape, "past_cache")  # the scatter_elements rule needs it
    axis = normalize_axis(op.axis, len(dims))
    shape = sizable(b, tu.shape, "update")
    pos = iota(b, shape, axis)
    if op.write_indices is not None:
        starts = b.cast(op.write_indices, I64)
        pos = b.add(pos, b.op("broadcast_in_dim", starts, result_type=tensor(pos),
                              broadcast_dimensions=(0,)))
    if op.mode == "circular":
        pos = b.op("rem", pos, b.scalar_like(dims[axis], pos))
    out = b.create("nn.scatter_elements", op.past_cache, pos, op.update, axis=axis)
    return [out.results[0]]


@decomposes("nn.max_unpool")
def max_unpool(b, op):
    """Zeros with X stored at the flat positions I of the unpooled shape, then zero-padded
    at the end up to output_shape."""
    tx = tensor(op.x)
    inner = unpooled_shape(op, static_dims(tx.shape, "X"))
    size = int(np.prod(inner))
    zeros = b.broadcast_to(b.const(0, tx.dtype), (size,))
    flat = put_flat(b, zeros, 1, wrap_index(b, op.i, size), op.x, "none")
    y = b.reshape(flat, inner)
    out = static_dims(op.y.type.shape, "the output shape")
    if out != tuple(inner):
        zero = b.const(0, tx.dtype)
        y = b.op("pad", y, zero, edge_padding_low=(0,) * len(out),
                 edge_padding_high=tuple(o - d for o, d in zip(out, inner)))
    return [y]


# -- other reads at computed positions -----------------------------------------------------------


@decomposes("nn.compress")
def compress(b, op):
    """With a constant condition, compress is a gather at the positions where it holds;
    otherwise its size depends on the data."""
    cond = const_value(op.condition)
    if cond is None:
        raise Keep("the output size depends on the condition's values")
    picked = np.nonzero(cond.reshape(-1))[0].astype(np.int64)
    x = op.input
    if op.axis is None:
        t = tensor(x)
        x = b.reshape(x, (int(np.prod(static_dims(t.shape, "input"))),))
        axis = 0
    else:
        axis = normalize_axis(op.axis, len(b.known(tensor(x).shape, "input")))
    return [fit(b, b.op("gather", x, b.const(picked, I64), axis=axis), op.output.type)]


@decomposes("nn.reverse_sequence")
def reverse_sequence(b, op):
    """out[t, n] = x[lens[n] - 1 - t, n] for t < lens[n], else x[t, n]: a gather from x with
    its (static) time and batch dims flattened."""
    dims = static_dims(tensor(op.input).shape[:2], "the time and batch dims")
    t_axis, b_axis = op.time_axis, op.batch_axis
    time = iota(b, dims, t_axis)
    lens = b.op("broadcast_in_dim", b.cast(op.sequence_lens, I64), result_type=tensor(time),
                broadcast_dimensions=(b_axis,))
    flipped = b.sub(b.sub(lens, b.scalar_like(1, lens)), time)
    coords = [None, None]
    coords[t_axis] = b.op("select", b.op("lt", time, lens), flipped, time)
    coords[b_axis] = iota(b, dims, b_axis)
    return [take_flat(b, op.input, 2, linear_index(b, coords, dims))]
