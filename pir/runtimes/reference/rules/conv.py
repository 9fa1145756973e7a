"""Reference rules for the convolutions, and the sliding-window helpers pooling shares.

A window op is evaluated tap by tap: for each kernel position, one strided slice of the padded
input holds that tap's input for every output position (N, C, O...), so a convolution is a
sum of ``prod(kernel)`` batched matmuls and a pooling a running max or sum, all in numpy.
"""

from __future__ import annotations

import itertools
from typing import Iterator

import numpy as np

from pir.errors import PirError
from pir.ir.dialects.nn.conv import Window, WindowOp
from pir.runtimes.reference.registry import evaluates, operand_arrays

__all__ = ["resolve", "pad_for_windows", "taps", "accumulator", "grouped_conv"]


def resolve(op: WindowOp, x: np.ndarray, w: np.ndarray | None = None,
            ceil: bool = False) -> Window:
    """The op's window on the concrete input ``x`` (kernel from ``w`` unless given)."""
    spatial = x.shape[2:]
    win = op.window(spatial, op.kernel_dims(None if w is None else w.shape, len(spatial)), ceil)
    return win


def pad_for_windows(x: np.ndarray, win: Window, value) -> np.ndarray:
    """``x`` padded (or cropped at the end) so that every window lies inside it: the pads
    before, and after as far as the last window reaches."""
    widths, crop = [(0, 0), (0, 0)], [slice(None), slice(None)]
    for size, pb, o, s, span in zip(x.shape[2:], win.pads_begin, win.out, win.strides, win.span):
        after = (o - 1) * s + span - size - pb
        widths.append((pb, max(after, 0)))
        crop.append(slice(0, pb + size + after))
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths, constant_values=value)
    return x[tuple(crop)]


def taps(xp: np.ndarray, win: Window) -> Iterator[tuple[tuple[int, ...], np.ndarray]]:
    """(kernel position, the (N, C, O...) view of ``xp`` that position sees)."""
    for pos in itertools.product(*(range(k) for k in win.kernel)):
        index = (slice(None), slice(None)) + tuple(
            slice(p * d, p * d + (o - 1) * s + 1, s)
            for p, d, o, s in zip(pos, win.dilations, win.out, win.strides))
        yield pos, xp[index]


def accumulator(dtype: np.dtype) -> np.dtype:
    """The type to accumulate in: f64 stays, other floats widen to f32, integers to i64."""
    if dtype.kind in "iub":
        return np.dtype(np.int64)
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def grouped_conv(x: np.ndarray, w: np.ndarray, win: Window, group: int) -> np.ndarray:
    """Cross-correlation of x (N, C, D...) with w (M, C/group, k...) in x's dtype."""
    n, c = x.shape[:2]
    m = w.shape[0]
    if c != w.shape[1] * group or m % group:
        raise PirError(f"input {list(x.shape)} and weight {list(w.shape)} do not match with "
                       f"group {group}")
    cg, mg = c // group, m // group
    xp = pad_for_windows(x, win, 0)
    out_size = int(np.prod(win.out, dtype=np.int64))
    y = np.zeros((n, group, mg, out_size), x.dtype)
    wt = w.reshape(group, mg, cg, -1)
    for t, (_, patch) in enumerate(taps(xp, win)):
        p = patch.reshape(n, group, cg, out_size)
        if cg == 1:  # depthwise-like: a broadcast product beats many 1-row matmuls
            y += wt[None, :, :, :, t] * p
        else:
            y += np.matmul(wt[None, :, :, :, t], p)
    return y.reshape(n, m, *win.out)


def _bias(b: np.ndarray | None, rank: int) -> np.ndarray | int:
    return 0 if b is None else b.reshape((1, -1) + (1,) * (rank - 2))


@evaluates("nn.conv")
def conv(op, *arrays):
    a = operand_arrays(op, arrays)
    x, w = a["x"], a["w"]
    acc = accumulator(x.dtype)
    y = grouped_conv(x.astype(acc), w.astype(acc), resolve(op, x, w), op.group)
    if a["b"] is not None:
        y += _bias(a["b"].astype(acc), y.ndim)
    return y.astype(x.dtype)


