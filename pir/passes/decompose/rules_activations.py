"""Decomposition rules for activation functions and Clip.

Each float activation is a small formula on prims, written as ``f(b, x, op)`` in the table
``FORMULAS`` and wrapped by :func:`~pir.passes.decompose.rules_elementwise.widened`, which
computes it in f32 for narrow floats and rounds once, as the nn op does.  The formulas follow
ONNX's definitions, in forms that neither overflow nor lose precision where ONNX Runtime's
kernels do not: softplus is ``max(x, 0) + log1p(exp(-|x|))``, ELU-like ops use ``expm1``.
"""

from __future__ import annotations

import math

from pir.ir.core import Operation, Value
from pir.ir.typerules import tensor
from pir.ir.types import DType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes
from pir.passes.decompose.rules_elementwise import (
    compute_dtype,
    select,
    widened,
)

# -- one prim op each -----------------------------------------------------------------------


@decomposes("nn.sigmoid")
def sigmoid(b: PrimBuilder, op: Operation) -> list[Value]:
    """prim.logistic (whose evaluation is stable for large |x|)."""
    return [b.op("logistic", op.x)]


@decomposes("nn.tanh")
def tanh(b: PrimBuilder, op: Operation) -> list[Value]:
    return [b.op("tanh", op.x)]


@decomposes("nn.relu")
def relu(b: PrimBuilder, op: Operation) -> list[Value]:
    """max(x, 0); for integers too, and exact in any precision."""
    return [b.max(op.x, b.scalar_like(0, op.x))]


@decomposes("nn.p_relu")
def p_relu(b: PrimBuilder, op: Operation) -> list[Value]:
    """x >= 0 ? x : slope * x, the slope broadcast to x's shape (one rounding: no widening)."""
    zero = b.scalar_like(0, op.x)
    return [select(b, b.binary("ge", op.x, zero), op.x, b.mul(op.x, op.slope))]


# -- float formulas -------------------------------------------------------------------------


def _softplus(b: PrimBuilder, x: Value) -> Value:
    """ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|): e^-|x| <= 1 never overflows, and log1p
    keeps the small tail exact for large |x|."""
    tail = b.op("log1p", b.op("exp", b.op("neg", b.op("abs", x))))
    return b.add(b.max(x, b.scalar_like(0, x)), tail)


def _expm1_branch(b: PrimBuilder, x: Value, alpha: float) -> Value:
    """x > 0 ? x : alpha * (e^x - 1), the negative side of ELU and SELU."""
    negative = b.mul(b.scalar_like(alpha, x), b.op("expm1", x))
    return select(b, b.binary("gt", x, b.scalar_like(0, x)), x, negative)


def _clamp01(b: PrimBuilder, x: Value) -> Value:
    """min(max(x, 0), 1): NaN stays NaN, as with numpy's clip."""
    return b.min(b.max(x, b.scalar_like(0, x)), b.scalar_like(1, x))


def leaky_relu(b: PrimBuilder, x: Value, op: Operation) -> Value:
    """x >= 0 ? x : alpha * x."""
    return select(b, b.binary("ge", x, b.scalar_like(0, x)), x, b.mul(b.scalar_like(op.alpha, x), x))


def elu(b: PrimBuilder, x: Value, op: Operation) -> Value:
    return _expm1_branch(b, x, op.alpha)


def selu(b: PrimBuilder, x: Value, op: Operation) -> Value:
    """gamma * elu(x, alpha)."""
    return b.mul(b.scalar_like(op.gamma, x), _expm1_branch(b, x, op.alpha))


def celu(b: PrimBuilder, x: Value, op: Operation) -> Value:
    """max(0, x) + min(0, alpha * (e^(x / alpha) - 1))."""
    alpha = b.scalar_like(op.alpha, x)
    zero = b.scalar_like(0, x)
    negative = b.mul(alpha, b.op("expm1", b.div(x, alpha)))
    return b.add(b.max(x, zero), b.min(negative, zero))


def hard_sigmoid(b: PrimBuilder, x: Value, op: Operation) -> Value:
    """clamp(alpha * x + beta, 0, 1)."""
    return _clamp01(b, b.add(b.mul(b.scalar_like(op.alpha, x), x), b.scalar_like(op.beta, x)))


