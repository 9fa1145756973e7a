"""Reference rules for activation functions and Clip.

Each rule computes in f32 or f64 (see ``float_math``) and rounds to x's type once at the end.
"""

from __future__ import annotations

import math

import numpy as np

from pir.runtimes.reference.registry import evaluates, operand_arrays
from pir.runtimes.reference.rules.elementwise import erf, float_math, wide


def _sigmoid(x):
    # exp of a negative argument only, so neither branch overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softplus(x):
    return np.logaddexp(0, x)  # ln(1 + e^x) without overflow for large x


def _gelu(x, approximate):
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
        return 0.5 * x * (1 + np.tanh(inner))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


#: op name -> f(op, x) on a widened float array.
_ACTIVATIONS = {
    "nn.relu": lambda op, x: np.maximum(x, 0),
    "nn.leaky_relu": lambda op, x: np.where(x >= 0, x, op.alpha * x),
    "nn.elu": lambda op, x: np.where(x > 0, x, op.alpha * np.expm1(x)),
    "nn.selu": lambda op, x: op.gamma * np.where(x > 0, x, op.alpha * np.expm1(x)),
    "nn.celu": lambda op, x: (np.maximum(0, x)
                              + np.minimum(0, op.alpha * np.expm1(x / op.alpha))),
    "nn.sigmoid": lambda op, x: _sigmoid(x),
    "nn.hard_sigmoid": lambda op, x: np.clip(op.alpha * x + op.beta, 0, 1),
    "nn.hard_swish": lambda op, x: x * np.clip(x / 6 + 0.5, 0, 1),
    "nn.softplus": lambda op, x: _softplus(x),
    "nn.softsign": lambda op, x: x / (1 + np.abs(x)),
    "nn.gelu": lambda op, x: _gelu(x, op.approximate),
    "nn.mish": lambda op, x: x * np.tanh(_softplus(x)),
    "nn.swish": lambda op, x: x * _sigmoid(op.alpha * x),
    "nn.thresholded_relu": lambda op, x: np.where(x > op.alpha, x, 0),
    "nn.tanh": lambda op, x: np.tanh(x),
}


def _activation(fn):
    return lambda op, x: float_math(lambda w: fn(op, w))(op, x)


for _name, _fn in _ACTIVATIONS.items():
    evaluates(_name)(_activation(_fn))


@evaluates("nn.p_relu")
def p_relu(op, x, slope):
    return float_math(lambda a, s: np.where(a >= 0, a, s * a))(op, x, slope)


@evaluates("nn.shrink")
def shrink(op, x):
    # In f64 so that integer inputs can take the float bias, then back to x's type.
    w = x.astype(np.float64)
    out = np.where(w < -op.lambd, w + op.bias, np.where(w > op.lambd, w - op.bias, 0.0))
    return out.astype(x.dtype)


@evaluates("nn.clip")
def clip(op, *arrays):
    args = operand_arrays(op, arrays)
    out = wide(args["x"])
    # max after min, so that every element becomes max where min > max (as ONNX says).
    if args["min"] is not None:
        out = np.maximum(out, wide(args["min"]).reshape(()))
    if args["max"] is not None:
        out = np.minimum(out, wide(args["max"]).reshape(()))
    return np.array(out, dtype=args["x"].dtype)
