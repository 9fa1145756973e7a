"""onnxruntime's quantizer ops (domain ``com.microsoft``) -> nn.

``quantize_dynamic`` writes DynamicQuantizeLSTM, DynamicQuantizeMatMul and
MatMulIntegerToFloat (after its fusions); ``quantize_static`` in QOperator format writes the
QLinear* ops.  Each is imported as nn ops: DynamicQuantizeLSTM as nn.dynamic_quantize_lstm
(the recurrence, with its per-step quantisation of H, is no composition of nn ops); the
matrix products as nn.dynamic_quantize_linear / nn.matmul_integer and a rescale, so that the
int8 weights stay int8; the QLinear* ops as dequantize -> the float op -> quantize, except
where onnxruntime's kernel computes in integers (QLinearMul, QLinearGlobalAveragePool): there
its integer formula, so that results are bit-exact (docs/onnx.md gives the agreement).
"""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.ops.contrib import contrib
from pir.ir.dialects.nn import activations as act
from pir.ir.dialects.nn import cast as cs
from pir.ir.dialects.nn import elementwise as ew
from pir.ir.dialects.nn import quantize as q
from pir.ir.dialects.nn import recurrent as rec
from pir.ir.dialects.nn import reduce as rd
from pir.ir.dialects.nn import tensor as tn
from pir.ir.typerules import tensor
from pir.ir.types import DType

_LSTM_ATTRS = ("activation_alpha", "activation_beta", "activations", "clip", "direction",
               "hidden_size", "input_forget")


@contrib("DynamicQuantizeLSTM", "X W R B? sequence_lens? initial_h? initial_c? P? W_scale "
         "W_zero_point R_scale R_zero_point", _LSTM_ATTRS)
def dynamic_quantize_lstm(ctx):
    """DynamicQuantizeLSTM -> nn.dynamic_quantize_lstm (same operands; hidden_size is R's)."""
    hidden = ctx.attr("hidden_size")
    r_shape = tensor(ctx.input(2)).shape
    if hidden is not None and r_shape is not None and len(r_shape) == 3 and \
            isinstance(r_shape[1], int) and r_shape[1] != hidden:
        raise ctx.error(f"hidden_size {hidden} differs from R's {r_shape[1]} rows")
    attrs = {name: ctx.attr(name) for name in _LSTM_ATTRS if name != "hidden_size"}
    op = ctx.emit(rec.DynamicQuantizeLSTM, *(ctx.input(i) for i in range(12)),
                  outputs=[0, 1, 2], **attrs)
    return [r if ctx.output_present(i) else None
            for i, r in enumerate(op.results[:len(ctx.node.output)])]


# -- matrix products -----------------------------------------------------------------------

def _rescaled(ctx, acc, scale, bias):
    """f32(acc) * scale (+ bias): onnxruntime's output processor of its integer GEMMs."""
    y = ctx.temp(cs.Cast, acc, to=DType.F32)
    if bias is None:
        return ctx.value(ew.Mul, y, scale)
    return ctx.value(ew.Add, ctx.temp(ew.Mul, y, scale), bias)


@contrib("DynamicQuantizeMatMul", "A B b_scale b_zero_point? bias?")
def dynamic_quantize_matmul(ctx):
    """Y = (ui8 quantisation of A by its range) @ B in i32, times a_scale * b_scale, + bias."""
    a = ctx.temp(q.DynamicQuantizeLinear, ctx.input(0))
    _, a_scale, a_zp = a.op.results
    acc = ctx.temp(q.MatMulInteger, a, ctx.input(1), a_zp, ctx.input(3))
    return [_rescaled(ctx, acc, ctx.temp(ew.Mul, a_scale, ctx.input(2)), ctx.input(4))]


