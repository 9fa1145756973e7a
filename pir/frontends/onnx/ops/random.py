"""ONNX random ops and Dropout -> nn.random_*, nn.bernoulli, nn.multinomial, nn.dropout."""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.importer import dtype_from_onnx
from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import random as rnd
from pir.ir.dialects.nn.cast import Cast

#: op type -> (nn op, its distribution attributes)
_GENERATORS = {
    "RandomUniform": (rnd.RandomUniform, ("low", "high")),
    "RandomNormal": (rnd.RandomNormal, ("mean", "scale")),
    "RandomUniformLike": (rnd.RandomUniformLike, ("low", "high")),
    "RandomNormalLike": (rnd.RandomNormalLike, ("mean", "scale")),
    "Bernoulli": (rnd.Bernoulli, ()),
    "Multinomial": (rnd.Multinomial, ("sample_size",)),
}


def _dtype(ctx):
    """The ``dtype`` attribute as an element type (None when absent)."""
    code = ctx.attr("dtype")
    return None if code is None else dtype_from_onnx(code)


@converter(*_GENERATORS)
def generator(ctx):
    cls, names = _GENERATORS[ctx.op_type]
    attrs = {name: ctx.attr(name) for name in names}
    if ctx.has_attr("shape"):
        attrs["shape"] = ctx.attr("shape")
    operands = [ctx.input(0)] if ctx.num_inputs else []
    return [ctx.value(cls, *operands, seed=ctx.attr("seed"), dtype=_dtype(ctx), **attrs)]


@converter("Dropout")
def dropout(ctx):
    """Always an nn.dropout, even in inference mode (where it is the identity), so that the
    node's outputs are values of their own; canonicalisation may remove it."""
    data = ctx.input(0)
    if ctx.opset >= 12:
        op = ctx.emit(rnd.Dropout, data, ctx.input(1), ctx.input(2), seed=ctx.attr("seed"))
        return op.results[:ctx.num_outputs]
    # Before opset 12 there is no training mode: the op runs in inference mode, and before
    # opset 10 its mask has the data's element type.
    op = ctx.emit(rnd.Dropout, data, ctx.constant(np.float32(ctx.attr("ratio", 0.5))))
    output, mask = op.results
    if ctx.opset < 10 and ctx.output_present(1):
        mask.name = f"{mask.name}.bool"
        mask = ctx.value(Cast, mask, to=data.type.dtype, outputs=[1])
    return [output, mask][:ctx.num_outputs]
