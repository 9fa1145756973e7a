"""Convolutions: Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv, CausalConvWithState.

The sliding-window geometry (kernel, strides, dilations, pads, auto_pad) is shared with the
pooling ops of :mod:`pir.ir.dialects.nn.pool`: :class:`WindowOp` declares those attributes and
resolves them into a :class:`Window`, which the type rules read for output sizes (``None``
where an input dim is not a known integer) and the reference runtime for the explicit pads.
An empty ``strides``/``dilations``/``pads``/``kernel_shape`` means ONNX's default (ones,
zeros, the weight's spatial dims).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pir.errors import PirError
from pir.ir import dimexpr as de
from pir.ir.attributes import INT, INTS, STR
from pir.ir.core import Operation
from pir.ir.dialects.nn.base import FLOATS
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import tensor
from pir.ir.types import Dim, DType, TensorType

__all__ = ["Window", "WindowOp", "AutoPadWindowOp", "spatial_input", "Conv", "ConvTranspose",
           "ConvInteger", "QLinearConv", "DeformConv", "CausalConvWithState", "QUANT8"]

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
QUANT8 = frozenset({DType.I8, DType.U8})


@dataclass(frozen=True)
class Window:
    """A sliding window resolved on one input: per spatial axis its kernel size, stride,
    dilation, pads before and after, and the output size: dims (expressions of the input's
    symbols where it has any, ``None`` where a size is unknown).  auto_pad's pads are
    expressions too on a symbolic input, so :meth:`static_pads` says whether a lowering that
    needs integer pads can use them."""

    kernel: tuple[Dim, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[Dim, ...]
    pads_end: tuple[Dim, ...]
    out: tuple[Dim, ...]

    @property
    def span(self) -> tuple[Dim, ...]:
        """The extent of each dilated kernel: ``(k - 1) * d + 1``."""
        return tuple(de.add(de.mul(de.sub(k, 1), d), 1)
                     for k, d in zip(self.kernel, self.dilations))

    @property
    def static_pads(self) -> bool:
        return all(isinstance(p, int) for p in self.pads_begin + self.pads_end)


def _per_axis(op: Operation, name: str, values: Sequence[int], n: int, default: int,
              minimum: int) -> tuple[int, ...]:
    if not values:
        return (default,) * n
    if len(values) != n:
        raise PirError(f"{op.name}: '{name}' has {len(values)} values, expected {n} "
                       f"(one per spatial axis)")
    if any(v < minimum for v in values):
        raise PirError(f"{op.name}: '{name}' must be >= {minimum}, got {list(values)}")
    return tuple(values)


class WindowOp(Operation):
    """Base of ops that slide a kernel over the spatial axes (all but the first two)."""

    dilations = attr(INTS, ())
    kernel_shape = attr(INTS, ())
    pads = attr(INTS, ())
    strides = attr(INTS, ())

    def kernel_dims(self, w_shape: tuple[Dim, ...] | None, n: int) -> tuple[Dim, ...]:
        """``kernel_shape``, else the weight's spatial dims (``None`` when unknown)."""
        if self.kernel_shape:
            return _per_axis(self, "kernel_shape", self.kernel_shape, n, 1, 1)
        if w_shape is None:
            return (None,) * n
        return tuple(w_shape[2:])

    def window(self, spatial: Sequence[Dim], kernel: Sequence[Dim], ceil: bool = False) -> Window:
        """Resolve the window over input spatial dims ``spatial``.  ``ceil`` rounds the
        output size up (pooling's ceil_mode), dropping a last window that would start in
        the end padding."""
        n = len(spatial)
        kernel = tuple(kernel)
        if len(kernel) != n:
            raise PirError(f"{self.name}: the kernel has {len(kernel)} spatial dims, the input "
                           f"has {n}")
        strides = _per_axis(self, "strides", self.strides, n, 1, 1)
        dilations = _per_axis(self, "dilations", self.dilations, n, 1, 1)
        pads = _per_axis(self, "pads", self.pads, 2 * n, 0, 0)
        auto_pad = getattr(self, "auto_pad", "NOTSET")
        if auto_pad not in AUTO_PADS:
            raise PirError(f"{self.name}: auto_pad must be one of {', '.join(AUTO_PADS)}, "
                           f"got '{auto_pad}'")
        begin, end, out = [], [], []
        for i in range(n):
            size, k, s, d = spatial[i], kernel[i], strides[i], dilations[i]
            span = de.add(de.mul(de.sub(k, 1), d), 1)
            if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
                o = de.ceildiv(size, s)
                total = de.maximum(0, de.sub(de.add(de.mul(de.sub(o, 1), s), span), size))
                half = de.floordiv(total, 2)
                pb = half if auto_pad == "SAME_UPPER" else de.sub(total, half)
                pe = de.sub(total, pb)
            else:
                pb, pe = (0, 0) if auto_pad == "VALID" else (pads[i], pads[i + n])
                room = de.sub(de.add(size, pb + pe), span)
                o = de.add((de.ceildiv if ceil else de.floordiv)(room, s), 1)
                if ceil:  # a last window that would start in the end padding is dropped
                    o = de.minimum(o, de.add(de.floordiv(de.add(size, pb - 1), s), 1))
            if isinstance(o, int) and o < 1:
                raise PirError(f"{self.name}: spatial axis {i} of size {size} is too small for "
                               f"a window of {span} with pads ({pb}, {pe})")
            begin.append(pb)
            end.append(pe)
            out.append(o)
        return Window(kernel, strides, dilations, tuple(begin), tuple(end), tuple(out))


