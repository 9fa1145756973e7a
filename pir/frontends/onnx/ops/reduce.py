"""ONNX reductions, ArgMax/ArgMin, CumSum/CumProd and TopK -> nn.

Older opsets are converted to the newest semantics: reduction axes given as an attribute
become a constant operand, and TopK's ``k`` attribute (opset < 10) a constant input.
"""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import reduce as rd

_REDUCE = {
    "ReduceSum": rd.ReduceSum, "ReduceMean": rd.ReduceMean, "ReduceMax": rd.ReduceMax,
    "ReduceMin": rd.ReduceMin, "ReduceProd": rd.ReduceProd, "ReduceL1": rd.ReduceL1,
    "ReduceL2": rd.ReduceL2, "ReduceLogSum": rd.ReduceLogSum,
    "ReduceLogSumExp": rd.ReduceLogSumExp, "ReduceSumSquare": rd.ReduceSumSquare,
}
#: The opset from which each reduction takes its axes as an input rather than an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13}


def given_attrs(ctx, *names: str) -> dict:
    """The listed attributes that the node sets (the op's declared defaults cover the rest,
    so the IR shows what the model said)."""
    return {n: ctx.attr(n) for n in names if ctx.has_attr(n)}


@converter(*_REDUCE)
def reduce(ctx):
    axes = ctx.input(1)
    if ctx.opset < _AXES_INPUT_SINCE.get(ctx.op_type, 18):
        listed = ctx.attr("axes")  # absent or empty: every axis
        axes = ctx.constant(np.array(listed, np.int64)) if listed else None
    attrs = given_attrs(ctx, "keepdims", "noop_with_empty_axes")
    return [ctx.value(_REDUCE[ctx.op_type], ctx.input(0), axes, **attrs)]


@converter("ArgMax", "ArgMin")
def arg_reduce(ctx):
    cls = rd.ArgMax if ctx.op_type == "ArgMax" else rd.ArgMin
    attrs = given_attrs(ctx, "axis", "keepdims", "select_last_index")
    return [ctx.value(cls, ctx.input(0), **attrs)]


@converter("CumSum", "CumProd")
def scan(ctx):
    cls = rd.CumSum if ctx.op_type == "CumSum" else rd.CumProd
    attrs = given_attrs(ctx, "exclusive", "reverse")
    return [ctx.value(cls, ctx.input(0), ctx.input(1), **attrs)]


@converter("TopK")
def top_k(ctx):
    if ctx.opset < 10:
        if not ctx.has_attr("k"):
            raise ctx.error("TopK before opset 10 needs the attribute 'k'")
        k = ctx.constant(np.array([ctx.attr("k")], np.int64))
    else:
        k = ctx.input(1)
    attrs = given_attrs(ctx, "axis", "largest", "sorted")  # largest, sorted: opset 11 on
    return ctx.emit(rd.TopK, ctx.input(0), k, **attrs).results
