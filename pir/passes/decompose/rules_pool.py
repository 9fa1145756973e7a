"""Decomposition of the poolings.

prim has no reduce_window, so a windowed pool is written tap by tap, as the reference
runtime evaluates it: the input is padded (or cropped at the end) so that every window lies
inside it, and for each kernel offset one strided ``prim.slice`` holds what that offset sees
for every output position, ``[N, C, O...]``.  The taps are combined with ``prim.max`` (max
pool) or ``prim.add`` (average and Lp pools; the average divides by a constant array of
window sizes).  That needs static spatial dims; global pools are plain reductions.

Max pooling of the reference runtime skips NaN (numpy's ``fmax``, as ONNX Runtime's does),
while ``prim.max`` propagates it: the two differ only on inputs holding NaN.
"""

from __future__ import annotations

import itertools

import numpy as np

from pir.ir.core import Operation, Value
from pir.ir.dialects.nn.conv import Window
from pir.ir.typerules import tensor
from pir.ir.types import DType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes
from pir.passes.decompose.rules_linalg import shape

__all__ = ["window_taps", "accumulate_type"]


def accumulate_type(dtype: DType) -> DType:
    """Sums of floats narrower than f32 run in f32 (as the reference runtime's do)."""
    return DType.F32 if dtype in (DType.F16, DType.BF16) else dtype


def _pool_window(b: PrimBuilder, op: Operation) -> tuple[tuple[int, ...], Window]:
    sx = shape(b, op.x, "pooling input")
    spatial = sx[2:]
    if not all(isinstance(d, int) for d in spatial):
        raise Keep("windowed pooling slices each kernel offset: needs static spatial dims")
    return spatial, op.window(spatial, op.kernel_dims(None, len(spatial)), ceil=op.ceil_mode)


def window_taps(b: PrimBuilder, x: Value, spatial: tuple[int, ...], win: Window,
                pad_value) -> list[Value]:
    """One ``[N, C, O...]`` strided slice of the padded ``x`` per kernel offset."""
    dtype = tensor(x).dtype
    after = [(o - 1) * s + span - size - pb for size, pb, o, s, span in
             zip(spatial, win.pads_begin, win.out, win.strides, win.span)]
    if any(win.pads_begin) or any(after):
        x = b.op("pad", x, b.const(pad_value, dtype), edge_padding_low=(0, 0, *win.pads_begin),
                 edge_padding_high=(0, 0, *after))
    axes = tuple(range(2, 2 + len(spatial)))
    taps = []
    for pos in itertools.product(*(range(k) for k in win.kernel)):
        starts = tuple(p * d for p, d in zip(pos, win.dilations))
        limits = tuple(st + (o - 1) * s + 1 for st, o, s in zip(starts, win.out, win.strides))
        taps.append(b.op("slice", x, start_indices=starts, limit_indices=limits,
                         strides=win.strides, axes=axes))
    return taps


def _combine(b: PrimBuilder, name: str, taps: list[Value]) -> Value:
    out = taps[0]
    for t in taps[1:]:
        out = b.op(name, out, t)
    return out


def _lowest(dtype: DType):
    return -np.inf if dtype.is_float else np.iinfo(dtype.numpy).min


@decomposes("nn.max_pool")
def max_pool(b: PrimBuilder, op: Operation) -> list[Value]:
    if len(op.results) == 2:
        raise Keep("the Indices result (the positions of the maxima) is not decomposed")
    spatial, win = _pool_window(b, op)
    dtype = tensor(op.x).dtype
    return [_combine(b, "max", window_taps(b, op.x, spatial, win, _lowest(dtype)))]


def _window_counts(spatial: tuple[int, ...], win: Window, include_pad: bool) -> np.ndarray:
    """How many taps of each window fall inside the input (or inside the explicitly padded
    input with ``include_pad``), as an ``[O...]`` array."""
    count = np.ones((), np.int64)
    for i, size in enumerate(spatial):
        lo, hi = (-win.pads_begin[i], size + win.pads_end[i]) if include_pad else (0, size)
        starts = np.arange(win.out[i]) * win.strides[i] - win.pads_begin[i]
        at = starts[:, None] + np.arange(win.kernel[i]) * win.dilations[i]
        count = np.multiply.outer(count, ((at >= lo) & (at < hi)).sum(axis=1))
    return np.maximum(count, 1)


def _sum_pool(b: PrimBuilder, op: Operation, x: Value) -> tuple[Value, tuple[int, ...], Window]:
    spatial, win = _pool_window(b, op)
    return _combine(b, "add", window_taps(b, x, spatial, win, 0)), spatial, win


@decomposes("nn.average_pool")
def average_pool(b: PrimBuilder, op: Operation) -> list[Value]:
    """The window sums over zeros in the pads, divided by each window's element count
    (a constant: with or without the pads, per count_include_pad)."""
    dtype = tensor(op.x).dtype
    acc = accumulate_type(dtype)
    total, spatial, win = _sum_pool(b, op, b.cast(op.x, acc))
    counts = _window_counts(spatial, win, op.count_include_pad)
    counts = counts.flat[0] if (counts == counts.flat[0]).all() else counts
    return [b.cast(b.div(total, b.const(counts, acc)), dtype)]


@decomposes("nn.lp_pool")
def lp_pool(b: PrimBuilder, op: Operation) -> list[Value]:
    """(sum over the window of |x|^p) ^ (1/p)."""
    dtype = tensor(op.x).dtype
    acc = accumulate_type(dtype)
    powered = b.pow(b.op("abs", b.cast(op.x, acc)), b.const(op.p, acc))
    total, _, _ = _sum_pool(b, op, powered)
    return [b.cast(b.pow(total, b.const(1.0 / op.p, acc)), dtype)]


def _spatial_axes(b: PrimBuilder, x: Value) -> list[int]:
    return list(range(2, len(shape(b, x, "pooling input"))))


@decomposes("nn.global_max_pool")
def global_max_pool(b: PrimBuilder, op: Operation) -> list[Value]:
    return [b.reduce("max", op.x, _spatial_axes(b, op.x), keepdims=True)]


@decomposes("nn.global_average_pool")
def global_average_pool(b: PrimBuilder, op: Operation) -> list[Value]:
    """The sum over the spatial dims divided by their (static) element count."""
    axes = _spatial_axes(b, op.x)
    spatial = shape(b, op.x)[2:]
    if not all(isinstance(d, int) for d in spatial):
        raise Keep("the mean over symbolic spatial dims needs their size")
    dtype = tensor(op.x).dtype
    acc = accumulate_type(dtype)
    total = b.reduce("sum", b.cast(op.x, acc), axes, keepdims=True)
    return [b.cast(b.div(total, b.const(int(np.prod(spatial)), acc)), dtype)]