@contrib("MatMulIntegerToFloat", "A B a_scale b_scale a_zero_point? b_zero_point? bias?")
def matmul_integer_to_float(ctx):
    """Y = (A - a_zero_point) @ (B - b_zero_point) in i32, times a_scale * b_scale, + bias;
    f16 scales make an f16 result (the product is formed in f32)."""
    acc = ctx.temp(q.MatMulInteger, ctx.input(0), ctx.input(1), ctx.input(4), ctx.input(5))
    a_scale, b_scale, bias = ctx.input(2), ctx.input(3), ctx.input(6)
    out = tensor(a_scale).dtype
    if out != DType.F32:
        a_scale, b_scale = (ctx.temp(cs.Cast, s, to=DType.F32) for s in (a_scale, b_scale))
        bias = None if bias is None else ctx.temp(cs.Cast, bias, to=DType.F32)
    scale = ctx.temp(ew.Mul, a_scale, b_scale)
    if out == DType.F32:
        return [_rescaled(ctx, acc, scale, bias)]
    y = ctx.temp(ew.Mul, ctx.temp(cs.Cast, acc, to=DType.F32), scale)
    y = y if bias is None else ctx.temp(ew.Add, y, bias)
    return [ctx.value(cs.Cast, y, to=out)]


@contrib("MatMulInteger16", "A B")
def matmul_integer16(ctx):
    """Y = A @ B of 16-bit integers, accumulated in i32 (nn.matmul_integer without zero
    points)."""
    return [ctx.value(q.MatMulInteger, ctx.input(0), ctx.input(1))]


# -- QLinear* (QOperator format): dequantize, the float op, quantize -------------------------

def _dq(ctx, x, scale, zp):
    return ctx.temp(q.DequantizeLinear, x, scale, zp)


def _quantized(ctx, v, scale, zp, like):
    """quantize v with (scale, zp); without zp, to ``like``'s type around 0 (onnxruntime's
    reading of an absent zero point)."""
    out = None if zp is not None else tensor(like).dtype
    return ctx.value(q.QuantizeLinear, v, scale, zp, output_dtype=out)


def _centered(ctx, x, zp):
    """x - zero point, exactly, in i32."""
    x = ctx.temp(cs.Cast, x, to=DType.I32)
    return x if zp is None else ctx.temp(ew.Sub, x, ctx.temp(cs.Cast, zp, to=DType.I32))


def _requantized(ctx, acc, ratio, zp, like):
    """An i32 ``acc`` times the f32 ``ratio``, rounded half to even, plus ``zp``, saturated:
    how onnxruntime's integer kernels requantise (MlasRequantizeOutput)."""
    v = ctx.temp(ew.Mul, ctx.temp(cs.Cast, acc, to=DType.F32), ratio)
    return _quantized(ctx, v, ctx.constant(np.array(1.0, np.float32)), zp, like)


_BINARY_INPUTS = "A A_scale A_zero_point? B B_scale B_zero_point? C_scale C_zero_point?"


@contrib("QLinearAdd", _BINARY_INPUTS)
def qlinear_add(ctx):
    """C = quantize(dequantize(A) + dequantize(B)), as onnxruntime's scalar kernel."""
    a = _dq(ctx, ctx.input(0), ctx.input(1), ctx.input(2))
    b = _dq(ctx, ctx.input(3), ctx.input(4), ctx.input(5))
    return [_quantized(ctx, ctx.temp(ew.Add, a, b), ctx.input(6), ctx.input(7), ctx.input(0))]


@contrib("QLinearMul", _BINARY_INPUTS)
def qlinear_mul(ctx):
    """C = round((A - A_zp) * (B - B_zp) * (A_scale * B_scale / C_scale) + C_zp), the product
    exact in i32 (onnxruntime's MlasQLinearMul; dequantize, multiply, quantize but for the
    rounding of the scales' product and of a result at .5)."""
    a = _centered(ctx, ctx.input(0), ctx.input(2))
    b = _centered(ctx, ctx.input(3), ctx.input(5))
    ratio = ctx.temp(ew.Div, ctx.temp(ew.Mul, ctx.input(1), ctx.input(4)), ctx.input(6))
    v = ctx.temp(ew.Mul, ctx.temp(cs.Cast, ctx.temp(ew.Mul, a, b), to=DType.F32), ratio)
    zp = ctx.input(7)
    if zp is not None:  # added before the rounding, as the kernel does: 57.5 rounds to 58
        v = ctx.temp(ew.Add, v, ctx.temp(cs.Cast, zp, to=DType.F32))
    return [_quantized(ctx, v, ctx.constant(np.array(1.0, np.float32)), None, ctx.input(0))]


