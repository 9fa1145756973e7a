"""ONNX gather and scatter ops -> nn (Gather, GatherElements, GatherND, Scatter,
ScatterElements, ScatterND, TensorScatter, MaxUnpool)."""

from __future__ import annotations

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import indexing as ix


def direct(ctx, cls):
    """Emit ``cls`` with the node's inputs as its operands, in order, and the node's
    attributes of the same names (attributes the node does not set keep their defaults)."""
    operands = [ctx.input(i) for i in range(len(cls.signature.operands))]
    attrs = {name: ctx.attr(name) for name in cls.signature.attrs}
    return ctx.value(cls, *operands, **attrs)


# These ops kept their meaning across the opsets pir imports (7+): later versions only
# added types, negative indices, batch_dims or reductions, whose defaults are the old meaning.
_DIRECT = {
    "Gather": ix.Gather,
    "GatherElements": ix.GatherElements,
    "GatherND": ix.GatherND,
    "ScatterElements": ix.ScatterElements,
    "ScatterND": ix.ScatterND,
    "TensorScatter": ix.TensorScatter,
    "MaxUnpool": ix.MaxUnpool,
}


@converter(*_DIRECT)
def direct_op(ctx):
    return [direct(ctx, _DIRECT[ctx.op_type])]


@converter("Scatter")
def scatter(ctx):
    # Scatter (deprecated in opset 11) is ScatterElements without a reduction.
    return [direct(ctx, ix.ScatterElements)]
