"""ONNX convolutions -> nn: Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv,
CausalConvWithState.

Every opset from 7 on has the newest semantics for these ops (later versions only widened the
element types), so the converters copy the inputs and attributes across.
"""

from __future__ import annotations

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import conv as nn

#: The window attributes, ONNX name -> nn name (the nn op defaults an absent one).
WINDOW_ATTRS = {"dilations": "dilations", "kernel_shape": "kernel_shape", "pads": "pads",
                "strides": "strides"}


def window_attrs(ctx, *extra: str) -> dict:
    """The node's window attributes plus ``extra`` ones (same name in ONNX and nn)."""
    names = dict(WINDOW_ATTRS, **{e: e for e in extra})
    return {ours: ctx.attr(theirs) for theirs, ours in names.items()}


#: ONNX op -> (nn op, number of inputs it takes, extra attributes).
_CONVS = {
    "Conv": (nn.Conv, 3, ("auto_pad", "group")),
    "ConvTranspose": (nn.ConvTranspose, 3,
                      ("auto_pad", "group", "output_padding", "output_shape")),
    "ConvInteger": (nn.ConvInteger, 4, ("auto_pad", "group")),
    "QLinearConv": (nn.QLinearConv, 9, ("auto_pad", "group")),
    "DeformConv": (nn.DeformConv, 5, ("group", "offset_group")),
}


@converter(*_CONVS)
def conv(ctx):
    cls, n_inputs, extra = _CONVS[ctx.op_type]
    operands = [ctx.input(i) for i in range(n_inputs)]
    return [ctx.value(cls, *operands, **window_attrs(ctx, *extra))]


@converter("CausalConvWithState")
def causal_conv_with_state(ctx):
    op = ctx.emit(nn.CausalConvWithState, ctx.input(0), ctx.input(1), ctx.input(2),
                  ctx.input(3), activation=ctx.attr("activation"))
    return op.results