class AutoPadWindowOp(WindowOp):
    """A window op that also takes ONNX's (deprecated but common) ``auto_pad``."""

    auto_pad = attr(STR, "NOTSET")


def spatial_input(op: Operation, x: TensorType, what: str = "input") -> tuple[Dim, ...] | None:
    """The spatial dims of an (N, C, D1, ...) input; None when its rank is unknown."""
    if x.shape is None:
        return None
    if len(x.shape) < 3:
        raise PirError(f"{op.name}: the {what} must have rank >= 3 (N, C, spatial...), got {x}")
    return tuple(x.shape[2:])


def _check_weight(op: Operation, x: TensorType, w: TensorType, group: int) -> None:
    """W is (M, C/group, k1, ...): same rank as X, channels matching X's over groups."""
    if group < 1:
        raise PirError(f"{op.name}: group must be >= 1, got {group}")
    if x.shape is None or w.shape is None:
        return
    if len(w.shape) != len(x.shape):
        raise PirError(f"{op.name}: the weight {w} must have the input's rank {len(x.shape)}")
    c, cw, m = x.shape[1], w.shape[1], w.shape[0]
    if isinstance(c, int) and isinstance(cw, int) and c != cw * group:
        raise PirError(f"{op.name}: the input has {c} channels, but the weight {w} with group "
                       f"{group} expects {cw * group}")
    if isinstance(m, int) and m % group:
        raise PirError(f"{op.name}: {m} output channels do not divide into {group} groups")


class _ConvBase(AutoPadWindowOp):
    """Shared type rule of the convolutions: (N, C, D...) * (M, C/group, k...) -> (N, M, O...)."""

    group = attr(INT, 1)

    def conv_type(self, dtype: DType) -> TensorType:
        tx, tw = tensor(self.x), tensor(self.w)
        spatial = spatial_input(self, tx)
        _check_weight(self, tx, tw, self.group)
        if spatial is None:
            return TensorType(dtype, None if tw.shape is None else
                              (None, tw.shape[0]) + (None,) * (len(tw.shape) - 2))
        win = self.window(spatial, self.kernel_dims(tw.shape, len(spatial)))
        m = None if tw.shape is None else tw.shape[0]
        return TensorType(dtype, (tx.shape[0], m, *win.out))


class Conv(_ConvBase):
    """Y = the N-d cross-correlation of X (N, C, D...) with W (M, C/group, k...), plus B."""

    name = "nn.conv"
    traits = frozenset({Pure})
    x = operand(dtypes=FLOATS)
    w = operand(dtypes=FLOATS)
    b = operand(optional=True, dtypes=FLOATS)
    y = result()

    def infer(self):
        tx, tw = tensor(self.x), tensor(self.w)
        if tx.dtype != tw.dtype:
            raise PirError(f"{self.name}: input {tx} and weight {tw} element types differ")
        return [self.conv_type(tx.dtype)]


