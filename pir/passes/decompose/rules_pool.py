"""Decomposition of the poolings.

prim has no reduce_window, so a windowed pool is written tap by tap, as the reference
runtime evaluates it: the input is padded (or cropped at the end) so that every window lies
inside it, and for each kernel offset one strided ``prim.slice`` holds what that offset sees
for every output position, ``[N, C, O...]``.  The taps are combined with ``prim.max`` (max
pool) or ``prim.add`` (average and Lp pools; the average divides by a constant array of
window sizes).  Global pools are plain reductions.

Over a symbolic spatial axis a slice's limit is no integer, so along it a tap is instead a
``prim.gather`` of the positions ``iota(O) * stride + offset`` (O an expression of the input
dims, pir.ir.dimexpr), from the input padded by the (static) pads, plus ``stride - 1`` at
the end with ceil_mode, which no window then reads past; a tap that reads the whole axis (a
kernel of 1, stride 1, no pads: PLCMOS pools ``[1, 4]`` windows over ``[frames, 257]``) is
no gather at all.  The static axes of the same input keep their strided slices: a gather by a
table of positions is a load per element that the kernels cannot vectorize, a strided slice
is affine (PLCMOS's pools took 8 ms as gathers).  The average's window sizes are then the
same taps summed over a padded tensor of ones.

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
from pir.passes.decompose.index_math import I64, dim_size, iota, sizable
from pir.passes.decompose.registry import Keep, decomposes
from pir.passes.decompose.rules_linalg import shape

__all__ = ["window_taps", "accumulate_type"]


def accumulate_type(dtype: DType) -> DType:
    """Sums of floats narrower than f32 run in f32 (as the reference runtime's do)."""
    return DType.F32 if dtype in (DType.F16, DType.BF16) else dtype


def _pool_window(b: PrimBuilder, op: Operation) -> tuple[tuple, Window]:
    sx = shape(b, op.x, "pooling input")
    spatial = sizable(b, sx[2:], "the pooling input's spatial dims")
    win = op.window(spatial, op.kernel_dims(None, len(spatial)), ceil=op.ceil_mode)
    if not win.static_pads:
        raise Keep(f"auto_pad {op.auto_pad} with strides {list(win.strides)} over symbolic "
                   "spatial dims has pads that depend on their size")
    return spatial, win


def window_taps(b: PrimBuilder, x: Value, spatial: tuple, win: Window,
                pad_value, ceil: bool = True) -> list[Value]:
    """One ``[N, C, O...]`` tap of the padded ``x`` per kernel offset (see the module
    docstring): per spatial axis a strided slice where the axis is static, a gather of its
    positions where it is symbolic, nothing where the offset reads the whole axis.
    ``ceil``: whether the output size rounds up (a window may then end past the pads)."""
    static = [isinstance(d, int) for d in spatial]
    # pads after: exactly what the last window reads on a static axis; on a symbolic one
    # the explicit pads, and with ceil_mode stride - 1 more, which no window reads past (the
    # output size is an expression).  In floor mode no window ends past the explicit pads:
    # a pad there would only cost every tap a bounds test (AECMOS's [2, 2] pools)
    after = [(o - 1) * s + span - size - pb if st else pe + (s - 1 if ceil else 0)
             for st, size, pb, pe, o, s, span in zip(static, spatial, win.pads_begin,
                                                    win.pads_end, win.out, win.strides,
                                                    win.span)]
    if any(win.pads_begin) or any(after):
        x = b.op("pad", x, b.const(pad_value, tensor(x).dtype),
                 edge_padding_low=(0, 0, *win.pads_begin), edge_padding_high=(0, 0, *after))
    padded = tensor(x).shape
    sliced = [i for i in range(len(spatial)) if static[i]]
    positions = {}  # (axis, offset) -> the i64 positions it reads, made once
    taps = []
    for pos in itertools.product(*(range(k) for k in win.kernel)):
        starts = tuple(p * d for p, d in zip(pos, win.dilations))
        t = x
        if sliced:
            t = b.op("slice", x, start_indices=tuple(starts[i] for i in sliced),
                     limit_indices=tuple(starts[i] + (win.out[i] - 1) * win.strides[i] + 1
                                         for i in sliced),
                     strides=tuple(win.strides[i] for i in sliced),
                     axes=tuple(2 + i for i in sliced))
        for i, (start, o, s) in enumerate(zip(starts, win.out, win.strides)):
            if static[i] or (s == 1 and start == 0 and o == padded[2 + i]):
                continue
            if (i, start) not in positions:
                idx = iota(b, (o,), 0)
                if s != 1:
                    idx = b.mul(idx, b.const(s, I64))
                if start:
                    idx = b.add(idx, b.const(start, I64))
                positions[(i, start)] = idx
            t = b.op("gather", t, positions[(i, start)], axis=2 + i)
        taps.append(t)
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
    return [_combine(b, "max", window_taps(b, op.x, spatial, win, _lowest(dtype),
                                          ceil=op.ceil_mode))]


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
    ceil = bool(getattr(op, "ceil_mode", False))  # (LpPool has none: it rounds down)
    return _combine(b, "add", window_taps(b, x, spatial, win, 0, ceil)), spatial, win


@decomposes("nn.average_pool")
def average_pool(b: PrimBuilder, op: Operation) -> list[Value]:
    """The window sums over zeros in the pads, divided by each window's element count
    (a constant: with or without the pads, per count_include_pad)."""
    dtype = tensor(op.x).dtype
    acc = accumulate_type(dtype)
    total, spatial, win = _sum_pool(b, op, b.cast(op.x, acc))
    if all(isinstance(d, int) for d in spatial):
        counts = _window_counts(spatial, win, op.count_include_pad)
        counts = counts.flat[0] if (counts == counts.flat[0]).all() else counts
        return [b.cast(b.div(total, b.const(counts, acc)), dtype)]
    if not (any(win.pads_begin) or any(win.pads_end) or op.ceil_mode) or \
            (op.count_include_pad and not op.ceil_mode):
        # every window has all its taps inside the (padded) input: one constant count
        return [b.cast(b.div(total, b.const(int(np.prod(win.kernel)), acc)), dtype)]
    # the count of taps inside the input (or the explicit pads), per output position
    sx = shape(b, op.x)
    inside = b.broadcast_to(b.const(1, acc), (1, 1, *sx[2:]))
    if op.count_include_pad:
        inside = b.op("pad", inside, b.const(1, acc), edge_padding_low=(0, 0, *win.pads_begin),
                      edge_padding_high=(0, 0, *win.pads_end))
        win = Window(win.kernel, win.strides, win.dilations, (0,) * len(win.out),
                     (0,) * len(win.out), win.out)
    counts = _combine(b, "add", window_taps(b, inside, spatial, win, 0, op.ceil_mode))
    return [b.cast(b.div(total, b.broadcast_to(counts, tensor(total).shape)), dtype)]


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
    spatial = sizable(b, shape(b, op.x)[2:], "the pooling input's spatial dims")
    dtype = tensor(op.x).dtype
    acc = accumulate_type(dtype)
    total = b.reduce("sum", b.cast(op.x, acc), axes, keepdims=True)
    if all(isinstance(d, int) for d in spatial):
        return [b.cast(b.div(total, b.const(int(np.prod(spatial)), acc)), dtype)]
    count = b.const(1, I64)
    for d in spatial:  # the symbolic sizes, counted at run time
        count = b.mul(count, dim_size(b, d))
    return [b.cast(b.div(total, b.broadcast_to(b.cast(count, acc), tensor(total).shape)),
                   dtype)]
