"""ONNX activation functions and Clip -> nn.

Each activation maps to one nn op that takes the node's attributes under the same names; an
attribute the node does not set is left out, so the op's default (ONNX's) applies.
"""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import activations as act

#: ONNX op -> (nn op, the ONNX attributes it takes).  Attribute names are already snake case.
_ACTIVATIONS = {
    "Relu": (act.Relu, ()),
    "LeakyRelu": (act.LeakyRelu, ("alpha",)),
    "Elu": (act.Elu, ("alpha",)),
    "Selu": (act.Selu, ("alpha", "gamma")),
    "Celu": (act.Celu, ("alpha",)),
    "Sigmoid": (act.Sigmoid, ()),
    "HardSigmoid": (act.HardSigmoid, ("alpha", "beta")),
    "HardSwish": (act.HardSwish, ()),
    "Softplus": (act.Softplus, ()),
    "Softsign": (act.Softsign, ()),
    "Gelu": (act.Gelu, ("approximate",)),
    "Mish": (act.Mish, ()),
    "Swish": (act.Swish, ("alpha",)),
    "ThresholdedRelu": (act.ThresholdedRelu, ("alpha",)),
    "Shrink": (act.Shrink, ("bias", "lambd")),
    "Tanh": (act.Tanh, ()),
}


@converter(*_ACTIVATIONS)
def activation(ctx):
    cls, names = _ACTIVATIONS[ctx.op_type]
    attrs = {k: ctx.attr(k) for k in names}
    return [ctx.value(cls, ctx.input(0), **attrs)]


@converter("PRelu")
def prelu(ctx):
    return [ctx.value(act.PRelu, ctx.input(0), ctx.input(1))]


@converter("Clip")
def clip(ctx):
    x = ctx.input(0)
    if ctx.opset >= 11:
        return [ctx.value(act.Clip, x, ctx.input(1), ctx.input(2))]
    # Before opset 11 the bounds were float attributes; they became optional inputs.
    dtype = x.type.dtype.numpy
    bounds = [ctx.attr(k) for k in ("min", "max")]
    lo, hi = (None if b is None else ctx.constant(np.array(b, dtype=dtype)) for b in bounds)
    return [ctx.value(act.Clip, x, lo, hi)]
