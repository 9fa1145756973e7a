"""Decomposition of the convolutions into prim.conv.

``prim.conv`` has ONNX's layout (x ``[N, C, S...]``, kernel ``[O, C/G, K...]``), so a conv
is one prim.conv with the window the nn op resolves (``WindowOp.window``: explicit pads, or
auto_pad's when the spatial dims are static) plus the bias broadcast along the channels.
The transposed convolution is a conv of the input dilated by the strides with the kernel
flipped and its in/out channels swapped per group; the integer convolutions subtract the
zero points in i32 before the conv.  DeformConv samples the input at data-dependent
fractional positions and stays an nn op.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from pir.ir import dimexpr as de
from pir.ir.core import Operation, Value
from pir.ir.dialects.nn.conv import Window
from pir.ir.typerules import tensor
from pir.ir.types import Dim, DType, TensorType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes, keep
from pir.passes.decompose.rules_linalg import shape, transpose
from pir.passes.decompose.rules_quantize import saturate

__all__ = ["channels", "scalar", "conv_window", "integer_conv"]

keep("nn.deform_conv", "samples the input at data-dependent fractional positions (bilinear "
                       "interpolation at offsets known only at run time)")


def channels(b: PrimBuilder, v: Value, like: tuple[Dim, ...]) -> Value:
    """A per-channel vector ``[C]`` broadcast along dim 1 of an ``[N, C, S...]`` shape."""
    like = b.known(like, "the channel broadcast")
    return b.op("broadcast_in_dim", v, result_type=TensorType(tensor(v).dtype, like),
                broadcast_dimensions=(1,))


def scalar(b: PrimBuilder, v: Value) -> Value:
    """A one-element tensor (``[]``, ``[1]``) as rank 0."""
    return b.reshape(v, ())


def conv_window(b: PrimBuilder, op: Operation, x: Value, w: Value) -> Window:
    """The op's window on x and w; auto_pad over a dim nobody knows keeps the op."""
    sx, sw = shape(b, x, "conv input"), shape(b, w, "conv weight")
    win = op.window(sx[2:], op.kernel_dims(sw, len(sx) - 2))
    if not win.static_pads:
        raise Keep(f"auto_pad {op.auto_pad} needs static spatial dims")
    return win


def _prim_conv(b: PrimBuilder, x: Value, w: Value, win: Window, group: int) -> Value:
    return b.op("conv", x, w, window_strides=win.strides, padding_low=win.pads_begin,
                padding_high=win.pads_end, rhs_dilation=win.dilations,
                feature_group_count=group)


def _add_bias(b: PrimBuilder, y: Value, bias: Value | None) -> Value:
    if bias is None:
        return y
    return b.op("add", y, channels(b, bias, tensor(y).shape))


@decomposes("nn.conv")
def conv(b: PrimBuilder, op: Operation) -> list[Value]:
    win = conv_window(b, op, op.x, op.w)
    return [_add_bias(b, _prim_conv(b, op.x, op.w, win, op.group), op.b)]


def _flip(b: PrimBuilder, w: Value, axes: Sequence[int]) -> Value:
    """``w`` reversed along ``axes`` (a gather of the reversed positions)."""
    for axis in axes:
        k = shape(b, w)[axis]
        if k != 1:
            w = b.op("gather", w, b.const(np.arange(k - 1, -1, -1), DType.I64), axis=axis)
    return w


