"""Decomposition of linear quantisation and the quantised matrix products.

Quantising is ``x / scale``, rounded half to even, plus the zero point, clamped to the
target's range and cast; dequantising is ``(f32(x) - f32(zero_point)) * f32(scale)``.  A
scale and zero point hold one value (per tensor) or one per slice of ``axis`` (per axis,
broadcast along that axis); blocked quantisation stays an nn op.  The arithmetic runs in the
types the reference runtime uses (numpy's promotion of x and the scale), so results are
identical, not just close.  MatMulInteger and QLinearMatMul subtract the zero points in i32
and contract with ``prim.dot_general``; QLinearMatMul rescales in f64.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from pir.ir.core import Operation, Value
from pir.ir.dialects.nn.quantize import FLOAT8, INT_RANGES
from pir.ir.typerules import normalize_axis, tensor
from pir.ir.types import DType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes
from pir.passes.decompose.rules_linalg import conform, matmul, shape

__all__ = ["saturate", "per_axis", "dynamic_quantize", "integer_matmul"]

_NARROW = (DType.F16, DType.BF16)


def saturate(b: PrimBuilder, v: Value, zero_point: Value | None, out: DType) -> Value:
    """round_half_even(v) + zero_point, clamped to the integer type ``out``'s range and cast
    to it.  Narrow floats are widened to f32 first, which holds every sum exactly."""
    lo, hi = INT_RANGES[out]
    if tensor(v).dtype in _NARROW:
        v = b.cast(v, DType.F32)
    dtype = tensor(v).dtype
    v = b.op("round", v)
    if zero_point is not None:
        v = b.add(v, b.cast(zero_point, dtype))
    v = b.min(b.max(v, b.const(lo, dtype)), b.const(hi, dtype))
    return b.cast(v, out)


def per_axis(b: PrimBuilder, p: Value, x: Value, axis: int) -> Value:
    """A scale or zero point shaped against ``x``: rank 0 for one value, else a vector laid
    along ``axis`` of x (negative counts from the end)."""
    n = tensor(p).numel
    if n == 1:
        return b.reshape(p, ())
    if n is None:
        raise Keep("a scale or zero point of unknown size")
    xs = shape(b, x, "quantised operand")
    axis = normalize_axis(axis, len(xs))
    return b.op("broadcast_in_dim", b.reshape(p, (n,)), broadcast_dimensions=(axis,),
                result_type=tensor(x).with_dtype(tensor(p).dtype).with_shape(xs))


def _divide_type(x: DType, scale: DType) -> DType:
    """The type numpy computes ``x / scale`` in (f8E8M0 scales are widened to f32 first)."""
    s = np.float32 if scale is DType.F8E8M0FNU else scale.numpy
    return DType.from_numpy((np.ones(1, x.numpy) / np.ones(1, s)).dtype)


@decomposes("nn.quantize_linear")
def quantize_linear(b: PrimBuilder, op: Operation) -> list[Value]:
    if op.block_size:
        raise Keep("blocked quantisation (a scale per block) is not decomposed")
    x, out = op.x, op.y.type.dtype
    axis = op.axis
    ct = op.precision or _divide_type(tensor(x).dtype, tensor(op.y_scale).dtype)
    scale = per_axis(b, b.cast(op.y_scale, DType.F32) if tensor(op.y_scale).dtype is
                     DType.F8E8M0FNU else op.y_scale, x, axis)
    v = b.div(b.cast(x, ct), b.cast(scale, ct))
    zp = None if op.y_zero_point is None else per_axis(b, op.y_zero_point, x, axis)
    if out in INT_RANGES:
        return [saturate(b, v, zp, out)]
    if out in FLOAT8:  # the zero point (0) is not added: -0 stays -0
        if op.saturate:
            info = ml_dtypes.finfo(out.numpy)
            v = b.min(b.max(v, b.const(float(info.min), ct)), b.const(float(info.max), ct))
        return [b.cast(v, out)]
    raise Keep(f"quantising to {out.value} (its cast saturates, prim.cast's need not)")


@decomposes("nn.dequantize_linear")
def dequantize_linear(b: PrimBuilder, op: Operation) -> list[Value]:
    if op.block_size:
        raise Keep("blocked quantisation (a scale per block) is not decomposed")
    f32 = DType.F32
    x = op.x
    axis = op.axis
    dx = b.cast(x, f32)
    if op.x_zero_point is not None:
        dx = b.sub(dx, per_axis(b, b.cast(op.x_zero_point, f32), x, axis))
    y = b.mul(dx, per_axis(b, b.cast(op.x_scale, f32), x, axis))
    return [b.cast(y, op.y.type.dtype)]


def dynamic_quantize(b: PrimBuilder, x: Value, span: Value | None = None
                     ) -> tuple[Value, Value, Value]:
    """ui8 quantisation of f32 ``x`` by the range of ``span`` (default: x): the scale maps
    [min(span, 0), max(span, 0)] onto [0, 255]: (hi - lo) / 255 (1 / 255 when hi = lo); the
    zero point is round(-lo / scale).  Returns (y, scale, zero point as an f32 integer)."""
    f32 = DType.F32
    span = x if span is None else span
    axes = range(len(shape(b, span, "dynamic quantisation input")))
    zero = b.const(0, f32)
    hi = b.op("max", b.reduce("max", span, axes, keepdims=False), zero)
    lo = b.op("min", b.reduce("min", span, axes, keepdims=False), zero)
    width = b.op("select", b.op("eq", hi, lo), b.const(1, f32), b.op("sub", hi, lo))
    scale = b.op("div", width, b.const(255, f32))
    zp = b.op("sub", zero, b.op("div", lo, scale))
    zp = b.op("round", b.op("min", b.op("max", zp, zero), b.const(255, f32)))
    return saturate(b, b.div(x, scale), zp, DType.U8), scale, zp


@decomposes("nn.dynamic_quantize_linear")
def dynamic_quantize_linear(b: PrimBuilder, op: Operation) -> list[Value]:
    y, scale, zp = dynamic_quantize(b, op.x)
    return [y, scale, b.cast(zp, DType.U8)]


def _per_row(b: PrimBuilder, p: Value) -> Value:
    """A zero point or scale of the left operand: one value, or a vector of one per row."""
    ps = shape(b, p, "zero point or scale")
    if tensor(p).numel == 1:
        return b.reshape(p, ())
    return b.reshape(p, (ps[0], 1)) if len(ps) == 1 else p


def _per_col(b: PrimBuilder, p: Value) -> Value:
    """... of the right operand: one value, or one per column (broadcasts as it is)."""
    return b.reshape(p, ()) if tensor(p).numel == 1 else p


def _centered(b: PrimBuilder, x: Value, zp: Value | None) -> Value:
    x = b.cast(x, DType.I32)
    return x if zp is None else b.sub(x, b.cast(zp, DType.I32))


def integer_matmul(b: PrimBuilder, a: Value, a_zp: Value | None, w: Value,
                   w_zp: Value | None) -> Value:
    """``(a - a_zp) @ (w - w_zp)`` in int32, with the zero points taken out of the product
    (as onnxruntime's MLAS does): ``a @ ws + d * rowsum(a) - a_zp * colsum(ws) - K * a_zp *
    d``, where ``ws`` is ``w`` shifted into int8 (uint8 weights minus 128) and ``d = shift -
    w_zp``.  Exact (int32 is a ring), and the product is then of 8-bit values as they are:
    codegen computes it in VNNI's uint8 x int8 instruction (pir.codegen.tvm.dot4), the
    corrections in its epilogue, however the zero points are known (a
    DynamicQuantizeLinear's is computed at run time).  Vectors (1-D operands), symbolic K
    and non-8-bit operands keep the centred form."""
    sa, sw = tensor(a).shape, tensor(w).shape
    eight = {DType.U8, DType.I8}
    k = sa[-1] if sa else None
    if not (sa and sw and len(sa) >= 2 and len(sw) >= 2 and isinstance(k, int)
            and tensor(a).dtype in eight and tensor(w).dtype in eight):
        return matmul(b, _centered(b, a, a_zp), _centered(b, w, w_zp))
    shift = 128 if tensor(w).dtype == DType.U8 else 0
    ai = b.cast(a, DType.I32)
    ws = b.cast(w, DType.I32)
    if shift:
        ws = b.sub(ws, b.const(shift, DType.I32))
    y = matmul(b, ai, ws)
    d = None
    if w_zp is not None and not _all_equal(w_zp, shift):
        d = b.sub(b.const(shift, DType.I32), b.cast(w_zp, DType.I32))
    elif w_zp is None and shift:
        d = b.const(shift, DType.I32)
    if d is not None:
        y = b.add(y, b.mul(b.reduce("sum", ai, [len(sa) - 1]), d))
    if a_zp is not None and not _all_equal(a_zp, 0):
        za = b.cast(a_zp, DType.I32)
        y = b.sub(y, b.mul(za, _column_sums(b, w, ws, shift)))
        if d is not None:
            y = b.sub(y, b.mul(b.mul(za, d), b.const(k, DType.I32)))
    return y


def _column_sums(b: PrimBuilder, w: Value, ws: Value, shift: int) -> Value:
    """``ws`` summed over its K dim (kept): computed here when ``w`` is a constant (its
    weights' group then reads nothing but constants, and codegen packs it), else a sum."""
    from pir.ir.dialects.builtin import ConstantOp, constant_value

    axis = len(tensor(w).shape) - 2
    op = getattr(w, "op", None)
    if isinstance(op, ConstantOp):
        sums = (np.asarray(constant_value(op)).astype(np.int64) - shift).sum(axis, keepdims=True)
        return b.const(sums, DType.I32)
    return b.reduce("sum", ws, [axis])


def _all_equal(v: Value, n: int) -> bool:
    """Whether ``v`` is a constant whose every element is ``n``."""
    from pir.ir.dialects.builtin import ConstantOp, constant_value

    op = getattr(v, "op", None)
    return isinstance(op, ConstantOp) and bool((np.asarray(constant_value(op)) == n).all())


@decomposes("nn.matmul_integer")
def matmul_integer(b: PrimBuilder, op: Operation) -> list[Value]:
    a_zp = None if op.a_zero_point is None else _per_row(b, op.a_zero_point)
    b_zp = None if op.b_zero_point is None else _per_col(b, op.b_zero_point)
    y = integer_matmul(b, op.a, a_zp, op.b, b_zp)
    return [conform(b, y, op.y.type)]


@decomposes("nn.qlinear_matmul")
def qlinear_matmul(b: PrimBuilder, op: Operation) -> list[Value]:
    """The exact i32 product of the centred operands, times a_scale * b_scale / y_scale
    (formed in the scales' type, applied in f64), saturated into y's type."""
    if tensor(op.a).dtype in FLOAT8 or tensor(op.b).dtype in FLOAT8:
        raise Keep("float8 operands are not decomposed")
    acc = integer_matmul(b, op.a, _per_row(b, op.a_zero_point), op.b,
                         _per_col(b, op.b_zero_point))
    scales = (op.a_scale, op.b_scale, op.y_scale)
    st = DType.from_numpy(np.result_type(*(tensor(s).dtype.numpy for s in scales)))
    a_s, b_s, y_s = (b.cast(s, st) for s in scales)
    factor = b.div(b.mul(_per_row(b, a_s), _per_col(b, b_s)), _per_col(b, y_s))
    v = b.mul(b.cast(acc, DType.F64), b.cast(factor, DType.F64))
    y = saturate(b, v, _per_col(b, op.y_zero_point), op.y.type.dtype)
    return [conform(b, y, op.y.type)]
