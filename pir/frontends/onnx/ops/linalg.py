"""ONNX matrix products and the determinant -> nn."""

from __future__ import annotations

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import linalg as la


@converter("MatMul")
def matmul(ctx):
    return [ctx.value(la.MatMul, ctx.input(0), ctx.input(1))]


@converter("Gemm")
def gemm(ctx):
    # Gemm-7+ broadcasts C; C became optional at 11 (an absent input reads as None either way).
    attrs = {"alpha": ctx.attr("alpha", 1.0), "beta": ctx.attr("beta", 1.0),
             "trans_a": ctx.attr("transA", 0), "trans_b": ctx.attr("transB", 0)}
    return [ctx.value(la.Gemm, ctx.input(0), ctx.input(1), ctx.input(2), **attrs)]


@converter("Einsum")
def einsum(ctx):
    return [ctx.value(la.Einsum, ctx.inputs(), equation=ctx.attr("equation"))]


@converter("Det")
def det(ctx):
    return [ctx.value(la.Det, ctx.input(0))]
