"""ONNX elementwise math, bitwise and logical ops, comparisons, Max/Min/Sum/Mean, Where -> nn.

Every op here kept its meaning from opset 7 on (older versions only differed in the types they
accepted, or in the broadcasting of Max/Min/Sum/Mean, which numpy broadcasting covers), so most
converters are table-driven one-to-one maps.
"""

from __future__ import annotations

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import elementwise as ew

_UNARY = {
    "Abs": ew.Abs, "Neg": ew.Neg, "Sign": ew.Sign, "Exp": ew.Exp, "Log": ew.Log,
    "Sqrt": ew.Sqrt, "Reciprocal": ew.Reciprocal, "Sin": ew.Sin, "Cos": ew.Cos, "Tan": ew.Tan,
    "Asin": ew.Asin, "Acos": ew.Acos, "Atan": ew.Atan, "Sinh": ew.Sinh, "Cosh": ew.Cosh,
    "Asinh": ew.Asinh, "Acosh": ew.Acosh, "Atanh": ew.Atanh, "Ceil": ew.Ceil,
    "Floor": ew.Floor, "Round": ew.Round, "Erf": ew.Erf, "IsNaN": ew.IsNaN, "Not": ew.Not,
    "BitwiseNot": ew.BitwiseNot,
}

_BINARY = {
    "Add": ew.Add, "Sub": ew.Sub, "Mul": ew.Mul, "Div": ew.Div, "Pow": ew.Pow,
    "BitwiseAnd": ew.BitwiseAnd, "BitwiseOr": ew.BitwiseOr, "BitwiseXor": ew.BitwiseXor,
    "And": ew.And, "Or": ew.Or, "Xor": ew.Xor, "Equal": ew.Equal, "Less": ew.Less,
    "LessOrEqual": ew.LessOrEqual, "Greater": ew.Greater, "GreaterOrEqual": ew.GreaterOrEqual,
}

_VARIADIC = {"Max": ew.Max, "Min": ew.Min, "Sum": ew.Sum, "Mean": ew.Mean}


@converter(*_UNARY)
def unary(ctx):
    return [ctx.value(_UNARY[ctx.op_type], ctx.input(0))]


@converter(*_BINARY)
def binary(ctx):
    return [ctx.value(_BINARY[ctx.op_type], ctx.input(0), ctx.input(1))]


@converter(*_VARIADIC)
def variadic(ctx):
    inputs = [v for v in ctx.inputs() if v is not None]
    return [ctx.value(_VARIADIC[ctx.op_type], inputs)]


@converter("Mod")
def mod(ctx):
    return [ctx.value(ew.Mod, ctx.input(0), ctx.input(1), fmod=ctx.attr("fmod"))]


@converter("BitShift")
def bit_shift(ctx):
    return [ctx.value(ew.BitShift, ctx.input(0), ctx.input(1), direction=ctx.attr("direction"))]


@converter("IsInf")
def is_inf(ctx):
    return [ctx.value(ew.IsInf, ctx.input(0), detect_negative=ctx.attr("detect_negative"),
                      detect_positive=ctx.attr("detect_positive"))]


@converter("Where")
def where(ctx):
    return [ctx.value(ew.Where, ctx.input(0), ctx.input(1), ctx.input(2))]