def _zero_point_shift(w: np.ndarray, zp: np.ndarray | None) -> np.ndarray:
    """W - zp, with zp a scalar or one value per output channel."""
    if zp is None:
        return w
    zp = zp.astype(w.dtype)
    return w - (zp.reshape((-1,) + (1,) * (w.ndim - 1)) if zp.size > 1 else zp.reshape(()))


def _integer_conv(op, x, w, x_zp, w_zp) -> np.ndarray:
    x = x.astype(np.int64) - (0 if x_zp is None else x_zp.astype(np.int64).reshape(()))
    w = _zero_point_shift(w.astype(np.int64), w_zp)
    return grouped_conv(x, w, resolve(op, x, w), op.group)


@evaluates("nn.conv_integer")
def conv_integer(op, *arrays):
    a = operand_arrays(op, arrays)
    return _integer_conv(op, a["x"], a["w"], a["x_zero_point"], a["w_zero_point"]).astype(np.int32)


@evaluates("nn.q_linear_conv")
def q_linear_conv(op, *arrays):
    a = operand_arrays(op, arrays)
    acc = _integer_conv(op, a["x"], a["w"], a["x_zero_point"], a["w_zero_point"])
    if a["b"] is not None:
        acc = acc + _bias(a["b"].astype(np.int64), acc.ndim)
    scale = a["x_scale"].astype(np.float64).reshape(()) * a["w_scale"].astype(np.float64)
    scale = _bias(scale, acc.ndim) if scale.size > 1 else scale.reshape(())
    y = acc * (scale / a["y_scale"].astype(np.float64).reshape(()))
    zp = a["y_zero_point"]
    info = np.iinfo(zp.dtype)
    y = np.rint(y) + zp.astype(np.float64).reshape(())  # rint rounds half to even
    return np.clip(y, info.min, info.max).astype(zp.dtype)


@evaluates("nn.conv_transpose")
def conv_transpose(op, *arrays):
    a = operand_arrays(op, arrays)
    x, w, group = a["x"], a["w"], op.group
    acc = accumulator(x.dtype)
    spatial = x.shape[2:]
    win = op.transpose_window(spatial, op.kernel_dims(w.shape, len(spatial)))
    n, c = x.shape[:2]
    if w.shape[0] != c or c % group:
        raise PirError(f"input {list(x.shape)} and weight {list(w.shape)} do not match with "
                       f"group {group}")
    cg, mg = c // group, w.shape[1]
    # The full result: every input position scatters its kernel-sized contribution.
    full_shape = [s * (i - 1) + (k - 1) * d + 1
                  for i, s, k, d in zip(spatial, win.strides, win.kernel, win.dilations)]
    full = np.zeros((n, group, mg, *full_shape), acc)
    xg = x.astype(acc).reshape(n, group, cg, -1)
    wt = w.astype(acc).reshape(group, cg, mg, -1).transpose(0, 2, 1, 3)  # (G, Mg, Cg, K)
    for t, pos in enumerate(itertools.product(*(range(k) for k in win.kernel))):
        contrib = np.matmul(wt[None, :, :, :, t], xg).reshape(n, group, mg, *spatial)
        index = (slice(None),) * 3 + tuple(
            slice(p * d, p * d + (i - 1) * s + 1, s)
            for p, d, i, s in zip(pos, win.dilations, spatial, win.strides))
        full[index] += contrib
    # Crop the pads; a negative pad (output_padding, a larger output_shape) adds zeros.
    y = np.zeros((n, group, mg, *win.out), acc)
    src, dst = [slice(None)] * 3, [slice(None)] * 3
    for f, pb, o in zip(full_shape, win.pads_begin, win.out):
        lo, hi = max(pb, 0), min(pb + o, f)
        src.append(slice(lo, max(hi, lo)))
        dst.append(slice(lo - pb, lo - pb + max(hi - lo, 0)))
    y[tuple(dst)] = full[tuple(src)]
    y = y.reshape(n, group * mg, *win.out)
    if a["b"] is not None:
        y += _bias(a["b"].astype(acc), y.ndim)
    return y.astype(x.dtype)


