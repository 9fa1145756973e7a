"""Reference rules for pooling, tap by tap over the padded input (see ``rules/conv.py``)."""

from __future__ import annotations

import numpy as np

from pir.ir.dialects.nn.conv import Window
from pir.runtimes.reference.registry import evaluates
from pir.runtimes.reference.rules.conv import accumulator, pad_for_windows, resolve, taps


def _window(op, x: np.ndarray) -> Window:
    return resolve(op, x, ceil=op.ceil_mode)


def _axis_counts(size: int, win: Window, i: int, include_pad: bool) -> np.ndarray:
    """How many taps of each window along spatial axis ``i`` fall inside the input (or inside
    the explicitly padded input, with ``include_pad``)."""
    lo, hi = (-win.pads_begin[i], size + win.pads_end[i]) if include_pad else (0, size)
    starts = np.arange(win.out[i]) * win.strides[i] - win.pads_begin[i]
    at = starts[:, None] + np.arange(win.kernel[i]) * win.dilations[i]
    return ((at >= lo) & (at < hi)).sum(axis=1)


def _counts(x: np.ndarray, win: Window, include_pad: bool) -> np.ndarray:
    """The number of elements each window averages over, as an (O...) array."""
    count = np.ones((), np.int64)
    for i, size in enumerate(x.shape[2:]):
        count = np.multiply.outer(count, _axis_counts(size, win, i, include_pad))
    return count


def _window_sum(xp: np.ndarray, win: Window, acc: np.dtype) -> np.ndarray:
    total = np.zeros(xp.shape[:2] + tuple(win.out), acc)
    for _, patch in taps(xp, win):
        total += patch
    return total


@evaluates("nn.average_pool")
def average_pool(op, x):
    win = _window(op, x)
    acc = accumulator(x.dtype)
    total = _window_sum(pad_for_windows(x.astype(acc), win, 0), win, acc)
    count = _counts(x, win, op.count_include_pad)
    return (total / np.maximum(count, 1)).astype(x.dtype)


@evaluates("nn.lp_pool")
def lp_pool(op, x):
    win = _window(op, x)
    acc = accumulator(x.dtype)
    powered = np.abs(x.astype(acc)) ** op.p
    total = _window_sum(pad_for_windows(powered, win, 0), win, acc)
    return (total ** (1.0 / op.p)).astype(x.dtype)


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _flat_positions(x: np.ndarray, win: Window, pos: tuple[int, ...],
                    column_major: bool) -> np.ndarray:
    """The flat index into x of what kernel position ``pos`` sees, as an (O...) array:
    over the spatial dims in row- or column-major order (ONNX's storage_order)."""
    spatial = x.shape[2:]
    coords = [np.arange(o) * s - pb + p * d for o, s, pb, p, d in
              zip(win.out, win.strides, win.pads_begin, pos, win.dilations)]
    grids = np.meshgrid(*coords, indexing="ij")
    order = range(len(spatial) - 1, -1, -1) if column_major else range(len(spatial))
    flat = np.zeros(tuple(win.out), np.int64)
    for i in order:
        flat = flat * spatial[i] + grids[i]
    return flat


@evaluates("nn.max_pool")
def max_pool(op, x):
    win = _window(op, x)
    xp = pad_for_windows(x, win, _lowest(x.dtype))
    want_indices = len(op.results) == 2
    best = np.full(x.shape[:2] + tuple(win.out), _lowest(x.dtype), x.dtype)
    where = np.zeros(best.shape, np.int64) if want_indices else None
    for pos, patch in taps(xp, win):
        if not want_indices:
            np.fmax(best, patch, out=best)  # fmax ignores NaN, as ONNX's max pooling does
            continue
        better = patch > best  # strict: the first maximum in window order wins
        best = np.where(better, patch, best)
        where = np.where(better, _flat_positions(x, win, pos, op.storage_order == 1), where)
    if not want_indices:
        return best
    n, c = x.shape[:2]
    plane = int(np.prod(x.shape[2:], dtype=np.int64))
    offsets = (np.arange(n * c, dtype=np.int64) * plane).reshape((n, c) + (1,) * len(win.out))
    return best, where + offsets


@evaluates("nn.global_average_pool")
def global_average_pool(op, x):
    axes = tuple(range(2, x.ndim))
    return x.astype(accumulator(x.dtype)).mean(axis=axes, keepdims=True).astype(x.dtype)


@evaluates("nn.global_max_pool")
def global_max_pool(op, x):
    return x.max(axis=tuple(range(2, x.ndim)), keepdims=True)
