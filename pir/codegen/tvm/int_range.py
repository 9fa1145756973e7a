"""Integer products computed in float32 where that is exact.

A quantized model's integer matmul (``MatMulInteger``: uint8 activations minus their zero
point, times int8 or uint8 weights minus theirs, summed in int32) needs int32 multiplies,
and the CPU's vector int32 multiply (``vpmulld``) is slow: on an AVX-512 core it ran the
[20, 1024] x [1024, 8210] product of a captcha reader in 10.8 ms, where the float32 FMA
computed the same sums in 4.5 ms.  A float32 sum of integers is exact while every partial
sum stays below 2**24 in magnitude (the products of 8-bit values are far below that), so the
product may be computed in float32 when codegen can prove the bound: the left operand's
values lie within ``[lo, hi]`` (a cast from uint8, minus a uint8 zero point: [-255, 255])
and the weights are known, so every partial sum of column ``j`` is at most
``max(|lo|, |hi|) * sum_k |w[k, j]|``.  Where the bound is not proven the kernel computes
in int32, as the program says.
"""

from __future__ import annotations

import math

import numpy as np

from pir.ir.core import BlockArgument, Value
from pir.ir.dialects.builtin import ConstantOp, constant_value
from pir.ir.dialects.fusion import GroupOp
from pir.ir.types import DType, TensorType

__all__ = ["value_range", "integral", "float32_exact", "exact_dtype"]

#: A float32 holds every integer of magnitude up to this, and no sum of them is rounded
#: while it stays at or below it.
EXACT = 1 << 24

#: Ops that move values without changing them.
_MOVES = frozenset({"prim.broadcast_in_dim", "prim.reshape", "prim.transpose",
                    "prim.slice", "prim.concat"})


_INF = float("inf")

#: Monotone elementwise functions: the bounds of the result are the function of the bounds.
_MONOTONE = {"prim.round": round, "prim.floor": math.floor, "prim.ceil": math.ceil}


def _dtype_range(dtype: DType) -> tuple[float, float] | None:
    if dtype.is_float:
        return -_INF, _INF
    if not dtype.is_int or dtype.itemsize == 0:
        return None
    info = np.iinfo(dtype.numpy)
    return int(info.min), int(info.max)


def value_range(value: Value, depth: int = 16) -> tuple[float, float] | None:
    """Bounds ``[lo, hi]`` of a number tensor's elements, from the ops that compute it (a
    few elementwise ops, moves, casts, constants, through fusion groups), else its type's
    range (floats: unbounded); None for a value that is not a number tensor.  A
    quantizer's ``cast(round(min(max(x, 0), 255)))`` is bounded by [0, 255]."""
    t = value.type
    if not isinstance(t, TensorType):
        return None
    fallback = _dtype_range(t.dtype)
    if fallback is None:
        return None
    op = getattr(value, "op", None)
    if op is None or depth == 0:
        arg = _group_operand(value)
        return value_range(arg, depth - 1) or fallback if arg is not None and depth else fallback
    if isinstance(op, ConstantOp):
        a = np.asarray(constant_value(op))
        if not a.size or a.dtype.kind not in "iuf" or not np.isfinite(a).all():
            return fallback
        return (a.min().item(), a.max().item())
    if isinstance(op, GroupOp):
        inner = op.body.block.terminator.operands[op.results.index(value)]
        return value_range(inner, depth - 1) or fallback
    ins = [value_range(v, depth - 1) for v in op.operands]
    out = _result_range(op.name, ins)
    if out is None:
        return fallback
    if t.dtype.is_int:
        out = (math.trunc(out[0]), math.trunc(out[1])) if all(map(math.isfinite, out)) \
            else fallback  # a float cast to an integer truncates toward zero
    # the result type wraps anything beyond its range: the bound is then unknown
    return out if fallback[0] <= out[0] and out[1] <= fallback[1] else fallback