def _bilinear_gather(x: np.ndarray, pos: list[np.ndarray]) -> np.ndarray:
    """Sample x (N, G, Cg, S...) at fractional positions pos[i] (N, G, T) along each spatial
    axis i, N-linearly, zero outside: the result is (N, G, Cg, T)."""
    n, g, cg = x.shape[:3]
    spatial = x.shape[3:]
    flat = x.reshape(n, g, cg, -1)
    out = np.zeros((n, g, cg, pos[0].shape[-1]), x.dtype)
    low = [np.floor(p) for p in pos]
    for corner in itertools.product((0, 1), repeat=len(spatial)):
        weight = np.ones(pos[0].shape, x.dtype)
        inside = np.ones(pos[0].shape, bool)
        index = np.zeros(pos[0].shape, np.int64)
        for p, lo, bit, size in zip(pos, low, corner, spatial):
            at = lo + bit
            weight = weight * (1 - np.abs(p - at))
            inside &= (at >= 0) & (at < size)
            index = index * size + np.clip(at, 0, size - 1).astype(np.int64)
        vals = np.take_along_axis(flat, index[:, :, None, :], axis=3)
        out += vals * (weight * inside)[:, :, None, :]
    return out


@evaluates("nn.deform_conv")
def deform_conv(op, *arrays):
    a = operand_arrays(op, arrays)
    x, w, offset = a["x"], a["w"], a["offset"]
    acc = accumulator(x.dtype)
    win = resolve(op, x, w)
    n, c = x.shape[:2]
    nd, og, group, m = x.ndim - 2, op.offset_group, op.group, w.shape[0]
    ktaps, out = int(np.prod(win.kernel)), offset.shape[2:]
    p = int(np.prod(out))
    if c % og or offset.shape[1] != og * ktaps * nd:
        raise PirError(f"offset {list(offset.shape)} does not match {og} offset groups of a "
                       f"{list(win.kernel)} kernel")
    off = offset.astype(acc).reshape(n, og, ktaps, nd, p)
    # Where each tap of each output position reads, before its offset.
    grids = np.meshgrid(*(np.arange(k) for k in win.kernel), *(np.arange(o) for o in out),
                        indexing="ij")
    pos = []
    for i in range(nd):
        base = grids[nd + i] * win.strides[i] - win.pads_begin[i] + grids[i] * win.dilations[i]
        pos.append((base.reshape(ktaps, p)[None, None] + off[:, :, :, i]).reshape(n, og, -1))
    cols = _bilinear_gather(x.astype(acc).reshape(n, og, c // og, *x.shape[2:]), pos)
    cols = cols.reshape(n, og, c // og, ktaps, p)
    if a["mask"] is not None:
        cols = cols * a["mask"].astype(acc).reshape(n, og, 1, ktaps, p)
    cg, mg = c // group, m // group
    wt = w.astype(acc).reshape(group, mg, cg * ktaps)
    y = np.matmul(wt[None], cols.reshape(n, group, cg * ktaps, p)).reshape(n, m, *out)
    if a["b"] is not None:
        y += _bias(a["b"].astype(acc), y.ndim)
    return y.astype(x.dtype)


@evaluates("nn.causal_conv_with_state")
def causal_conv_with_state(op, *arrays):
    a = operand_arrays(op, arrays)
    x, w, past = a["input"], a["weight"], a["past_state"]
    b, c, _ = x.shape
    k = w.shape[2]
    if past is None:
        past = np.zeros((b, c, k - 1), x.dtype)
    seq = np.concatenate([past, x], axis=2)
    acc = accumulator(x.dtype)
    win = Window((k,), (1,), (1,), (0,), (0,), (x.shape[2],))
    y = grouped_conv(seq.astype(acc), w.astype(acc), win, c)
    if a["bias"] is not None:
        y += _bias(a["bias"].astype(acc), 3)
    y = y.astype(x.dtype)  # the activation sees the conv rounded to x's type, as ONNX's does
    if op.activation in ("silu", "swish"):
        y32 = y.astype(np.float32)
        y = (y32 / (1 + np.exp(-y32))).astype(x.dtype)
    return y, seq[:, :, seq.shape[2] - (k - 1):]
