"""Reference rules for reductions, arg-reductions and cumsum."""

from __future__ import annotations

import numpy as np

from pir.ir.types import DType
from pir.runtimes.reference.registry import evaluates
from pir.runtimes.reference.rules.prim_common import compute_dtype
from pir.runtimes.reference.rules.reduce import exact_sum


def _extreme(dtype: np.dtype, largest: bool):
    """The identity of max (largest=False: the smallest value) or min (largest=True)."""
    if DType.from_numpy(dtype).is_float:
        return np.inf if largest else -np.inf
    info = np.iinfo(dtype)
    return info.max if largest else info.min


def _reduce(fn, identity=None):
    """A rule running ``fn`` in the compute dtype; ``identity(dtype)`` fills empty reductions
    (sum and prod have their own; max and min need one)."""

    def rule(op, x):
        work = x.astype(compute_dtype(x.dtype), copy=False)
        # sum/prod must not promote (i32 stays i32 and wraps); max/min never promote
        kwargs = {"dtype": work.dtype} if identity is None else {"initial": identity(work.dtype)}
        with np.errstate(all="ignore"):
            out = fn(work, axis=tuple(op.axes), keepdims=op.keepdims, **kwargs)
        return np.asarray(out).astype(x.dtype, copy=False)

    return rule


@evaluates("prim.reduce_sum")
def reduce_sum(op, x):
    # a float sum accumulates in f64 and is rounded to f32 once, then to x's type (the
    # compiled kernels' long sums: pir.codegen.sums); other types keep theirs and wrap
    with np.errstate(all="ignore"):
        out = exact_sum(x.astype(compute_dtype(x.dtype), copy=False), tuple(op.axes),
                        op.keepdims)
    return np.asarray(out).astype(x.dtype, copy=False)


evaluates("prim.reduce_prod")(_reduce(np.prod))
evaluates("prim.reduce_max")(_reduce(np.max, lambda t: _extreme(t, largest=False)))
evaluates("prim.reduce_min")(_reduce(np.min, lambda t: _extreme(t, largest=True)))


def _arg_reduce(fn):
    def rule(op, x):
        axis = op.axis
        work = x.astype(compute_dtype(x.dtype), copy=False)
        if op.select_last_index:  # the first hit in the flipped axis is the last one
            idx = x.shape[axis] - 1 - fn(np.flip(work, axis), axis=axis, keepdims=op.keepdims)
        else:
            idx = fn(work, axis=axis, keepdims=op.keepdims)
        return np.asarray(idx, dtype=np.int64)

    return rule


evaluates("prim.argmax")(_arg_reduce(np.argmax))
evaluates("prim.argmin")(_arg_reduce(np.argmin))


@evaluates("prim.cumsum")
def cumsum(op, x):
    axis = op.axis
    work = compute_dtype(x.dtype)
    y = np.flip(x, axis) if op.reverse else x
    out = np.cumsum(y, axis=axis, dtype=work)
    if op.exclusive:  # shift by one along the axis: a zero first, the last sum dropped
        shifted = np.zeros_like(out)
        dst, src = [slice(None)] * y.ndim, [slice(None)] * y.ndim
        dst[axis], src[axis] = slice(1, None), slice(0, max(y.shape[axis] - 1, 0))
        shifted[tuple(dst)] = out[tuple(src)]
        out = shifted
    if op.reverse:
        out = np.flip(out, axis)
    return out.astype(x.dtype, copy=False)
