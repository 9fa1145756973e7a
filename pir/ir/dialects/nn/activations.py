"""Activation functions: elementwise nonlinearities, most of them float-only, plus Clip.

Attributes keep ONNX's names and defaults, so ``nn.leaky_relu`` with no ``alpha`` means
ONNX's default slope of 0.01.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import FLOAT, STR
from pir.ir.core import Operation
from pir.ir.dialects.nn.base import UnaryOp
from pir.ir.dialects.nn.elementwise import (
    ARITH,
    SIGNED_INTS,
    STD_FLOATS,
    STD_INTS,
    FloatUnary,
    check_same_dtype,
)
from pir.ir.opdef import Elementwise, Pure, attr, operand, result
from pir.ir.typerules import broadcast_shapes, tensor
from pir.ir.types import DType


class Relu(UnaryOp):
    """y = max(x, 0)."""

    name = "nn.relu"
    x = operand(dtypes=STD_FLOATS | SIGNED_INTS)


class LeakyRelu(FloatUnary):
    """y = x if x >= 0 else alpha * x."""

    name = "nn.leaky_relu"
    alpha = attr(FLOAT, 0.01)


class PRelu(Operation):
    """y = x if x >= 0 else slope * x, where slope broadcasts to x's shape."""

    name = "nn.p_relu"
    traits = frozenset({Pure, Elementwise})
    x = operand(dtypes=STD_FLOATS | {DType.I32, DType.I64, DType.U32, DType.U64})
    slope = operand(dtypes=STD_FLOATS | {DType.I32, DType.I64, DType.U32, DType.U64})
    y = result()

    def infer(self):
        check_same_dtype([self.x, self.slope])
        tx, ts = tensor(self.x), tensor(self.slope)
        if tx.shape is not None and ts.shape is not None:
            # ONNX broadcasts slope to x in one direction only: the result keeps x's shape.
            out = broadcast_shapes(tx.shape, ts.shape)
            if len(ts.shape) > len(tx.shape) or any(
                    isinstance(o, int) and isinstance(d, int) and o != d
                    for o, d in zip(out, tx.shape)):
                raise PirError(f"slope of shape {ts} does not broadcast to x's shape {tx}")
        return [tx]


class Elu(FloatUnary):
    """y = x if x > 0 else alpha * (exp(x) - 1)."""

    name = "nn.elu"
    alpha = attr(FLOAT, 1.0)


class Selu(FloatUnary):
    """y = gamma * (x if x > 0 else alpha * (exp(x) - 1))."""

    name = "nn.selu"
    alpha = attr(FLOAT, 1.67326319217681884765625)
    gamma = attr(FLOAT, 1.05070102214813232421875)


class Celu(FloatUnary):
    """y = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    name = "nn.celu"
    alpha = attr(FLOAT, 1.0)


class Sigmoid(FloatUnary):
    """y = 1 / (1 + exp(-x))."""

    name = "nn.sigmoid"


class HardSigmoid(FloatUnary):
    """y = max(0, min(1, alpha * x + beta))."""

    name = "nn.hard_sigmoid"
    alpha = attr(FLOAT, 0.2)
    beta = attr(FLOAT, 0.5)


class HardSwish(FloatUnary):
    """y = x * max(0, min(1, x / 6 + 1 / 2))."""

    name = "nn.hard_swish"


class Softplus(FloatUnary):
    """y = ln(1 + exp(x))."""

    name = "nn.softplus"


class Softsign(FloatUnary):
    """y = x / (1 + |x|)."""

    name = "nn.softsign"


class Gelu(FloatUnary):
    """y = x/2 * (1 + erf(x / sqrt 2)), or with approximate="tanh"
    x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""

    name = "nn.gelu"
    approximate = attr(STR, "none")

    def verify_(self):
        if self.approximate not in ("none", "tanh"):
            raise PirError(f"approximate must be 'none' or 'tanh', got '{self.approximate}'")


class Mish(FloatUnary):
    """y = x * tanh(softplus(x))."""

    name = "nn.mish"


class Swish(FloatUnary):
    """y = x * sigmoid(alpha * x)."""

    name = "nn.swish"
    alpha = attr(FLOAT, 1.0)


class ThresholdedRelu(FloatUnary):
    """y = x if x > alpha else 0."""

    name = "nn.thresholded_relu"
    alpha = attr(FLOAT, 1.0)


class Shrink(UnaryOp):
    """y = x + bias if x < -lambd, x - bias if x > lambd, else 0."""

    name = "nn.shrink"
    x = operand(dtypes=(STD_FLOATS - {DType.BF16}) | STD_INTS)
    bias = attr(FLOAT, 0.0)
    lambd = attr(FLOAT, 0.5)


class Tanh(FloatUnary):
    """y = tanh(x)."""

    name = "nn.tanh"


class Clip(Operation):
    """y = min(max(x, min), max); an absent bound does not clip, and where min > max every
    element becomes max.  The bounds are scalars of x's element type."""

    name = "nn.clip"
    traits = frozenset({Pure, Elementwise})
    x = operand(dtypes=ARITH)
    min = operand(optional=True, dtypes=ARITH)
    max = operand(optional=True, dtypes=ARITH)
    y = result()

    def infer(self):
        bounds = [v for v in (self.min, self.max) if v is not None]
        check_same_dtype([self.x, *bounds])
        for which, v in (("min", self.min), ("max", self.max)):
            shape = None if v is None else tensor(v).shape
            if shape is not None and any(isinstance(d, int) and d != 1 for d in shape):
                raise PirError(f"the {which} bound must be a scalar, got {tensor(v)}")
        return [tensor(self.x)]