_UNARY_INPUTS = "X X_scale X_zero_point? Y_scale Y_zero_point?"


@contrib("QLinearSigmoid", _UNARY_INPUTS)
def qlinear_sigmoid(ctx):
    x = _dq(ctx, ctx.input(0), ctx.input(1), ctx.input(2))
    return [_quantized(ctx, ctx.temp(act.Sigmoid, x), ctx.input(3), ctx.input(4), ctx.input(0))]


@contrib("QLinearLeakyRelu", _UNARY_INPUTS, ("alpha",))
def qlinear_leaky_relu(ctx):
    x = _dq(ctx, ctx.input(0), ctx.input(1), ctx.input(2))
    y = ctx.temp(act.LeakyRelu, x, alpha=ctx.attr("alpha", 0.01))
    return [_quantized(ctx, y, ctx.input(3), ctx.input(4), ctx.input(0))]


@contrib("QLinearGlobalAveragePool", "X x_scale x_zero_point y_scale y_zero_point",
         ("channels_last",))
def qlinear_global_average_pool(ctx):
    """The mean over the spatial dims (2 and on; 1 to rank-2 with channels_last), kept as
    dims of 1.  With static spatial dims as onnxruntime (MlasQLinearGlobalAveragePool): the
    i32 sum of x - x_zero_point times x_scale / (y_scale * N), requantised; otherwise
    dequantize, mean, quantize."""
    x = ctx.input(0)
    t = tensor(x)
    if t.rank is None or t.rank < 3:
        raise ctx.error(f"QLinearGlobalAveragePool needs an input of rank 3 or more, got {t}")
    axes = list(range(1, t.rank - 1) if ctx.attr("channels_last", 0) else range(2, t.rank))
    spatial = [t.shape[a] for a in axes]
    if all(isinstance(d, int) for d in spatial):
        acc = ctx.temp(rd.ReduceSum, _centered(ctx, x, ctx.input(2)),
                       ctx.constant(np.array(axes, np.int64)), keepdims=True)
        n = ctx.constant(np.array(float(np.prod(spatial)), np.float32))
        ratio = ctx.temp(ew.Div, ctx.input(1), ctx.temp(ew.Mul, ctx.input(3), n))
        return [_requantized(ctx, acc, ratio, ctx.input(4), x)]
    dx = _dq(ctx, x, ctx.input(1), ctx.input(2))
    y = ctx.temp(rd.ReduceMean, dx, ctx.constant(np.array(axes, np.int64)), keepdims=True)
    return [_quantized(ctx, y, ctx.input(3), ctx.input(4), x)]


@contrib("QLinearConcat", "Y_scale Y_zero_point inputs...", ("axis",))
def qlinear_concat(ctx):
    """Inputs come in (X, X_scale, X_zero_point) triples, each requantised to Y's."""
    rest = ctx.inputs()[2:]
    if not rest or len(rest) % 3:
        raise ctx.error(f"QLinearConcat takes (X, scale, zero point) triples after Y's scale "
                        f"and zero point, got {len(rest)} inputs")
    if any(v is None for v in rest):
        raise ctx.error("QLinearConcat has an empty input among its triples")
    parts = [_dq(ctx, *rest[i:i + 3]) for i in range(0, len(rest), 3)]
    y = ctx.temp(tn.Concat, parts, axis=ctx.required_attr("axis"))
    return [_quantized(ctx, y, ctx.input(0), ctx.input(1), rest[0])]
