"""Linear quantisation: quantize/dequantize (per tensor, per axis, blocked) and the
quantised matrix products."""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import BOOL, DTYPE, INT
from pir.ir.core import Operation
from pir.ir.dialects.nn.linalg import matmul_shape
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import normalize_axis, tensor
from pir.ir.types import DType, TensorType

__all__ = ["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger",
           "QLinearMatMul", "QUANT_DTYPES", "INT_RANGES"]

FLOAT8 = frozenset({DType.F8E4M3FN, DType.F8E4M3FNUZ, DType.F8E5M2, DType.F8E5M2FNUZ})
#: The integer quantised types and their saturation ranges.
INT_RANGES = {DType.U8: (0, 255), DType.I8: (-128, 127), DType.U16: (0, 65535),
              DType.I16: (-32768, 32767), DType.U4: (0, 15), DType.I4: (-8, 7),
              DType.U2: (0, 3), DType.I2: (-2, 1)}
QUANT_DTYPES = frozenset(set(INT_RANGES) | FLOAT8 | {DType.F4E2M1FN})
_HIGH = frozenset({DType.F32, DType.F16, DType.BF16})


def check_quant_params(x: TensorType, scale: TensorType, zero_point: TensorType | None,
                       axis: int, block_size: int) -> None:
    """Scale (and zero point, same shape) must be a scalar (per tensor), a vector of x's
    ``axis`` dim (per axis), or x's shape with ``axis`` cut in blocks of ``block_size``."""
    # A scalar and a one-element vector both mean "per tensor" (ONNX's own tests mix them).
    if zero_point is not None and None not in (scale.shape, zero_point.shape) and not (
            scale.shape in ((), (1,)) and zero_point.shape in ((), (1,))):
        if len(scale.shape) != len(zero_point.shape) or any(
                isinstance(a, int) and isinstance(b, int) and a != b
                for a, b in zip(scale.shape, zero_point.shape)):
            raise PirError(f"the zero point {zero_point} and the scale {scale} differ in shape")
    if block_size < 0:
        raise PirError(f"block_size must be 0 (no blocks) or positive, got {block_size}")
    s = scale.shape
    if x.shape is None or s is None or s in ((), (1,)):  # per tensor
        return
    rank = len(x.shape)
    ax = normalize_axis(axis, rank)
    d = x.shape[ax]
    if not block_size:
        if len(s) != 1:
            raise PirError(f"a per-axis scale must be a vector, got {scale} (for blocks, "
                           "set block_size)")
        if isinstance(s[0], int) and isinstance(d, int) and s[0] != d:
            raise PirError(f"the per-axis scale has {s[0]} values for axis {axis} of size {d}")
        return
    if len(s) != rank:
        raise PirError(f"a blocked scale must have x's rank {rank}, got {scale}")
    for i, (a, b) in enumerate(zip(x.shape, s)):
        if i == ax:
            if isinstance(a, int) and isinstance(b, int) and -(-a // block_size) != b:
                raise PirError(f"blocks of {block_size} along axis {axis} (size {a}) need "
                               f"{-(-a // block_size)} scales, got {b}")
        elif isinstance(a, int) and isinstance(b, int) and a != b:
            raise PirError(f"the blocked scale {scale} differs from x {x} outside axis {axis}")


class QuantizeLinear(Operation):
    """y = saturate(round_half_even(x / y_scale) + y_zero_point), per tensor, per axis or
    per block; float8 and float4 results are a (saturating) cast of x / y_scale."""

    name = "nn.quantize_linear"
    traits = frozenset({Pure})
    x = operand(dtypes=_HIGH | {DType.I32})
    y_scale = operand(dtypes=_HIGH | {DType.I32, DType.F8E8M0FNU})
    y_zero_point = operand(optional=True, dtypes=QUANT_DTYPES)
    axis = attr(INT, 1)
    block_size = attr(INT, 0)
    saturate = attr(BOOL, True)
    output_dtype = attr(DTYPE, None)  # absent: the zero point's type, else ui8
    precision = attr(DTYPE, None)  # the type of the division; absent: y_scale's type
    y = result()

    def infer(self):
        tx = tensor(self.x)
        tz = tensor(self.y_zero_point) if self.y_zero_point is not None else None
        check_quant_params(tx, tensor(self.y_scale), tz, self.axis, self.block_size)
        out = tz.dtype if tz is not None else (self.output_dtype or DType.U8)
        if tz is not None and self.output_dtype not in (None, tz.dtype):
            raise PirError(f"output_dtype {self.output_dtype.value} differs from the zero "
                           f"point's type {tz.dtype.value}")
        if out not in QUANT_DTYPES:
            raise PirError(f"{out.value} is not a quantised type")
        return [tx.with_dtype(out)]


class DequantizeLinear(Operation):
    """y = (x - x_zero_point) * x_scale, per tensor, per axis or per block."""

    name = "nn.dequantize_linear"
    traits = frozenset({Pure})
    x = operand(dtypes=QUANT_DTYPES | {DType.I32})
    x_scale = operand(dtypes=_HIGH | {DType.F8E8M0FNU})
    x_zero_point = operand(optional=True, dtypes=QUANT_DTYPES | {DType.I32})
    axis = attr(INT, 1)
    block_size = attr(INT, 0)
    output_dtype = attr(DTYPE, None)  # absent: x_scale's type
    y = result()

    def infer(self):
        tx, ts = tensor(self.x), tensor(self.x_scale)
        tz = tensor(self.x_zero_point) if self.x_zero_point is not None else None
        if tz is not None and tz.dtype != tx.dtype:
            raise PirError(f"the zero point's type {tz.dtype.value} differs from x's "
                           f"{tx.dtype.value}")
        check_quant_params(tx, ts, tz, self.axis, self.block_size)
        out = self.output_dtype or ts.dtype
        if out not in _HIGH:
            raise PirError(f"the result type {out.value} must be f32, f16 or bf16 (set "
                           "output_dtype)")
        return [tx.with_dtype(out)]


class DynamicQuantizeLinear(Operation):
    """y, y_scale, y_zero_point = ui8 quantisation of x with the scale and zero point that map
    [min(x, 0), max(x, 0)] onto [0, 255]."""

    name = "nn.dynamic_quantize_linear"
    traits = frozenset({Pure})
    x = operand(dtypes={DType.F32})
    y = result()
    y_scale = result()
    y_zero_point = result()

    def infer(self):
        tx = tensor(self.x)
        return [tx.with_dtype(DType.U8), TensorType(DType.F32, ()), TensorType(DType.U8, ())]


_INT8 = frozenset({DType.I8, DType.U8})


#: ONNX's MatMulInteger takes 8-bit operands; onnxruntime's MatMulInteger16 16-bit ones.
_INT8_16 = frozenset(_INT8 | {DType.I16, DType.U16})


class MatMulInteger(Operation):
    """y = (a - a_zero_point) @ (b - b_zero_point) in i32, with numpy.matmul semantics; the zero
    points are scalars, per row of a or per column of b.  Operands are 8-bit (ONNX's
    MatMulInteger) or 16-bit (onnxruntime's MatMulInteger16; the i32 sum may wrap)."""

    name = "nn.matmul_integer"
    traits = frozenset({Pure})
    a = operand(dtypes=_INT8_16)
    b = operand(dtypes=_INT8_16)
    a_zero_point = operand(optional=True, dtypes=_INT8_16)
    b_zero_point = operand(optional=True, dtypes=_INT8_16)
    y = result()

    def infer(self):
        ta, tb = tensor(self.a), tensor(self.b)
        for zp, t in ((self.a_zero_point, ta), (self.b_zero_point, tb)):
            if zp is not None and tensor(zp).dtype != t.dtype:
                raise PirError(f"zero point of type {tensor(zp).dtype.value} for an operand "
                               f"of type {t.dtype.value}")
        return [TensorType(DType.I32, matmul_shape(ta.shape, tb.shape))]


_QMM = frozenset(_INT8 | FLOAT8)


class QLinearMatMul(Operation):
    """y = quantize((dequantize(a) @ dequantize(b)), y_scale, y_zero_point), computed exactly
    in integers before the final rescale."""

    name = "nn.qlinear_matmul"
    traits = frozenset({Pure})
    a = operand(dtypes=_QMM)
    a_scale = operand(dtypes=_HIGH)
    a_zero_point = operand(dtypes=_QMM)
    b = operand(dtypes=_QMM)
    b_scale = operand(dtypes=_HIGH)
    b_zero_point = operand(dtypes=_QMM)
    y_scale = operand(dtypes=_HIGH)
    y_zero_point = operand(dtypes=_QMM)
    y = result()

    def infer(self):
        ta, tb = tensor(self.a), tensor(self.b)
        for name in ("a", "b"):
            if tensor(getattr(self, f"{name}_zero_point")).dtype != tensor(getattr(self, name)).dtype:
                raise PirError(f"'{name}_zero_point' must have the type of '{name}'")
        return [TensorType(tensor(self.y_zero_point).dtype, matmul_shape(ta.shape, tb.shape))]