class ConvInteger(_ConvBase):
    """Y (i32) = conv(X - x_zero_point, W - w_zero_point); w_zero_point may be per channel."""

    name = "nn.conv_integer"
    traits = frozenset({Pure})
    x = operand(dtypes=QUANT8)
    w = operand(dtypes=QUANT8)
    x_zero_point = operand(optional=True, dtypes=QUANT8)
    w_zero_point = operand(optional=True, dtypes=QUANT8)
    y = result(dtypes={DType.I32})

    def infer(self):
        return [self.conv_type(DType.I32)]


class QLinearConv(_ConvBase):
    """Y = quantize(conv(dequantize(X), dequantize(W)) + B * x_scale * w_scale) in Y's scale
    and zero point, rounded half to even and saturated to y_zero_point's type."""

    name = "nn.q_linear_conv"
    traits = frozenset({Pure})
    x = operand(dtypes=QUANT8)
    x_scale = operand(dtypes={DType.F32})
    x_zero_point = operand(dtypes=QUANT8)
    w = operand(dtypes=QUANT8)
    w_scale = operand(dtypes={DType.F32})
    w_zero_point = operand(dtypes=QUANT8)
    y_scale = operand(dtypes={DType.F32})
    y_zero_point = operand(dtypes=QUANT8)
    b = operand(optional=True, dtypes={DType.I32})
    y = result(dtypes=QUANT8)

    def infer(self):
        return [self.conv_type(tensor(self.y_zero_point).dtype)]


class ConvTranspose(AutoPadWindowOp):
    """Y = the transpose (gradient) of Conv: X (N, C, D...) * W (C, M/group, k...) -> (N, M, O...),
    cropped by ``pads`` (or to ``output_shape``), plus B."""

    name = "nn.conv_transpose"
    traits = frozenset({Pure})
    x = operand(dtypes=FLOATS)
    w = operand(dtypes=FLOATS)
    b = operand(optional=True, dtypes=FLOATS)
    group = attr(INT, 1)
    output_padding = attr(INTS, ())
    output_shape = attr(INTS, ())
    y = result()

    def transpose_window(self, spatial: Sequence[Dim], kernel: Sequence[Dim]) -> Window:
        """The geometry of the transposed conv: ``out`` is the output size, ``pads_*`` what is
        cropped from the full result (negative when the output extends it with zeros)."""
        n = len(spatial)
        strides = _per_axis(self, "strides", self.strides, n, 1, 1)
        dilations = _per_axis(self, "dilations", self.dilations, n, 1, 1)
        pads = _per_axis(self, "pads", self.pads, 2 * n, 0, 0)
        out_pad = _per_axis(self, "output_padding", self.output_padding, n, 0, 0)
        out_shape = _per_axis(self, "output_shape", self.output_shape, n, 1, 1) \
            if self.output_shape else None
        begin, end, out = [], [], []
        for i in range(n):
            size, k, s, d = spatial[i], kernel[i], strides[i], dilations[i]
            # the size of the uncropped result
            full = de.add(de.mul(s, de.sub(size, 1)), out_pad[i] + 1)
            full = de.add(full, de.mul(de.sub(k, 1), d))
            if out_shape is not None or self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
                o = out_shape[i] if out_shape is not None else de.mul(size, s)
                total = de.sub(full, o)
                half = de.floordiv(total, 2)
                pb = half if self.auto_pad == "SAME_UPPER" else de.sub(total, half)
                pe = de.sub(total, pb)
            else:
                pb, pe = (0, 0) if self.auto_pad == "VALID" else (pads[i], pads[i + n])
                o = de.sub(full, pb + pe)
            if isinstance(o, int) and o < 1:
                raise PirError(f"{self.name}: spatial axis {i} would have output size {o}")
            begin.append(pb)
            end.append(pe)
            out.append(o)
        return Window(tuple(kernel), strides, dilations, tuple(begin), tuple(end), tuple(out))

    def infer(self):
        tx, tw = tensor(self.x), tensor(self.w)
        if tx.dtype != tw.dtype:
            raise PirError(f"{self.name}: input {tx} and weight {tw} element types differ")
        spatial = spatial_input(self, tx)
        if self.group < 1:
            raise PirError(f"{self.name}: group must be >= 1, got {self.group}")
        m = None
        if tw.shape is not None:
            if tx.shape is not None and len(tw.shape) != len(tx.shape):
                raise PirError(f"{self.name}: the weight {tw} must have the input's rank")
            c, cw = (None if tx.shape is None else tx.shape[1]), tw.shape[0]
            if isinstance(c, int) and isinstance(cw, int) and c != cw:
                raise PirError(f"{self.name}: the input has {c} channels, the weight {tw} "
                               f"expects {cw}")
            m = tw.shape[1] * self.group if isinstance(tw.shape[1], int) else None
        if spatial is None:
            return [TensorType(tx.dtype, None)]
        win = self.transpose_window(spatial, self.kernel_dims(tw.shape, len(spatial)))
        return [TensorType(tx.dtype, (tx.shape[0], m, *win.out))]