def _result_range(name: str, ins: list) -> tuple[float, float] | None:
    if name in ("prim.cast", *_MONOTONE) and ins[0] is not None:
        f = _MONOTONE.get(name)
        lo, hi = ins[0]
        return (f(lo), f(hi)) if f and math.isfinite(lo) and math.isfinite(hi) else (lo, hi)
    if name == "prim.select" and None not in ins[1:3]:
        return min(ins[1][0], ins[2][0]), max(ins[1][1], ins[2][1])
    if name in _MOVES and None not in ins and ins:
        return min(r[0] for r in ins), max(r[1] for r in ins)
    if len(ins) < 2 or None in ins[:2]:
        return None
    (a, b), (c, d) = ins[:2]
    if name == "prim.max":
        return max(a, c), max(b, d)
    if name == "prim.min":
        return min(a, c), min(b, d)
    if not all(map(math.isfinite, (a, b, c, d))):
        return None
    if name == "prim.add":
        return a + c, b + d
    if name == "prim.sub":
        return a - d, b - c
    if name == "prim.mul":
        corners = [a * c, a * d, b * c, b * d]
        return min(corners), max(corners)
    return None


#: Ops whose result is an integer wherever their (number) operands are: a float sum or
#: product of integers rounds, if at all, to a float of magnitude 2**24 or more, and every
#: such float is an integer.
_INTEGRAL_KEEPING = frozenset({"prim.add", "prim.sub", "prim.mul", "prim.neg", "prim.max",
                               "prim.min", "prim.abs", "prim.cast", *_MOVES})


def integral(value: Value, depth: int = 16) -> bool:
    """Whether every element of ``value`` is provably an integer: an integer type, a
    rounding (``round``, ``floor``, ``ceil``), a constant of whole numbers, or sums,
    products, moves and casts of such values (a dequantizer's ``cast(q) - zero_point``)."""
    t = value.type
    if not isinstance(t, TensorType):
        return False
    if t.dtype.is_int:
        return True
    if depth == 0:
        return False
    op = getattr(value, "op", None)
    if op is None:
        arg = _group_operand(value)
        return arg is not None and integral(arg, depth - 1)
    if isinstance(op, ConstantOp):
        a = np.asarray(constant_value(op))
        return a.dtype.kind in "iub" or (a.dtype.kind == "f" and bool(
            np.isfinite(a).all() and (a == np.round(a)).all()))
    if isinstance(op, GroupOp):
        inner = op.body.block.terminator.operands[op.results.index(value)]
        return integral(inner, depth - 1)
    if op.name in _MONOTONE:
        return True
    if op.name == "prim.select":
        return all(integral(v, depth - 1) for v in op.operands[1:3])
    return op.name in _INTEGRAL_KEEPING and all(integral(v, depth - 1) for v in op.operands)


def _group_operand(value: Value) -> Value | None:
    """The value outside a fusion group that one of its block arguments stands for."""
    if not isinstance(value, BlockArgument):
        return None
    region = value.block.parent
    group = getattr(region, "parent", None)
    if not isinstance(group, GroupOp):
        return None
    return group.operands[value.index]


def exact_dtype(lhs: Value, w: np.ndarray, out: DType) -> DType:
    """The type a product of ``lhs`` by the known weights ``w`` ([K, N]) computes in:
    float32 for an integer one whose sums float32 holds exactly, else its result's type."""
    return DType.F32 if out.is_int and float32_exact(lhs, w) else out


def float32_exact(lhs: Value, w: np.ndarray) -> bool:
    """Whether every partial sum of ``lhs [..., K] x w [K, N]`` (integers) is exact in
    float32."""
    r = value_range(lhs)
    if r is None or not all(map(math.isfinite, r)) or w.dtype.kind not in "iu" or not w.size:
        return False
    column = np.abs(w.astype(np.int64)).sum(axis=0).max()
    return max(abs(r[0]), abs(r[1])) * int(column) <= EXACT
