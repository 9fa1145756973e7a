"""Decomposition rules for elementwise math, comparisons, logic, Where, casts and Identity.

Most nn elementwise ops are one prim op once broadcasting is explicit, so the rules are
tables (nn name -> prim name) read by one rule per shape of op: unary, binary, compare.  The
rest spell out what ONNX says and prim does not: Mod's sign of the divisor, Pow's mixed
element types, IsInf's detect flags, variadic Max/Min/Sum/Mean, saturating float8 casts.

Helpers shared with ``rules_activations`` live here too: ``select`` (broadcasting),
``widened`` (compute a multi-op float rule in f32 for narrow floats, as the reference
runtime computes the nn op).
"""

from __future__ import annotations

import functools
from typing import Callable

import ml_dtypes

from pir.ir.core import Operation, Value
from pir.ir.typerules import tensor
from pir.ir.types import DType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes, keep

__all__ = ["select", "compute_dtype", "widened"]

# -- helpers --------------------------------------------------------------------------------


def select(b: PrimBuilder, pred: Value, on_true: Value, on_false: Value) -> Value:
    """``prim.select`` after broadcasting the three operands to their common shape."""
    return b.op("select", *b.broadcast_all(pred, on_true, on_false))


def compute_dtype(dtype: DType) -> DType:
    """f32 for floats narrower than f32, else ``dtype``: the precision nn ops compute in."""
    if dtype.is_float and dtype not in (DType.F32, DType.F64):
        return DType.F32
    return dtype


FloatRule = Callable[[PrimBuilder, Value, Operation], Value]


def widened(fn: FloatRule) -> Callable[[PrimBuilder, Operation], list[Value]]:
    """A rule computing ``fn(b, x, op)`` on ``op.x`` in :func:`compute_dtype`.

    An activation is several prim ops; in f16 each would round its result, while the nn op
    (as the reference runtime evaluates it) rounds once at the end.  So narrow floats go up
    to f32 and come back once, as PyTorch's decompositions do for half types.
    """

    def rule(b: PrimBuilder, op: Operation) -> list[Value]:
        dtype = tensor(op.x).dtype
        return [b.cast(fn(b, b.cast(op.x, compute_dtype(dtype)), op), dtype)]

    rule.__name__ = fn.__name__
    rule.__doc__ = fn.__doc__
    return rule


# -- one prim op each -----------------------------------------------------------------------

UNARY = {
    "nn.neg": "neg", "nn.exp": "exp", "nn.log": "log", "nn.sqrt": "sqrt",
    "nn.reciprocal": "reciprocal", "nn.sin": "sin", "nn.cos": "cos", "nn.tan": "tan",
    "nn.asin": "asin", "nn.acos": "acos", "nn.atan": "atan", "nn.sinh": "sinh",
    "nn.cosh": "cosh", "nn.asinh": "asinh", "nn.acosh": "acosh", "nn.atanh": "atanh",
    "nn.ceil": "ceil", "nn.floor": "floor", "nn.round": "round", "nn.erf": "erf",
    "nn.is_nan": "is_nan", "nn.not": "not", "nn.bitwise_not": "not",
}
BINARY = {
    "nn.add": "add", "nn.sub": "sub", "nn.mul": "mul", "nn.div": "div",
    "nn.bitwise_and": "and", "nn.bitwise_or": "or", "nn.bitwise_xor": "xor",
    "nn.and": "and", "nn.or": "or", "nn.xor": "xor",
}
COMPARE = {
    "nn.equal": "eq", "nn.less": "lt", "nn.less_or_equal": "le", "nn.greater": "gt",
    "nn.greater_or_equal": "ge",
}


@decomposes(*UNARY)
def unary(b: PrimBuilder, op: Operation) -> list[Value]:
    """nn.exp(x) -> prim.exp(x), and so on: special values, rounding halves to even and the
    f32 evaluation of narrow floats agree between the two dialects."""
    return [b.op(UNARY[op.name], op.x)]


