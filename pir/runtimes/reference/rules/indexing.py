"""Reference rules for gather and scatter ops."""

from __future__ import annotations

import numpy as np

from pir.errors import PirError
from pir.ir.dialects.nn.indexing import unpooled_shape
from pir.runtimes.reference.registry import evaluates, operand_arrays


def _wrap(indices: np.ndarray, dims) -> np.ndarray:
    """Indices with negative entries counted from the end of their axis (``dims`` broadcasts
    against ``indices``), checked to be in range."""
    dims = np.asarray(dims, dtype=np.int64)
    idx = indices.astype(np.int64)
    if np.any(idx < -dims) or np.any(idx >= dims):
        bad = idx[(idx < -dims) | (idx >= dims)].ravel()[0]
        raise PirError(f"index {bad} is out of range")
    return np.where(idx < 0, idx + dims, idx)


@evaluates("nn.gather")
def gather(op, data, indices):
    axis = op.axis % data.ndim
    return np.take(data, _wrap(indices, data.shape[axis]), axis=axis)


@evaluates("nn.gather_elements")
def gather_elements(op, data, indices):
    axis = op.axis % data.ndim
    return np.take_along_axis(data, _wrap(indices, data.shape[axis]), axis=axis)


def _nd_index(data_shape, indices: np.ndarray, batch_dims: int = 0):
    """The index tuples of the last axis of ``indices`` as a tuple of flat index arrays,
    one per indexed axis of data, plus the flattened batch index when ``batch_dims`` > 0."""
    k = indices.shape[-1]
    idx = _wrap(indices, data_shape[batch_dims:batch_dims + k])
    return tuple(np.moveaxis(idx.reshape(-1, k), -1, 0))


@evaluates("nn.gather_nd")
def gather_nd(op, data, indices):
    b, k = op.batch_dims, indices.shape[-1]
    batch = int(np.prod(data.shape[:b], dtype=np.int64))
    # Fold the batch axes into one, so that every case is a gather with a leading batch axis.
    flat = data.reshape((batch,) + data.shape[b:])
    idx = indices.reshape((batch, -1, k))
    tail = data.shape[b + k:]
    out = np.empty((batch, idx.shape[1]) + tail, dtype=data.dtype)
    for n in range(batch):
        out[n] = flat[n][_nd_index(flat.shape[1:], idx[n])]
    return out.reshape(indices.shape[:-1] + tail)


# numpy's unbuffered ufunc.at applies every duplicate index in turn, as the reductions need.
_REDUCE = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter(out: np.ndarray, where: tuple, updates: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "none":
        out[where] = updates  # with duplicate indices ONNX leaves the winner undefined
    else:
        _REDUCE[reduction].at(out, where, updates)
    return out


@evaluates("nn.scatter_elements")
def scatter_elements(op, data, indices, updates):
    axis = op.axis % data.ndim
    where = list(np.indices(indices.shape, sparse=True))
    where[axis] = _wrap(indices, data.shape[axis])
    return _scatter(data.copy(), tuple(where), updates, op.reduction)


@evaluates("nn.scatter_nd")
def scatter_nd(op, data, indices, updates):
    k = indices.shape[-1]
    where = _nd_index(data.shape, indices)
    flat_updates = updates.reshape((-1,) + data.shape[k:])
    return _scatter(data.copy(), where, flat_updates, op.reduction)


@evaluates("nn.tensor_scatter")
def tensor_scatter(op, *arrays):
    a = operand_arrays(op, arrays)
    cache, update = a["past_cache"], a["update"]
    axis = op.axis % cache.ndim
    batch, max_len, seq_len = cache.shape[0], cache.shape[axis], update.shape[axis]
    starts = a["write_indices"]
    starts = np.zeros(batch, np.int64) if starts is None else starts.astype(np.int64)
    positions = starts[:, None] + np.arange(seq_len)[None, :]
    if op.mode == "circular":
        positions %= max_len
    elif np.any(positions >= max_len) or np.any(positions < 0):
        raise PirError(f"write_indices + sequence length exceed max_sequence_length {max_len}")
    out = cache.copy()
    for n in range(batch):
        # Views with the sequence axis first: assigning through them writes into ``out``.
        np.moveaxis(out[n], axis - 1, 0)[positions[n]] = np.moveaxis(update[n], axis - 1, 0)
    return out


@evaluates("nn.max_unpool")
def max_unpool(op, *arrays):
    a = operand_arrays(op, arrays)
    x, idx = a["x"], a["i"]
    inner = unpooled_shape(op, x.shape)
    flat = np.zeros(int(np.prod(inner, dtype=np.int64)), dtype=x.dtype)
    flat[_wrap(idx.ravel(), flat.size)] = x.ravel()
    y = flat.reshape(inner)
    if a["output_shape"] is None:
        return y
    # An explicit output shape only adds trailing zeros: the indices refer to the unpooled
    # shape (ONNX's reference and test data place them so).
    shape = tuple(int(d) for d in a["output_shape"])
    if len(shape) != y.ndim or any(s < d for s, d in zip(shape, y.shape)):
        raise PirError(f"output_shape {list(shape)} is smaller than the unpooled shape "
                       f"{list(y.shape)}")
    out = np.zeros(shape, dtype=x.dtype)
    out[tuple(slice(0, d) for d in y.shape)] = y
    return out
