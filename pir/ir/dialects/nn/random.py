"""Random numbers: ONNX RandomUniform/Normal(Like), Bernoulli, Multinomial, Dropout.

None of these is Pure: two random ops with equal operands must not be merged, and they are
never folded at import.  ``seed`` (a float, as in ONNX) makes an op draw the same numbers on
every run; without it each run draws fresh numbers.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import DTYPE, FLOAT, INT, INTS
from pir.ir.core import Operation
from pir.ir.dialects.nn.base import FLOATS
from pir.ir.opdef import attr, operand, result
from pir.ir.typerules import tensor
from pir.ir.types import DType, TensorType

__all__ = ["RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike",
           "Bernoulli", "Multinomial", "Dropout"]

_SEED_DOC = "makes the op deterministic; absent: fresh numbers on every run"


class _Random(Operation):
    """A tensor of random numbers of a shape given by the ``shape`` attribute."""

    seed = attr(FLOAT, None, _SEED_DOC)
    dtype = attr(DTYPE, DType.F32)
    shape = attr(INTS)
    out = result(dtypes=FLOATS)

    def infer(self):
        if any(d < 0 for d in self.shape):
            raise PirError(f"shape {list(self.shape)} has a negative dim")
        return [TensorType(self.dtype, tuple(self.shape))]


class _RandomLike(Operation):
    """A tensor of random numbers shaped like ``input``, of ``dtype`` (default: input's)."""

    input = operand()
    seed = attr(FLOAT, None, _SEED_DOC)
    dtype = attr(DTYPE, None, "defaults to the input's element type")
    out = result(dtypes=FLOATS)

    def infer(self):
        t = tensor(self.input)
        return [t.with_dtype(self.dtype or t.dtype)]


class RandomUniform(_Random):
    """Samples uniformly from [low, high)."""

    name = "nn.random_uniform"
    low = attr(FLOAT, 0.0)
    high = attr(FLOAT, 1.0)


class RandomNormal(_Random):
    """Samples from the normal distribution N(mean, scale^2)."""

    name = "nn.random_normal"
    mean = attr(FLOAT, 0.0)
    scale = attr(FLOAT, 1.0)


class RandomUniformLike(_RandomLike):
    """Samples uniformly from [low, high), shaped like the input."""

    name = "nn.random_uniform_like"
    low = attr(FLOAT, 0.0)
    high = attr(FLOAT, 1.0)


class RandomNormalLike(_RandomLike):
    """Samples from N(mean, scale^2), shaped like the input."""

    name = "nn.random_normal_like"
    mean = attr(FLOAT, 0.0)
    scale = attr(FLOAT, 1.0)


class Bernoulli(_RandomLike):
    """y = 1 with probability input, else 0, elementwise (input holds probabilities)."""

    name = "nn.bernoulli"
    input = operand(dtypes=FLOATS)
    out = result()


class Multinomial(Operation):
    """Draws sample_size class indices per batch row from the unnormalised log-probabilities
    input [batch, classes]; the result is [batch, sample_size] of dtype i32 or i64."""

    name = "nn.multinomial"
    input = operand(dtypes=FLOATS)
    dtype = attr(DTYPE, DType.I32)
    sample_size = attr(INT, 1)
    seed = attr(FLOAT, None, _SEED_DOC)
    out = result(dtypes={DType.I32, DType.I64})

    def infer(self):
        t = tensor(self.input)
        if t.shape is not None and len(t.shape) != 2:
            raise PirError(f"input must be [batch, classes], got {t}")
        batch = None if t.shape is None else t.shape[0]
        return [TensorType(self.dtype, (batch, self.sample_size))]


class Dropout(Operation):
    """With training_mode true: output = data * mask / (1 - ratio), where mask drops each
    element with probability ratio (default 0.5); otherwise output = data and mask is all true.
    """

    name = "nn.dropout"
    data = operand()
    ratio = operand(optional=True, dtypes=FLOATS)
    training_mode = operand(optional=True, dtypes={DType.BOOL})
    seed = attr(INT, None, _SEED_DOC)
    output = result()
    mask = result(dtypes={DType.BOOL})

    def infer(self):
        t = tensor(self.data)
        return [t, t.with_dtype(DType.BOOL)]

    def verify_(self):
        for v, what in ((self.ratio, "ratio"), (self.training_mode, "training_mode")):
            if v is not None and tensor(v).shape not in (None, ()):
                raise PirError(f"{what} must be a scalar, got {v.type}")