@decomposes(*BINARY)
def binary(b: PrimBuilder, op: Operation) -> list[Value]:
    """nn.add(a, b) -> prim.add after broadcasting; integer prim.div truncates, as nn.div."""
    return [b.binary(BINARY[op.name], op.a, op.b, result=tensor(op.results[0]).shape)]


@decomposes(*COMPARE)
def compare(b: PrimBuilder, op: Operation) -> list[Value]:
    """nn.less(a, b) -> prim.lt after broadcasting."""
    if tensor(op.a).dtype is DType.STRING:
        raise Keep("prim ops do not take strings")
    return [b.binary(COMPARE[op.name], op.a, op.b, result=tensor(op.results[0]).shape)]


# -- sign, abs and predicates ---------------------------------------------------------------


@decomposes("nn.abs")
def abs_(b: PrimBuilder, op: Operation) -> list[Value]:
    """prim.abs; an unsigned x is its own absolute value (prim.abs takes signed types)."""
    if tensor(op.x).dtype.is_signed:
        return [b.op("abs", op.x)]
    return [op.x]


@decomposes("nn.sign")
def sign(b: PrimBuilder, op: Operation) -> list[Value]:
    """prim.sign; for an unsigned x, (x != 0) as a number."""
    dtype = tensor(op.x).dtype
    if dtype.is_signed:
        return [b.op("sign", op.x)]
    return [b.cast(b.binary("ne", op.x, b.scalar_like(0, op.x)), dtype)]


@decomposes("nn.is_inf")
def is_inf(b: PrimBuilder, op: Operation) -> list[Value]:
    """prim.is_inf, and-ed with the sign test of the infinity not to detect."""
    if op.detect_positive and op.detect_negative:
        return [b.op("is_inf", op.x)]
    if not (op.detect_positive or op.detect_negative):
        return [b.scalar_like(False, op.results[0])]
    side = "gt" if op.detect_positive else "lt"
    return [b.op("and", b.op("is_inf", op.x), b.binary(side, op.x, b.scalar_like(0, op.x)))]


# -- arithmetic that prim spells differently ------------------------------------------------


@decomposes("nn.mod")
def mod(b: PrimBuilder, op: Operation) -> list[Value]:
    """fmod=1 is prim.rem (the sign of a).  fmod=0 takes the sign of the divisor d: where
    the remainder r is nonzero and its sign differs from d's, add d (numpy's ``remainder``)."""
    a, d = b.broadcast_all(op.a, op.b)
    r = b.op("rem", a, d)
    if op.fmod or not tensor(a).dtype.is_signed:
        return [r]
    zero = b.zeros_like(r)
    signs_differ = b.op("ne", b.op("lt", r, zero), b.op("lt", d, zero))
    fix = b.op("and", b.op("ne", r, zero), signs_differ)
    return [b.op("select", fix, b.op("add", r, d), r)]


def _pow_dtype(a: DType, e: DType) -> DType:
    """Where nn.pow computes: f64 for an integer base with a float exponent (the result is
    truncated back); otherwise a's type, or the wider float when the exponent's differs."""
    if a.is_int:
        return DType.F64 if e.is_float else a
    if DType.F64 in (a, e):
        return DType.F64
    return a if a == e else DType.F32


@decomposes("nn.pow")
def pow_(b: PrimBuilder, op: Operation) -> list[Value]:
    """prim.pow in one element type: ONNX lets the exponent's differ, so both operands are
    cast to a common type and the result back to a's (float to integer truncates)."""
    a = tensor(op.a).dtype
    work = _pow_dtype(a, tensor(op.b).dtype)
    return [b.cast(b.binary("pow", b.cast(op.a, work), b.cast(op.b, work)), a)]


