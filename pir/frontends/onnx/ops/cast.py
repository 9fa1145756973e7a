"""ONNX Cast, CastLike and BitCast -> nn.cast / nn.bit_cast."""

from __future__ import annotations

from pir.errors import PirError
from pir.frontends.onnx.importer import dtype_from_onnx
from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import cast as nn_cast


def _to(ctx):
    to = ctx.attr("to")
    if to is None:
        raise ctx.error("missing attribute 'to'")
    try:
        return dtype_from_onnx(to)
    except PirError as e:
        raise ctx.error(f"'to': {e.message}") from None


@converter("Cast")
def cast(ctx):
    # saturate (opset 19) and round_mode (opset 24) are absent in older models: the defaults
    # then give the older behaviour.
    return [ctx.value(nn_cast.Cast, ctx.input(0), to=_to(ctx), saturate=ctx.attr("saturate"),
                      round_mode=ctx.attr("round_mode"))]


@converter("CastLike")
def cast_like(ctx):
    # The target element type is the second input's, which the IR knows statically.
    to = ctx.input(1).type.dtype
    return [ctx.value(nn_cast.Cast, ctx.input(0), to=to, saturate=ctx.attr("saturate"),
                      round_mode=ctx.attr("round_mode"))]


@converter("BitCast")
def bit_cast(ctx):
    return [ctx.value(nn_cast.BitCast, ctx.input(0), to=_to(ctx))]
