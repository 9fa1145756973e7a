"""Reference rules for elementwise math, bitwise and logical ops, comparisons, the variadic
Max/Min/Sum/Mean, and Where.

Float math on narrow floats (f16, bf16, float8) runs in f32 and rounds once at the end, which
is what ONNX's own reference outputs are computed with.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from pir.runtimes.reference.registry import evaluates

__all__ = ["wide", "float_math"]

_NATIVE_WIDE = (np.dtype(np.float32), np.dtype(np.float64))


def wide(x: np.ndarray) -> np.ndarray:
    """x itself, or as f32 when it is a float narrower than f32 (f16, bf16, float8)."""
    if x.dtype.kind in "iub" or x.dtype in _NATIVE_WIDE or x.dtype == object:
        return x
    return x.astype(np.float32)


def float_math(fn):
    """A rule computing ``fn`` on the widened operands, cast back to the first one's type."""

    def rule(op, x, *rest):
        with np.errstate(all="ignore"):  # inf/NaN results are values here, not errors
            out = fn(wide(x), *(wide(r) for r in rest))
        return np.asarray(out).astype(x.dtype, copy=False)

    return rule


_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: np.ndarray) -> np.ndarray:
    """The Gauss error function (numpy has none; math.erf is exact to the last bit)."""
    return _erf(x).astype(x.dtype, copy=False)


_FLOAT_MATH = {
    "nn.abs": np.abs, "nn.neg": np.negative, "nn.sign": np.sign, "nn.exp": np.exp,
    "nn.log": np.log, "nn.sqrt": np.sqrt, "nn.reciprocal": np.reciprocal, "nn.sin": np.sin,
    "nn.cos": np.cos, "nn.tan": np.tan, "nn.asin": np.arcsin, "nn.acos": np.arccos,
    "nn.atan": np.arctan, "nn.sinh": np.sinh, "nn.cosh": np.cosh, "nn.asinh": np.arcsinh,
    "nn.acosh": np.arccosh, "nn.atanh": np.arctanh, "nn.ceil": np.ceil, "nn.floor": np.floor,
    "nn.round": np.round, "nn.erf": erf,
    "nn.add": np.add, "nn.sub": np.subtract, "nn.mul": np.multiply,
}
for _name, _fn in _FLOAT_MATH.items():
    evaluates(_name)(float_math(_fn))


@evaluates("nn.div")
def div(op, a, b):
    if a.dtype.kind not in "iu":
        return float_math(np.divide)(op, a, b)
    # ONNX integer division truncates toward zero; floor division rounds down, so step back
    # up by one where the remainder is nonzero and the signs differ.  Division by zero is
    # undefined in ONNX; numpy gives 0.
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        if a.dtype.kind == "i":
            q = q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(a.dtype)
    return q


@evaluates("nn.mod")
def mod(op, a, b):
    # numpy's remainder follows the divisor's sign and fmod the dividend's, with the special
    # cases (zeros, infinities, NaN) ONNX specifies for each.
    return float_math(np.fmod if op.fmod else np.remainder)(op, a, b)


@evaluates("nn.pow")
def pow_(op, a, b):
    if a.dtype.kind in "iu" and b.dtype.kind in "iu" and not np.any(b < 0):
        return np.power(a, b.astype(a.dtype))
    # Float math for float operands and for negative integer exponents, then back to a's type.
    with np.errstate(all="ignore"):
        out = np.power(wide(a).astype(np.float64), wide(b).astype(np.float64))
    if a.dtype.kind in "iu":
        out = np.trunc(out)
    return out.astype(a.dtype)


@evaluates("nn.bit_shift")
def bit_shift(op, x, y):
    bits = x.dtype.itemsize * 8
    outside = (y < 0) | (y >= bits)  # ONNX defines these; C and numpy do not
    shift = np.where(outside, 0, y).astype(x.dtype)
    if op.direction == "LEFT":
        shifted, fill = np.left_shift(x, shift), np.zeros((), x.dtype)
    else:
        shifted = np.right_shift(x, shift)  # arithmetic for signed types
        fill = np.where(x < 0, -1, 0).astype(x.dtype) if x.dtype.kind == "i" else 0
    return np.where(outside, fill, shifted).astype(x.dtype)


_EXACT = {
    "nn.bitwise_and": np.bitwise_and, "nn.bitwise_or": np.bitwise_or,
    "nn.bitwise_xor": np.bitwise_xor, "nn.bitwise_not": np.invert,
    "nn.and": np.logical_and, "nn.or": np.logical_or, "nn.xor": np.logical_xor,
    "nn.not": np.logical_not,
    "nn.less": np.less, "nn.less_or_equal": np.less_equal, "nn.greater": np.greater,
    "nn.greater_or_equal": np.greater_equal,
}


def _exact(fn):
    return lambda op, *arrays: fn(*arrays)


for _name, _fn in _EXACT.items():
    evaluates(_name)(_exact(_fn))


@evaluates("nn.equal")
def equal(op, a, b):
    return np.asarray(a == b, dtype=bool)  # also compares string (object) arrays


@evaluates("nn.is_nan")
def is_nan(op, x):
    return np.isnan(wide(x))


@evaluates("nn.is_inf")
def is_inf(op, x):
    x = wide(x)
    return (np.isposinf(x) & op.detect_positive) | (np.isneginf(x) & op.detect_negative)


def _fold(fn):
    """A variadic rule folding ``fn`` over the operands."""
    return float_math(lambda *arrays: functools.reduce(fn, arrays))


evaluates("nn.max")(_fold(np.maximum))
evaluates("nn.min")(_fold(np.minimum))
evaluates("nn.sum")(_fold(np.add))


@evaluates("nn.mean")
def mean(op, *arrays):
    return float_math(lambda *xs: functools.reduce(np.add, xs) / len(xs))(op, *arrays)


@evaluates("nn.where")
def where(op, condition, x, y):
    return np.where(condition, x, y)
