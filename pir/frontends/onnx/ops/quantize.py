"""ONNX linear quantisation -> nn."""

from __future__ import annotations

from pir.frontends.onnx.importer import dtype_from_onnx
from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import quantize as q


def dtype_attr(ctx, name: str):
    """An ONNX element-type attribute (0 or absent: not set) as a DType."""
    code = ctx.attr(name, 0)
    return dtype_from_onnx(code) if code else None


@converter("QuantizeLinear")
def quantize_linear(ctx):
    # Attributes arrived over time (axis 13, saturate 19, block_size and output_dtype 21,
    # precision 23); their defaults give the older opsets' behaviour.
    attrs = {"axis": ctx.attr("axis", 1), "saturate": ctx.attr("saturate", 1),
             "block_size": ctx.attr("block_size", 0), "output_dtype": dtype_attr(ctx, "output_dtype"),
             "precision": dtype_attr(ctx, "precision")}
    return [ctx.value(q.QuantizeLinear, ctx.input(0), ctx.input(1), ctx.input(2), **attrs)]


@converter("DequantizeLinear")
def dequantize_linear(ctx):
    attrs = {"axis": ctx.attr("axis", 1), "block_size": ctx.attr("block_size", 0),
             "output_dtype": dtype_attr(ctx, "output_dtype")}
    return [ctx.value(q.DequantizeLinear, ctx.input(0), ctx.input(1), ctx.input(2), **attrs)]


@converter("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx):
    return list(ctx.emit(q.DynamicQuantizeLinear, ctx.input(0)).results)


@converter("MatMulInteger")
def matmul_integer(ctx):
    return [ctx.value(q.MatMulInteger, *(ctx.input(i) for i in range(4)))]


@converter("QLinearMatMul")
def qlinear_matmul(ctx):
    return [ctx.value(q.QLinearMatMul, *(ctx.input(i) for i in range(8)))]
