"""Reference rules for the shape prims."""

from __future__ import annotations

from math import prod

import numpy as np

from pir.errors import PirError
from pir.runtimes.reference.registry import evaluates
from pir.runtimes.reference.rules.prim_common import result_shape


@evaluates("prim.broadcast_in_dim")
def broadcast_in_dim(op, x):
    dims = op.broadcast_dimensions
    from_operand = {r: x.shape[i] for i, r in enumerate(dims)}
    shape = result_shape(op, [x], fallback=lambda i, _: from_operand.get(i))
    # Put the operand dims in result order, give the new dims size 1, then broadcast.
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    expanded = [1] * len(shape)
    for i in order:
        expanded[dims[i]] = x.shape[i]
    moved = np.transpose(x, order).reshape(expanded)
    return np.broadcast_to(moved, shape).copy()


@evaluates("prim.reshape")
def reshape(op, x):
    def rest(i, partial):  # the one unknown dim is what the others leave over
        unknown = [k for k, d in enumerate(partial) if d is None]
        if unknown != [i]:
            return None
        known = prod(d for d in partial if d is not None)
        return x.size // known if known else None

    shape = result_shape(op, [x], fallback=rest)
    if prod(shape) != x.size:
        raise PirError(f"cannot reshape {list(x.shape)} ({x.size} elements) to {list(shape)}")
    return x.reshape(shape)


@evaluates("prim.transpose")
def transpose(op, x):
    return np.transpose(x, op.permutation)


@evaluates("prim.slice")
def slice_(op, x):
    starts, limits = op.start_indices, op.limit_indices
    axes = op.axes or range(len(starts))
    strides = op.strides or (1,) * len(starts)
    index = [slice(None)] * x.ndim
    for a, lo, hi, step in zip(axes, starts, limits, strides):
        if hi > x.shape[a]:
            raise PirError(f"axis {a}: limit {hi} is past the dim ({x.shape[a]})")
        index[a] = slice(lo, hi, step)
    return x[tuple(index)]


@evaluates("prim.pad")
def pad(op, x, value):
    low, high = op.edge_padding_low, op.edge_padding_high
    interior = op.interior_padding or (0,) * x.ndim
    # 1. interior: spread the elements apart, the gaps holding the padding value.
    spread = [d + max(d - 1, 0) * m for d, m in zip(x.shape, interior)]
    out = np.full(spread, value, dtype=x.dtype)
    out[tuple(slice(None, None, m + 1) for m in interior)] = x
    # 2. edges: pad the positive amounts, then crop the negative ones.
    out = np.pad(out, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)],
                 constant_values=value)
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for lo, hi, n in zip(low, high, out.shape))
    return out[crop]


@evaluates("prim.concat")
def concat(op, *inputs):
    return np.concatenate(inputs, axis=op.dimension)
