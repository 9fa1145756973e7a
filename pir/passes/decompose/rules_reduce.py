"""Decomposition rules for reductions, arg-reductions, cumulative scans and top-k.

ONNX's reductions become one ``prim.reduce_{sum,prod,max,min}`` over explicit, non-negative
axes, with elementwise steps before (``|x|``, ``x*x``) or after (``sqrt``, ``log``) it; the
mean divides by the element count, which is a constant when the reduced dims are static and a
sum of ones over them when some are symbols.  The helpers at the top (:func:`reduce_axes`,
:func:`mean`, :func:`widen` ...) are shared with ``rules_normalization``.

Precision follows the reference runtime: a rule of more than one step computes floats
narrower than f32 in f32 (and integers in f64 where it needs float math) and casts back once,
so that no intermediate rounding creeps in.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Sequence

from pir.ir.core import Value
from pir.ir.typerules import const_value, normalize_axis, tensor
from pir.ir.types import Dim, DType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes

__all__ = ["REDUCTIONS", "rule", "conform", "reduce_axes", "reduce", "count", "mean", "widen",
           "to_float", "ranked", "const_int", "unary"]


# -- shared helpers -------------------------------------------------------------------------------


def conform(b: PrimBuilder, result: Value, v: Value) -> Value:
    """``v`` with exactly the type of ``result``.  An importer may declare a result more
    precisely than the type rules derive it from the operands (``batch x seq x 64`` where the
    input says ``batch x unk__3 x 64``); a ``prim.reshape`` restates the declared type, and is
    free at run time."""
    want, have = tensor(result), tensor(v)
    if want == have or want.dtype != have.dtype or want.shape is None or have.shape is None \
            or len(want.shape) != len(have.shape):
        return v  # equal, or a real mismatch, which the pass reports
    if sum(d is None for d in want.shape) > 1:
        raise Keep(f"the declared result type {want} has more unknown dims than a reshape "
                   f"can size")
    return b.op("reshape", v, result_type=want)


def rule(*names: str):
    """Register a decomposition (as ``@decomposes``) whose values are conformed to the op's
    declared result types."""

    def register(fn):
        @functools.wraps(fn)
        def conformed(b: PrimBuilder, op) -> list[Value]:
            return [conform(b, r, v) for r, v in zip(op.results, fn(b, op), strict=True)]

        decomposes(*names)(conformed)
        return fn

    return register


def ranked(v: Value) -> tuple[Dim, ...]:
    """The shape of ``v``, which must at least have a known rank."""
    shape = tensor(v).shape
    if shape is None:
        raise Keep("needs a ranked input")
    return shape


def const_int(v: Value, what: str) -> int:
    """The single integer held by a constant operand (a 0-D or one-element tensor)."""
    value = const_value(v)
    if value is None:
        raise Keep(f"{what} is known only at run time")
    return int(value.reshape(-1)[0])


def reduce_axes(op, rank: int) -> tuple[int, ...]:
    """The sorted non-negative axes an ``nn.reduce_*`` op reduces.  No axes (absent or empty)
    means all of them, or none with ``noop_with_empty_axes``; a scalar has no axis to reduce."""
    listed = None
    if op.axes is not None:
        value = const_value(op.axes)
        if value is None:
            raise Keep("the axes are known only at run time")
        listed = [int(a) for a in value.reshape(-1)]
    if not listed:
        return () if op.noop_with_empty_axes else tuple(range(rank))
    return tuple(sorted({normalize_axis(a, rank) for a in listed})) if rank else ()


def reduce(b: PrimBuilder, prim: str, x: Value, axes: Sequence[int], keepdims: bool) -> Value:
    """``prim.reduce_<prim>`` over ``axes``; nothing to reduce gives ``x`` itself."""
    return b.reduce(prim, x, axes, keepdims) if axes else x


def count(b: PrimBuilder, x: Value, axes: Sequence[int]) -> Value:
    """The number of elements of ``x`` over ``axes``, as a rank-0 tensor of x's type.

    prim has no op that reads a dim at run time, so a symbolic count is the sum of a tensor of
    ones shaped like the reduced dims (the runtime sizes the symbols, as for any value)."""
    t = tensor(x)
    dims = [ranked(x)[a] for a in axes]
    if all(isinstance(d, int) for d in dims):
        return b.const(math.prod(dims), t.dtype)
    ones = b.broadcast_to(b.const(1, t.dtype), dims)
    return b.reduce("sum", ones, range(len(dims)), keepdims=False)


def mean(b: PrimBuilder, x: Value, axes: Sequence[int], keepdims: bool = True,
         n: Value | None = None) -> Value:
    """sum(x) / count over ``axes`` (exact division in x's type: truncating for integers);
    ``n`` is the count when the caller has it already."""
    if not axes:
        return x
    return b.div(b.reduce("sum", x, axes, keepdims), n if n is not None else count(b, x, axes))


def widen(b: PrimBuilder, x: Value) -> Value:
    """``x`` in a type to compute a multi-step rule in: floats narrower than f32 in f32 (as the
    reference runtime accumulates), booleans as ui8 (prim reductions are numeric only)."""
    dtype = tensor(x).dtype
    if dtype is DType.BOOL:
        return b.cast(x, DType.U8)
    if dtype.is_float and dtype.itemsize < 4:
        return b.cast(x, DType.F32)
    return x


def to_float(b: PrimBuilder, x: Value) -> Value:
    """``x`` ready for float math (sqrt, log, exp): integers go to f64, as numpy computes them."""
    return x if tensor(x).dtype.is_float else b.cast(x, DType.F64)


def unary(name: str) -> Callable[[PrimBuilder, Value], Value]:
    return lambda b, x: b.op(name, x)


# -- nn.reduce_* ----------------------------------------------------------------------------------


def _abs(b: PrimBuilder, x: Value) -> Value:
    """|x| (unsigned integers are their own absolute value; prim.abs takes signed types)."""
    return b.op("abs", x) if tensor(x).dtype.is_signed else x


def _square(b: PrimBuilder, x: Value) -> Value:
    return b.mul(x, x)


#: nn op -> (prim reduction, step before it or None, float step after it or None)
REDUCTIONS: dict[str, tuple[str, Callable | None, Callable | None]] = {
    "nn.reduce_sum": ("sum", None, None),
    "nn.reduce_prod": ("prod", None, None),
    "nn.reduce_max": ("max", None, None),
    "nn.reduce_min": ("min", None, None),
    "nn.reduce_l1": ("sum", _abs, None),
    "nn.reduce_sum_square": ("sum", _square, None),
    "nn.reduce_l2": ("sum", _square, unary("sqrt")),
    "nn.reduce_log_sum": ("sum", None, unary("log")),
}


@rule(*REDUCTIONS)
def reduction(b: PrimBuilder, op) -> list[Value]:
    """before -> prim reduction -> after, e.g. reduce_l2 = sqrt(reduce_sum(x * x))."""
    prim, before, after = REDUCTIONS[op.name]
    dtype = tensor(op.data).dtype
    axes = reduce_axes(op, len(ranked(op.data)))
    x = widen(b, op.data) if (before or after or dtype is DType.BOOL) else op.data
    if before:
        x = before(b, x)
    out = reduce(b, prim, x, axes, op.keepdims)
    if after:
        out = after(b, to_float(b, out))
    return [b.cast(out, dtype)]


@rule("nn.reduce_mean")
def reduce_mean(b: PrimBuilder, op) -> list[Value]:
    """sum(x) / count, in f32 for narrower floats."""
    axes = reduce_axes(op, len(ranked(op.data)))
    out = mean(b, widen(b, op.data), axes, op.keepdims)
    return [b.cast(out, tensor(op.data).dtype)]


@rule("nn.reduce_log_sum_exp")
def reduce_log_sum_exp(b: PrimBuilder, op) -> list[Value]:
    """log(sum(exp(x - m))) + m with m = max(x), so that large inputs do not overflow; an
    infinite m (all -inf, an empty reduction, or +inf) is replaced by 0, as in the reference."""
    dtype = tensor(op.data).dtype
    axes = reduce_axes(op, len(ranked(op.data)))
    x = to_float(b, widen(b, op.data))
    m = reduce(b, "max", x, axes, keepdims=True)
    m = b.op("select", b.op("is_inf", m), b.zeros_like(m), m)
    total = reduce(b, "sum", b.op("exp", b.sub(x, m)), axes, keepdims=True)
    out = b.add(b.op("log", total), m)
    if not op.keepdims:  # m had to keep the reduced dims for the subtraction; drop them now
        out = b.reshape(out, [d for i, d in enumerate(ranked(out)) if i not in axes])
    return [b.cast(out, dtype)]


# -- arg-reductions, scans, top-k -----------------------------------------------------------------


@rule("nn.arg_max", "nn.arg_min")
def arg_reduce(b: PrimBuilder, op) -> list[Value]:
    """prim.argmax / prim.argmin, which share ONNX's attributes (with a non-negative axis)."""
    shape = ranked(op.data)
    if not shape:
        raise Keep("a scalar has no axis to search")
    axis = normalize_axis(op.axis, len(shape))
    if shape[axis] == 0:
        raise Keep("the axis is empty: there is no extreme element")
    prim = "argmax" if op.name == "nn.arg_max" else "argmin"
    return [b.op(prim, op.data, axis=axis, keepdims=op.keepdims,
                 select_last_index=op.select_last_index)]


def _scan_axis(op) -> int:
    return normalize_axis(const_int(op.axis, "the axis"), len(ranked(op.x)))


@rule("nn.cum_sum")
def cum_sum(b: PrimBuilder, op) -> list[Value]:
    """prim.cumsum: the same flags, with a constant, non-negative axis."""
    return [b.op("cumsum", op.x, axis=_scan_axis(op), exclusive=op.exclusive,
                 reverse=op.reverse)]


def _shift(b: PrimBuilder, x: Value, axis: int, by: int, fill: Value) -> Value:
    """``x`` moved ``by`` places along ``axis`` (towards the end when ``by`` > 0), the places
    left behind filled with ``fill``: a pad on one side that crops the other."""
    rank = len(ranked(x))
    low, high = [0] * rank, [0] * rank
    low[axis], high[axis] = by, -by
    return b.op("pad", x, fill, edge_padding_low=tuple(low), edge_padding_high=tuple(high))


@rule("nn.cum_prod")
def cum_prod(b: PrimBuilder, op) -> list[Value]:
    """A Hillis-Steele scan, as there is no product scan prim and log/exp would lose the signs
    and zeros: y *= y shifted by 1, 2, 4 ... places (filled with ones), log2(n) steps; the
    exclusive form shifts the result once more; reverse shifts the other way."""
    axis = _scan_axis(op)
    n = ranked(op.x)[axis]
    if not isinstance(n, int):
        raise Keep("the scanned dim must be static (it sets the number of steps)")
    dtype = tensor(op.x).dtype
    y = widen(b, op.x)
    one = b.const(1, tensor(y).dtype)
    sign = -1 if op.reverse else 1
    step = 1
    while step < n:
        y = b.mul(y, _shift(b, y, axis, sign * step, one))
        step *= 2
    if op.exclusive:
        y = _shift(b, y, axis, sign, one)
    return [b.cast(y, dtype)]


@rule("nn.top_k")
def top_k(b: PrimBuilder, op) -> list[Value]:
    """prim.sort (stable, so equal values keep the lower index first), then the first k."""
    shape = ranked(op.x)
    axis = normalize_axis(op.axis, len(shape))
    k = const_int(op.k, "k")
    ordered = b.create("sort", op.x, axis=axis, descending=op.largest).results
    if shape[axis] == k:
        return list(ordered)
    return [b.op("slice", v, start_indices=(0,), limit_indices=(k,), axes=(axis,))
            for v in ordered]
