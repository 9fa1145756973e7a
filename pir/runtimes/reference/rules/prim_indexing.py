"""Reference rules for the indexing prims."""

from __future__ import annotations

import numpy as np

from pir.errors import PirError
from pir.runtimes.reference.registry import evaluates


def _check_indices(indices: np.ndarray, size: int, axis: int) -> None:
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        bad = indices[(indices < 0) | (indices >= size)].reshape(-1)[0]
        raise PirError(f"index {bad} is out of range [0, {size}) for axis {axis}")


@evaluates("prim.gather")
def gather(op, x, indices):
    _check_indices(indices, x.shape[op.axis], op.axis)
    return np.take(x, indices.astype(np.int64), axis=op.axis)


@evaluates("prim.scatter_add")
def scatter_add(op, x, indices, updates):
    axis = op.axis
    _check_indices(indices, x.shape[axis], axis)
    out = x.copy()
    # np.add.at accumulates repeated indices (a plain += would keep only the last one).
    np.add.at(out, (slice(None),) * axis + (indices.astype(np.int64),), updates)
    return out


def _clamped_starts(starts: np.ndarray, dims, sizes) -> list[int]:
    if starts.shape != (len(dims),):
        raise PirError(f"start_indices has shape {list(starts.shape)}, expected [{len(dims)}]")
    return [int(min(max(s, 0), d - n)) for s, d, n in zip(starts.tolist(), dims, sizes)]


@evaluates("prim.dynamic_slice")
def dynamic_slice(op, x, starts):
    sizes = op.slice_sizes
    if any(n > d for n, d in zip(sizes, x.shape)):
        raise PirError(f"slice_sizes {list(sizes)} exceed the operand's shape {list(x.shape)}")
    at = _clamped_starts(starts, x.shape, sizes)
    return x[tuple(slice(s, s + n) for s, n in zip(at, sizes))]


@evaluates("prim.dynamic_update_slice")
def dynamic_update_slice(op, x, update, starts):
    if any(n > d for n, d in zip(update.shape, x.shape)):
        raise PirError(f"the update {list(update.shape)} exceeds the operand {list(x.shape)}")
    at = _clamped_starts(starts, x.shape, update.shape)
    out = x.copy()
    out[tuple(slice(s, s + n) for s, n in zip(at, update.shape))] = update
    return out