@decomposes("nn.bit_shift")
def bit_shift(b: PrimBuilder, op: Operation) -> list[Value]:
    """prim.shift_left / shift_right: out-of-range shifts agree (0, or -1 for a negative a)."""
    name = "shift_left" if op.direction == "LEFT" else "shift_right"
    return [b.binary(name, op.a, op.b)]


# -- variadic and where ---------------------------------------------------------------------


def _fold(b: PrimBuilder, name: str, values: list[Value]) -> Value:
    """``name`` folded pairwise from the left, broadcasting as it goes (as nn evaluates)."""
    return functools.reduce(lambda acc, v: b.binary(name, acc, v), values)


@decomposes("nn.max", "nn.min")
def max_min(b: PrimBuilder, op: Operation) -> list[Value]:
    """Pairwise prim.max / prim.min (exact in any precision, so no widening)."""
    inputs = list(op.inputs)
    if len(inputs) == 1:
        return [inputs[0]]
    return [_fold(b, op.name[3:], inputs)]


@decomposes("nn.sum", "nn.mean")
def sum_mean(b: PrimBuilder, op: Operation) -> list[Value]:
    """Pairwise prim.add (then a division by the count for mean), in f32 for narrow floats
    so the sum rounds once, as the nn op's does."""
    inputs = list(op.inputs)
    if len(inputs) == 1:
        return [inputs[0]]
    dtype = tensor(inputs[0]).dtype
    total = _fold(b, "add", [b.cast(v, compute_dtype(dtype)) for v in inputs])
    if op.name == "nn.mean":
        total = b.div(total, b.scalar_like(len(inputs), total))
    return [b.cast(total, dtype)]


@decomposes("nn.where")
def where(b: PrimBuilder, op: Operation) -> list[Value]:
    """prim.select after broadcasting condition, x and y together."""
    if tensor(op.x).dtype is DType.STRING:
        raise Keep("prim ops do not take strings")
    return [select(b, op.condition, op.x, op.y)]


# -- casts and identity ---------------------------------------------------------------------

_SATURATING_F8 = frozenset({DType.F8E4M3FN, DType.F8E4M3FNUZ, DType.F8E5M2, DType.F8E5M2FNUZ})
#: Integer types that f32 does not hold exactly: they saturate through f64.
_WIDE_INTS = frozenset({DType.I32, DType.I64, DType.U32, DType.U64})


def _saturate(b: PrimBuilder, x: Value, to: DType) -> Value:
    """Clamp x into the finite range of float8 ``to`` (inf too; NaN stays NaN) before the
    cast, in a type that holds x exactly, so the cast rounds x itself and cannot overflow."""
    src = tensor(x).dtype
    wide = DType.F64 if src in _WIDE_INTS or src is DType.F64 else DType.F32
    info = ml_dtypes.finfo(to.numpy)
    w = b.cast(x, wide)
    clamped = b.min(b.max(w, b.const(float(info.min), wide)), b.const(float(info.max), wide))
    return b.cast(clamped, to)


@decomposes("nn.cast")
def cast(b: PrimBuilder, op: Operation) -> list[Value]:
    """prim.cast, clamped first for saturating float8 targets.  Strings and f8E8M0's
    rounding modes have no prim spelling and stay."""
    src, to = tensor(op.x).dtype, op.to
    if DType.STRING in (src, to):
        raise Keep("prim.cast has no strings")
    if src == to:
        return [op.x]
    if to is DType.F8E8M0FNU:
        raise Keep("f8E8M0FNU rounds by round_mode; prim.cast rounds to nearest even")
    if to in _SATURATING_F8 and op.saturate and src is not DType.BOOL:
        return [_saturate(b, op.x, to)]
    return [b.cast(op.x, to)]


@decomposes("nn.identity")
def identity(b: PrimBuilder, op: Operation) -> list[Value]:
    """The operand itself (an identity that names a function output stays)."""
    return [op.x]


keep("nn.bit_cast", "reinterprets bits; prim.cast converts values and there is no bitcast prim")
