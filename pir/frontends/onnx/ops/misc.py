"""ONNX preview-training optimizers (ai.onnx.preview.training) -> nn.adagrad, nn.adam,
nn.momentum."""

from __future__ import annotations

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import misc

_TRAINING = "ai.onnx.preview.training"
_OPS = {"Adagrad": misc.Adagrad, "Adam": misc.Adam, "Momentum": misc.Momentum}


@converter(*_OPS, domain=_TRAINING)
def optimizer(ctx):
    cls = _OPS[ctx.op_type]
    attrs = {name: ctx.attr(name) for name in cls.signature.attrs}
    inputs = [ctx.input(i) for i in range(2, ctx.num_inputs)]
    return ctx.emit(cls, ctx.input(0), ctx.input(1), inputs, **attrs).results