class DeformConv(WindowOp):
    """Y = deformable convolution: Conv whose kernel taps are moved by per-position ``offset``
    (bilinear sampling, zero outside) and scaled by ``mask``."""

    name = "nn.deform_conv"
    traits = frozenset({Pure})
    x = operand(dtypes=FLOATS)
    w = operand(dtypes=FLOATS)
    offset = operand(dtypes=FLOATS)
    b = operand(optional=True, dtypes=FLOATS)
    mask = operand(optional=True, dtypes=FLOATS)
    group = attr(INT, 1)
    offset_group = attr(INT, 1)
    y = result()

    def infer(self):
        tx, tw, to = tensor(self.x), tensor(self.w), tensor(self.offset)
        spatial = spatial_input(self, tx)
        _check_weight(self, tx, tw, self.group)
        if self.offset_group < 1:
            raise PirError(f"{self.name}: offset_group must be >= 1, got {self.offset_group}")
        if spatial is None:
            return [TensorType(tx.dtype, None)]
        win = self.window(spatial, self.kernel_dims(tw.shape, len(spatial)))
        out = win.out
        if to.shape is not None:  # the offsets' spatial dims are the output's
            if len(to.shape) != len(tx.shape):
                raise PirError(f"{self.name}: offset {to} must have the input's rank")
            given = tuple(to.shape[2:])
            if any(isinstance(o, int) and isinstance(g, int) and o != g
                   for o, g in zip(out, given)):
                raise PirError(f"{self.name}: offset {to} has spatial dims {given}, but the "
                               f"output's are {out}")
            out = tuple(o if o is not None else g for o, g in zip(out, given))
        m = None if tw.shape is None else tw.shape[0]
        return [TensorType(tx.dtype, (tx.shape[0], m, *out))]


class CausalConvWithState(Operation):
    """(output, present_state): a causal depthwise 1-d conv of input (B, C, L) with weight
    (C, 1, k), continuing from past_state (B, C, k-1; zeros if absent), plus bias, then an
    optional SiLU; present_state holds the last k-1 positions of [past_state, input]."""

    name = "nn.causal_conv_with_state"
    traits = frozenset({Pure})
    input = operand(dtypes=FLOATS)
    weight = operand(dtypes=FLOATS)
    bias = operand(optional=True, dtypes=FLOATS)
    past_state = operand(optional=True, dtypes=FLOATS)
    activation = attr(STR, "none")
    output = result()
    present_state = result()

    def infer(self):
        tx, tw = tensor(self.input), tensor(self.weight)
        if self.activation not in ("none", "silu", "swish"):
            raise PirError(f"{self.name}: activation must be none, silu or swish, "
                           f"got '{self.activation}'")
        for what, t in (("input", tx), ("weight", tw)):
            if t.shape is not None and len(t.shape) != 3:
                raise PirError(f"{self.name}: the {what} must have rank 3, got {t}")
        k = None if tw.shape is None or not isinstance(tw.shape[2], int) else tw.shape[2]
        if tx.shape is None:
            return [tx, TensorType(tx.dtype, None)]
        b, c, _ = tx.shape
        return [tx, TensorType(tx.dtype, (b, c, None if k is None else k - 1))]