@decomposes("nn.conv_transpose")
def conv_transpose(b: PrimBuilder, op: Operation) -> list[Value]:
    """The transposed conv is a conv with stride 1 of x dilated by the strides, padded by
    ``span - 1`` less the cropped pads, with the kernel flipped and, per group, its
    ``[C/G, M/G]`` channel dims swapped (W is ``[C, M/G, K...]``)."""
    sx, sw = shape(b, op.x, "conv input"), shape(b, op.w, "conv weight")
    if not all(isinstance(d, int) for d in sw):
        raise Keep("the kernel needs static dims to be flipped")
    nsp, g = len(sx) - 2, op.group
    win = op.transpose_window(sx[2:], op.kernel_dims(sw, nsp))
    if not win.static_pads:
        raise Keep(f"auto_pad {op.auto_pad} or output_shape needs static spatial dims")
    c, mg, ks = sw[0], sw[1], sw[2:]
    spatial = list(range(2, 2 + nsp))
    if g == 1 and _sub_pixel(win, op.output_padding, ks):
        return [_add_bias(b, _sub_pixel_conv(b, op.x, op.w, sx, ks), op.b)]
    if g == 1:
        w = transpose(b, op.w, [1, 0, *spatial])
    else:
        w = b.reshape(op.w, (g, c // g, mg, *ks))
        w = transpose(b, w, [0, 2, 1, *(a + 1 for a in spatial)])
        w = b.reshape(w, (g * mg, c // g, *ks))
    w = _flip(b, w, spatial)
    out_pad = op.output_padding or (0,) * nsp
    low = [(s - 1) - pb for s, pb in zip(win.span, win.pads_begin)]
    high = [(s - 1) - pe + op_ for s, pe, op_ in zip(win.span, win.pads_end, out_pad)]
    y = b.op("conv", op.x, w, padding_low=tuple(low), padding_high=tuple(high),
             lhs_dilation=win.strides, rhs_dilation=win.dilations, feature_group_count=g)
    return [_add_bias(b, y, op.b)]


def _sub_pixel(win: Window, output_padding, ks) -> bool:
    """Whether the transposed conv's kernel is its stride (2 x 2 with stride 2, a detector's
    upsampling), undilated and uncropped: each output position then takes one tap."""
    return (tuple(win.strides) == tuple(ks) and all(d == 1 for d in win.dilations)
            and all(p == 0 for p in (*win.pads_begin, *win.pads_end))
            and not any(output_padding or ()) and len(ks) == 2 and max(ks) > 1)


def _sub_pixel_conv(b: PrimBuilder, x: Value, w: Value, sx, ks) -> Value:
    """y[n, o, s*i + p, t*j + q] = sum_c x[n, c, i, j] w[c, o, p, q]: a 1x1 conv with the
    kernel's taps as ``O * s * t`` output channels, then each tap's channels moved to its
    place (depth to space).  The dilated form computes s * t taps per output of which all
    but one read the zeros between the input's pixels."""
    n, _, h, wd = sx
    c, o = shape(b, w)[:2]
    s, t = ks
    taps = b.reshape(transpose(b, w, [1, 2, 3, 0]), (o * s * t, c, 1, 1))  # [O s t, C, 1, 1]
    z = b.op("conv", x, taps, window_strides=(1, 1), padding_low=(0, 0), padding_high=(0, 0),
             rhs_dilation=(1, 1), feature_group_count=1)
    z = b.reshape(z, (n, o, s, t, h, wd))
    z = transpose(b, z, [0, 1, 4, 2, 5, 3])  # [N, O, H, s, W, t]
    return b.reshape(z, (n, o, de.mul(h, s), de.mul(wd, t)))


# -- integer convolutions ---------------------------------------------------------------------


def _centered(b: PrimBuilder, x: Value, zp: Value | None, per_channel_axis: int | None) -> Value:
    """``x - zp`` in i32; a zero point of more than one value is one per ``per_channel_axis``."""
    x = b.cast(x, DType.I32)
    if zp is None:
        return x
    zp = b.cast(zp, DType.I32)
    n = tensor(zp).numel
    if n == 1:
        return b.sub(x, scalar(b, zp))
    if per_channel_axis is None or n is None:
        raise Keep("a zero point with more than one value where one is expected")
    zp = b.op("broadcast_in_dim", b.reshape(zp, (n,)), result_type=tensor(x),
              broadcast_dimensions=(per_channel_axis,))
    return b.op("sub", x, zp)


def integer_conv(b: PrimBuilder, op: Operation) -> Value:
    """conv(x - x_zero_point, w - w_zero_point) in i32 (w's zero point may be per channel)."""
    win = conv_window(b, op, op.x, op.w)
    x = _centered(b, op.x, op.x_zero_point, None)
    w = _centered(b, op.w, op.w_zero_point, 0)
    return _prim_conv(b, x, w, win, op.group)


@decomposes("nn.conv_integer")
def conv_integer(b: PrimBuilder, op: Operation) -> list[Value]:
    return [integer_conv(b, op)]


@decomposes("nn.q_linear_conv")
def q_linear_conv(b: PrimBuilder, op: Operation) -> list[Value]:
    """The integer conv plus the i32 bias, rescaled in f64 by x_scale * w_scale / y_scale
    (w_scale may be per channel) and saturated into y's type."""
    acc = integer_conv(b, op)
    if op.b is not None:
        acc = b.op("add", acc, channels(b, op.b, tensor(acc).shape))
    f64 = DType.F64
    scale = b.mul(b.cast(scalar(b, op.x_scale), f64), b.cast(op.w_scale, f64))
    factor = b.div(scale, b.cast(scalar(b, op.y_scale), f64))
    if tensor(factor).numel != 1:
        factor = channels(b, b.reshape(factor, (tensor(factor).numel,)), tensor(acc).shape)
    else:
        factor = scalar(b, factor)
    y = b.mul(b.cast(acc, f64), factor)
    return [saturate(b, y, scalar(b, op.y_zero_point), tensor(op.y_zero_point).dtype)]


@decomposes("nn.causal_conv_with_state")
def causal_conv_with_state(b: PrimBuilder, op: Operation) -> list[Value]:
    """A depthwise conv of [past_state (or zeros), input] with no padding, then the bias and
    SiLU; the new state is the last k - 1 positions of the joined sequence."""
    batch, c, length = shape(b, op.input, "causal conv input")
    k = shape(b, op.weight, "causal conv weight")[2]
    if not all(isinstance(d, int) for d in (c, length, k)):
        raise Keep("needs static channels, length and kernel size")
    x, dtype = op.input, tensor(op.input).dtype
    if op.past_state is None:
        seq = b.op("pad", x, b.const(0, dtype), edge_padding_low=(0, 0, k - 1),
                   edge_padding_high=(0, 0, 0))
    else:
        past = shape(b, op.past_state, "past state")
        if past[:2] != (batch, c):
            raise Keep(f"past_state [{', '.join(map(str, past))}] does not match input "
                       f"[{', '.join(map(str, shape(b, x)))}] in batch or channels")
        seq = b.op("concat", [op.past_state, x], dimension=2)
    y = _add_bias(b, b.op("conv", seq, op.weight, feature_group_count=c), op.bias)
    if op.activation in ("silu", "swish"):
        wide = b.cast(y, DType.F32) if dtype in (DType.F16, DType.BF16) else y
        one = b.scalar_like(1, wide)
        silu = b.op("div", wide, b.op("add", one, b.op("exp", b.op("neg", wide))))
        y = b.cast(silu, dtype)
    state = b.op("slice", seq, start_indices=(length,), limit_indices=(length + k - 1,),
                 axes=(2,))
    return [y, state]