def hard_swish(b: PrimBuilder, x: Value, op: Operation) -> Value:
    """x * clamp(x / 6 + 1/2, 0, 1)."""
    return b.mul(x, _clamp01(b, b.add(b.div(x, b.scalar_like(6, x)), b.scalar_like(0.5, x))))


def softplus(b: PrimBuilder, x: Value, op: Operation) -> Value:
    return _softplus(b, x)


def softsign(b: PrimBuilder, x: Value, op: Operation) -> Value:
    """x / (1 + |x|)."""
    return b.div(x, b.add(b.scalar_like(1, x), b.op("abs", x)))


def gelu(b: PrimBuilder, x: Value, op: Operation) -> Value:
    """x/2 * (1 + erf(x / sqrt 2)), or x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""
    if op.approximate == "tanh":
        cube = b.mul(b.mul(x, x), x)
        inner = b.add(x, b.mul(b.scalar_like(0.044715, x), cube))
        core = b.op("tanh", b.mul(b.scalar_like(math.sqrt(2 / math.pi), x), inner))
    else:
        core = b.op("erf", b.mul(x, b.scalar_like(math.sqrt(0.5), x)))
    return b.mul(b.mul(b.scalar_like(0.5, x), x), b.add(b.scalar_like(1, x), core))


def mish(b: PrimBuilder, x: Value, op: Operation) -> Value:
    """x * tanh(softplus(x))."""
    return b.mul(x, b.op("tanh", _softplus(b, x)))


def swish(b: PrimBuilder, x: Value, op: Operation) -> Value:
    """x * sigmoid(alpha * x)."""
    scaled = x if op.alpha == 1.0 else b.mul(b.scalar_like(op.alpha, x), x)
    return b.mul(x, b.op("logistic", scaled))


def thresholded_relu(b: PrimBuilder, x: Value, op: Operation) -> Value:
    """x > alpha ? x : 0."""
    return select(b, b.binary("gt", x, b.scalar_like(op.alpha, x)), x, b.scalar_like(0, x))


FORMULAS = {
    "nn.leaky_relu": leaky_relu, "nn.elu": elu, "nn.selu": selu, "nn.celu": celu,
    "nn.hard_sigmoid": hard_sigmoid, "nn.hard_swish": hard_swish, "nn.softplus": softplus,
    "nn.softsign": softsign, "nn.gelu": gelu, "nn.mish": mish, "nn.swish": swish,
    "nn.thresholded_relu": thresholded_relu,
}
for _name, _formula in FORMULAS.items():
    decomposes(_name)(widened(_formula))


@decomposes("nn.shrink")
def shrink(b: PrimBuilder, op: Operation) -> list[Value]:
    """x < -lambd ? x + bias : x > lambd ? x - bias : 0.  Integers compute in f64 (the
    attributes are floats) and truncate back, as the nn op does."""
    dtype = tensor(op.x).dtype
    x = b.cast(op.x, DType.F64 if dtype.is_int else compute_dtype(dtype))
    lambd, bias, zero = b.scalar_like(op.lambd, x), b.scalar_like(op.bias, x), b.scalar_like(0, x)
    above = select(b, b.binary("gt", x, lambd), b.sub(x, bias), zero)
    below = b.binary("lt", x, b.op("neg", lambd))
    return [b.cast(select(b, below, b.add(x, bias), above), dtype)]


# -- clip -----------------------------------------------------------------------------------


def _bound(b: PrimBuilder, v: Value) -> Value:
    """A bound of Clip as a rank-0 tensor (ONNX allows any all-ones shape)."""
    shape = tensor(v).shape
    if shape is None:
        raise Keep("needs the rank of the clip bounds")
    return b.reshape(v, ())


@decomposes("nn.clip")
def clip(b: PrimBuilder, op: Operation) -> list[Value]:
    """min(max(x, lo), hi), each bound only when present; max first, so every element is hi
    where lo > hi (ONNX's rule).  prim.max/min keep NaN, as numpy's clip does."""
    y = op.x
    if op.min is not None:
        y = b.max(y, _bound(b, op.min))
    if op.max is not None:
        y = b.min(y, _bound(b, op.max))
    return [y]
