"""ONNX RNN, GRU and LSTM -> nn.rnn, nn.gru, nn.lstm (same inputs and attributes)."""

from __future__ import annotations

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import recurrent as rec

_OPS = {"RNN": rec.RNN, "GRU": rec.GRU, "LSTM": rec.LSTM}
_COMMON_ATTRS = ("activation_alpha", "activation_beta", "activations", "clip", "direction",
                 "hidden_size", "layout")
_EXTRA_ATTRS = {"GRU": ("linear_before_reset",), "LSTM": ("input_forget",)}


@converter(*_OPS)
def recurrent(ctx):
    cls = _OPS[ctx.op_type]
    n_inputs = len(cls.signature.operands)
    operands = [ctx.input(i) for i in range(n_inputs)]
    names = _COMMON_ATTRS + _EXTRA_ATTRS.get(ctx.op_type, ())
    attrs = {name: ctx.attr(name) for name in names}  # absent ones (None) are left out
    op = ctx.emit(cls, *operands, **attrs)
    return [r if ctx.output_present(i) else None
            for i, r in enumerate(op.results[:len(ctx.node.output)])]
