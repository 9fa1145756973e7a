"""ONNX elementwise math -> nn."""

from __future__ import annotations

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import elementwise as ew

_BINARY = {"Add": ew.Add, "Sub": ew.Sub, "Mul": ew.Mul, "Div": ew.Div}
_UNARY = {"Relu": ew.Relu}


@converter(*_BINARY)
def binary(ctx):
    return [ctx.value(_BINARY[ctx.op_type], ctx.input(0), ctx.input(1))]


@converter(*_UNARY)
def unary(ctx):
    return [ctx.value(_UNARY[ctx.op_type], ctx.input(0))]
