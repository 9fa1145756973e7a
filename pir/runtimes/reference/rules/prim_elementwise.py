"""Reference rules for the elementwise prims: one table of numpy functions per op shape.

Float math runs in at least f32 (see ``in_compute_dtype``); IEEE special values are the
semantics (log(0) = -inf), so numpy's floating-point warnings are silenced.
"""

from __future__ import annotations

import math

import numpy as np

from pir.ir.dialects.prim.elementwise import BINARY, COMPARE, PREDICATES, UNARY
from pir.ir.types import DType
from pir.runtimes.reference.registry import evaluates
from pir.runtimes.reference.rules.prim_common import in_compute_dtype

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _logistic(x):
    # Two branches so that neither exp overflows: e**-x for x >= 0, e**x below.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _not(x):
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


UNARY_FN = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "log1p": np.log1p,
    "expm1": np.expm1, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "erf": _erf, "logistic": _logistic,
    "sign": np.sign, "floor": np.floor, "ceil": np.ceil, "round": np.rint,
    "reciprocal": lambda x: 1 / x, "not": _not,
}
PREDICATE_FN = {"is_nan": np.isnan, "is_inf": np.isinf}


def _is_int(a: np.ndarray) -> bool:
    return DType.from_numpy(a.dtype).is_int


def _div(a, b):
    if not _is_int(a):
        return a / b
    safe = np.where(b == 0, 1, b).astype(a.dtype)
    q = a // safe  # floor division; step back toward zero when the signs differ
    q = q + ((a % safe != 0) & ((a < 0) != (safe < 0))).astype(a.dtype)
    return np.where(b == 0, 0, q).astype(a.dtype)


def _rem(a, b):
    if not _is_int(a):
        return np.fmod(a, b)
    safe = np.where(b == 0, 1, b).astype(a.dtype)
    return np.where(b == 0, 0, np.fmod(a, safe)).astype(a.dtype)


def _pow(a, b):
    if not _is_int(a):
        return np.power(a, b)
    neg = b < 0
    out = np.power(a, np.where(neg, 0, b).astype(b.dtype))
    # 1 / a**n truncates to 0 except for a = 1 (1) and a = -1 (+-1 by the parity of n).
    inverse = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(neg, inverse, out).astype(a.dtype)


_NARROW_BITS = {DType.I4: 4, DType.U4: 4, DType.I2: 2, DType.U2: 2}
_SIGNED_INTS = {DType.I2, DType.I4, DType.I8, DType.I16, DType.I32, DType.I64}


def _shift(a, b, left: bool):
    bits = _NARROW_BITS.get(DType.from_numpy(a.dtype), a.dtype.itemsize * 8)
    out_of_range = (b < 0) | (b >= bits)
    amount = np.where(out_of_range, 0, b).astype(a.dtype)
    shifted = np.left_shift(a, amount) if left else np.right_shift(a, amount)
    if left or DType.from_numpy(a.dtype) not in _SIGNED_INTS:
        fill = np.zeros_like(a)
    else:  # an arithmetic shift by >= the width leaves only the sign
        fill = np.where(a < 0, -1, 0).astype(a.dtype)
    return np.where(out_of_range, fill, shifted).astype(a.dtype)


BINARY_FN = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _div, "rem": _rem,
    "pow": _pow, "max": np.maximum, "min": np.minimum, "atan2": np.arctan2,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "shift_left": lambda a, b: _shift(a, b, left=True),
    "shift_right": lambda a, b: _shift(a, b, left=False),
}
COMPARE_FN = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
              "gt": np.greater, "ge": np.greater_equal}

if (UNARY_FN.keys(), BINARY_FN.keys(), PREDICATE_FN.keys(), COMPARE_FN.keys()) != (
        UNARY.keys(), BINARY.keys(), PREDICATES.keys(), COMPARE.keys()):
    raise RuntimeError("the prim elementwise tables of the dialect and the runtime differ")


def _register(name: str, fn, compute) -> None:
    work = compute(fn)

    def rule(op, *arrays):
        with np.errstate(all="ignore"):
            return work(*arrays)

    rule.__name__ = name
    evaluates(f"prim.{name}")(rule)


def _bool_result(fn):
    # Compares and predicates give i1 whatever the operands; narrow floats compare in f32.
    def run(*arrays):
        return fn(*(a.astype(np.float32) if _narrow(a) else a for a in arrays))

    return run


def _narrow(a: np.ndarray) -> bool:
    kind = DType.from_numpy(a.dtype)
    return kind.is_float and kind not in (DType.F32, DType.F64)


for _name, _fn in UNARY_FN.items():
    _register(_name, _fn, in_compute_dtype)
for _name, _fn in BINARY_FN.items():
    _register(_name, _fn, in_compute_dtype)
for _name, _fn in {**PREDICATE_FN, **COMPARE_FN}.items():
    _register(_name, _fn, _bool_result)


@evaluates("prim.select")
def select(op, pred, on_true, on_false):
    return np.where(pred, on_true, on_false)


@evaluates("prim.cast")
def cast(op, x):
    target = op.dtype.numpy
    with np.errstate(all="ignore"):
        try:
            return x.astype(target)
        except (TypeError, ValueError):  # some narrow-type pairs only convert through f32
            return x.astype(np.float32).astype(target)
