"""Reference rules for reductions, arg-reductions, cumulative scans and top-k."""

from __future__ import annotations

import numpy as np

from pir.runtimes.reference.registry import evaluates, operand_arrays


def wide(x: np.ndarray) -> np.ndarray:
    """x in a type wide enough to accumulate in: f16 and narrower floats go to f32."""
    if x.dtype.kind in "fV" and x.dtype.itemsize < 4:
        return x.astype(np.float32)
    return x


def exact_sum(x: np.ndarray, axis=None, keepdims: bool = False) -> np.ndarray:
    """np.sum in :func:`wide`'s type, a float one accumulated in f64 and rounded once.
    numpy adds pairwise only along a contiguous axis, and even then the lane of a block
    that holds a dominant term drops the small terms added to it (1.0 and 20,000 terms of
    3e-8 came out 2.4e-7 low); the reference is the oracle of the compiled kernels, which
    take long sums in blocks into an f64 total (pir.codegen.sums)."""
    w = wide(x)
    if w.dtype.kind == "f" and w.dtype.itemsize < 8:
        return np.sum(w, axis=axis, keepdims=keepdims, dtype=np.float64).astype(w.dtype)
    return np.sum(w, axis=axis, keepdims=keepdims, dtype=w.dtype)


def exact_mean(x: np.ndarray, axis=None, keepdims: bool = False) -> np.ndarray:
    """:func:`exact_sum` over the count (NaN for an empty set, as ONNX defines it); an
    integer sum takes numpy's wider type, as ``np.mean`` does."""
    w = wide(x)
    total = exact_sum(w, axis, keepdims) if w.dtype.kind == "f" else \
        np.sum(w, axis=axis, keepdims=keepdims)
    count = w.size // max(np.size(total), 1)  # the reduced elements per result (0 if empty)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / np.asarray(count, w.dtype)


def _extreme(dtype: np.dtype, largest: bool):
    """The dtype's largest value (the identity of min) or its least (the identity of max)."""
    if dtype == np.bool_:
        return largest
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if largest else info.min
    return np.inf if largest else -np.inf


def _max(x, axes, keep):
    return np.max(x, axis=axes, keepdims=keep, initial=_extreme(x.dtype, False))


def _min(x, axes, keep):
    return np.min(x, axis=axes, keepdims=keep, initial=_extreme(x.dtype, True))


def _sum(x, axes, keep):
    return exact_sum(x, axes, keep)


def _log_sum_exp(x, axes, keep):
    x = wide(x)
    m = _max(x, axes, True)
    m = np.where(np.isfinite(m), m, 0)  # all -inf (or empty): log(0) = -inf, without NaNs
    with np.errstate(divide="ignore"):
        out = np.log(exact_sum(np.exp(x - m), axes, True)) + m
    return out if keep else np.squeeze(out, axis=axes)


def _mean(x, axes, keep):
    # sum / count rather than np.mean, which warns on an empty set (ONNX defines it: NaN)
    return exact_mean(x, axes, keep)


def _log(v):
    with np.errstate(divide="ignore"):
        return np.log(v)


# name -> f(x, axes, keepdims); each keeps x's dtype family (the result is cast back).
REDUCERS = {
    "nn.reduce_sum": _sum,
    "nn.reduce_mean": _mean,
    "nn.reduce_max": _max,
    "nn.reduce_min": _min,
    "nn.reduce_prod": lambda x, a, k: np.prod(wide(x), axis=a, keepdims=k, dtype=wide(x).dtype),
    "nn.reduce_l1": lambda x, a, k: _sum(np.abs(x), a, k),
    "nn.reduce_l2": lambda x, a, k: np.sqrt(_sum(wide(x) * wide(x), a, k)),
    "nn.reduce_log_sum": lambda x, a, k: _log(_sum(x, a, k)),
    "nn.reduce_log_sum_exp": _log_sum_exp,
    "nn.reduce_sum_square": lambda x, a, k: _sum(wide(x) * wide(x), a, k),
}


@evaluates(*REDUCERS)
def reduce(op, *arrays):
    args = operand_arrays(op, arrays)
    x, axes = args["data"], args["axes"]
    if axes is None or axes.size == 0:
        # No axes: all of them, or none, where composite reductions still apply their
        # elementwise steps (ReduceSumSquare squares, ReduceLogSum takes the log).
        axes = () if op.noop_with_empty_axes else tuple(range(x.ndim))
    elif x.ndim == 0:
        axes = ()  # a scalar's axis -1 or 0 is no axis at all
    else:
        axes = tuple(sorted({int(a) % x.ndim for a in axes.reshape(-1)}))
    out = REDUCERS[op.name](x, axes, op.keepdims)
    return np.asarray(out).astype(x.dtype)


@evaluates("nn.arg_max", "nn.arg_min")
def arg_reduce(op, x):
    find = np.argmax if op.name == "nn.arg_max" else np.argmin
    axis = op.axis % x.ndim if x.ndim else 0
    if op.select_last_index:  # search the reversed axis, then map back
        idx = x.shape[axis] - 1 - find(np.flip(x, axis), axis=axis, keepdims=True)
    else:
        idx = find(x, axis=axis, keepdims=True)
    idx = idx.astype(np.int64)
    return idx if op.keepdims else np.squeeze(idx, axis=axis)


_SCANS = {"nn.cum_sum": (np.cumsum, 0), "nn.cum_prod": (np.cumprod, 1)}


@evaluates(*_SCANS)
def scan(op, x, axis):
    fn, identity = _SCANS[op.name]
    axis = int(axis.reshape(-1)[0]) % x.ndim
    v = np.flip(x, axis) if op.reverse else x
    out = fn(wide(v), axis=axis, dtype=wide(v).dtype).astype(x.dtype)
    if op.exclusive:  # shift by one: element i gets the scan up to i - 1
        pad = np.full_like(np.take(out, [0], axis=axis), identity)
        out = np.concatenate([pad, np.take(out, range(x.shape[axis] - 1), axis=axis)], axis=axis)
    return np.flip(out, axis) if op.reverse else out


@evaluates("nn.top_k")
def top_k(op, x, k):
    k = int(k.reshape(-1)[0])
    axis = op.axis % x.ndim
    if op.largest:
        # A stable ascending sort of the reversed axis, read backwards, is descending with
        # equal values in index order; it works for unsigned types, unlike sorting -x.
        rev = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
        order = x.shape[axis] - 1 - np.flip(rev, axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    idx = np.take(order, range(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, idx, axis=axis), idx
