"""Reference rules for iota, the random ops and sort."""

from __future__ import annotations

import numpy as np

from pir.runtimes.reference.registry import evaluates
from pir.runtimes.reference.rules.prim_common import result_shape


@evaluates("prim.iota")
def iota(op):
    shape = result_shape(op, [])
    axis = op.dimension
    line = np.arange(shape[axis]).reshape([-1 if a == axis else 1 for a in range(len(shape))])
    return np.broadcast_to(line, shape).astype(op.out.type.dtype.numpy)


# The stream is numpy's PCG64 seeded with ``seed``: fixed for this runtime, not across runtimes.
@evaluates("prim.random_uniform")
def random_uniform(op):
    rng = np.random.default_rng(op.seed)
    values = rng.uniform(op.low, op.high, result_shape(op, []))
    return values.astype(op.out.type.dtype.numpy)


@evaluates("prim.random_normal")
def random_normal(op):
    rng = np.random.default_rng(op.seed)
    values = rng.normal(op.mean, op.scale, result_shape(op, []))
    return values.astype(op.out.type.dtype.numpy)


@evaluates("prim.sort")
def sort(op, x):
    axis = op.axis
    work = x if x.dtype.kind in "fiu" else x.astype(np.float32)  # narrow floats sort in f32
    if op.descending:
        # A stable descending sort: sort the flipped axis ascending (ties then come in
        # reverse order) and flip the result back, which restores their original order.
        flipped = np.argsort(np.flip(work, axis), axis=axis, kind="stable")
        order = np.flip(x.shape[axis] - 1 - flipped, axis)
    else:
        order = np.argsort(work, axis=axis, kind="stable")
    return np.take_along_axis(x, order, axis=axis), order.astype(np.int64)
