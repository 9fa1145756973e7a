"""Reference rules for linear quantisation and the quantised matrix products."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from pir.ir.dialects.nn.quantize import FLOAT8, INT_RANGES
from pir.ir.types import DType
from pir.runtimes.reference.registry import evaluates, operand_arrays


def expand_param(p: np.ndarray, x_shape: tuple[int, ...], axis: int, block_size: int) -> np.ndarray:
    """A scale or zero point shaped to broadcast against x: a scalar per tensor, a vector laid
    along ``axis`` per axis, each value repeated ``block_size`` times along ``axis`` per block."""
    if p.size == 1:
        return p.reshape(())
    ax = axis % len(x_shape)
    if not block_size:
        shape = [1] * len(x_shape)
        shape[ax] = p.size
        return p.reshape(shape)
    p = np.repeat(p, block_size, axis=ax)
    return p[(slice(None),) * ax + (slice(0, x_shape[ax]),)]  # the last block may be short


def as_float(a: np.ndarray) -> np.ndarray:
    """float8e8m0 scales (powers of two) have no arithmetic in numpy: widen them."""
    return a.astype(np.float32) if a.dtype == ml_dtypes.float8_e8m0fnu else a


def saturate_to(v: np.ndarray, out: DType, zero_point: np.ndarray | None, saturate: bool = True) -> np.ndarray:
    """Round ``v`` (already divided by the scale) into the quantised type ``out``."""
    if out in INT_RANGES:
        lo, hi = INT_RANGES[out]
        r = np.rint(v.astype(np.float64))  # round half to even, as ONNX asks
        if zero_point is not None:
            r = r + zero_point.astype(np.float64)
        return np.clip(r, lo, hi).astype(out.numpy)
    if out in FLOAT8:
        # float8 zero points must be 0 and are not added (adding +0 would turn -0 into +0).
        if saturate:  # out-of-range values and infinities go to the largest finite value
            info = ml_dtypes.finfo(out.numpy)
            v = np.clip(v, float(info.min), float(info.max))
        return v.astype(out.numpy)
    # float4e2m1 has no infinity or NaN: ml_dtypes' cast already saturates.
    if zero_point is not None:
        v = v + zero_point.astype(np.float32)
    return v.astype(out.numpy)


@evaluates("nn.quantize_linear")
def quantize_linear(op, *arrays):
    args = operand_arrays(op, arrays)
    x, zp = args["x"], args["y_zero_point"]
    scale = as_float(expand_param(args["y_scale"], x.shape, op.axis, op.block_size))
    if zp is not None:
        zp = expand_param(zp, x.shape, op.axis, op.block_size)
    if op.precision is not None:
        ct = op.precision.numpy
        v = x.astype(ct) / scale.astype(ct)
    else:
        v = x / scale
    return saturate_to(v, op.results[0].type.dtype, zp, op.saturate)


@evaluates("nn.dequantize_linear")
def dequantize_linear(op, *arrays):
    args = operand_arrays(op, arrays)
    x, zp = args["x"], args["x_zero_point"]
    dx = x.astype(np.float32)
    if zp is not None:
        dx = dx - expand_param(zp, x.shape, op.axis, op.block_size).astype(np.float32)
    scale = expand_param(args["x_scale"], x.shape, op.axis, op.block_size).astype(np.float32)
    return (dx * scale).astype(op.results[0].type.dtype.numpy)


def dynamic_quantize(x: np.ndarray, span: np.ndarray | None = None):
    """ui8 quantisation of f32 ``x`` with the scale and zero point mapping the range of
    ``span`` (default: x), widened to include 0, onto [0, 255]: (y, scale, zero point)."""
    span = x if span is None else span
    hi = np.float32(np.max(span, initial=0.0))  # the range always includes 0
    lo = np.float32(np.min(span, initial=0.0))
    scale = np.float32(1.0 if hi == lo else hi - lo) / np.float32(255)
    zp = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
    y = np.clip(np.rint(x / scale) + zp, 0, 255)
    return y.astype(np.uint8), np.array(scale, np.float32), np.array(zp).astype(np.uint8)


@evaluates("nn.dynamic_quantize_linear")
def dynamic_quantize_linear(op, x):
    return dynamic_quantize(x)


def _per_row(p: np.ndarray) -> np.ndarray:
    """A zero point or scale of the left operand: a vector holds one value per row."""
    if p.size == 1:
        return p.reshape(())
    return p.reshape(-1, 1) if p.ndim == 1 else p


def _centered(x: np.ndarray, zp: np.ndarray | None) -> np.ndarray:
    """x - zero point, exactly: in i32 for integer types, in f32 for float8."""
    ct = np.int32 if x.dtype.kind in "iu" else np.float32
    out = x.astype(ct)
    return out if zp is None else out - zp.astype(ct)


@evaluates("nn.matmul_integer")
def matmul_integer(op, *arrays):
    args = operand_arrays(op, arrays)
    a_zp, b_zp = args["a_zero_point"], args["b_zero_point"]
    a = _centered(args["a"], None if a_zp is None else _per_row(a_zp))
    b = _centered(args["b"], b_zp)  # a vector of b's zero points is one per column: broadcasts
    return np.matmul(a, b).astype(np.int32)


@evaluates("nn.qlinear_matmul")
def qlinear_matmul(op, a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
    acc = np.matmul(_centered(a, _per_row(a_zp)), _centered(b, b_zp))
    # The rescale factor is formed in the scales' type (f16 scales round it), then applied in f64.
    factor = _per_row(a_scale) * b_scale / y_scale
    v = acc.astype(np.float64) * factor.astype(np.float64)
    return saturate_to(v, op.results[0].type.dtype, y_zp.reshape(()) if y_zp.size == 1 else y_zp)
