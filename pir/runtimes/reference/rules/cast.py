"""Reference rules for casts, with ONNX's float8 saturation and float8e8m0 rounding."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from pir.ir.dialects.nn.cast import bit_width
from pir.ir.types import DType
from pir.runtimes.reference.registry import evaluates

_F8_SATURATING = {DType.F8E4M3FN, DType.F8E4M3FNUZ, DType.F8E5M2, DType.F8E5M2FNUZ}
_NATIVE_KINDS = "biuf"


def _is_native(dtype: np.dtype) -> bool:
    """numpy's own types; ml_dtypes' (bf16, float8, int4 ...) do not cast to everything."""
    return dtype.kind in _NATIVE_KINDS and dtype.type.__module__ == "numpy"


def _astype(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """x.astype(dtype), going through a numpy type when ml_dtypes has no direct cast."""
    try:
        return x.astype(dtype)
    except (TypeError, ValueError):
        via = np.int64 if DType.from_numpy(x.dtype).is_int else np.float32
        return x.astype(via).astype(dtype)


def _parse_strings(x: np.ndarray, to: DType) -> np.ndarray:
    """Numbers from strings: plain or scientific, and INF/+INF/-INF/NaN in any case."""
    texts = [s.decode() if isinstance(s, bytes) else str(s) for s in x.ravel()]
    if to.is_int:
        def parse(s):
            try:
                return int(s)
            except ValueError:  # "2.7" to an integer type: undefined in ONNX; truncate
                return int(float(s))
        ints = np.array([parse(s) for s in texts], dtype=object).reshape(x.shape)
        return ints.astype(np.int64 if to.is_signed else np.uint64)
    return np.array([float(s) for s in texts], dtype=np.float64).reshape(x.shape)


def _number_text(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "INF" if v > 0 else "-INF"
        return "%.8g" % v
    return str(int(v))  # integers, and booleans as 1/0


def _to_strings(x: np.ndarray) -> np.ndarray:
    """Numbers as text, spelled as ONNX Runtime spells them: floats with 8 significant digits
    ("0.33333334", "1e+10"), NaN, INF and -INF, booleans as 1 and 0."""
    if not _is_native(x.dtype):
        x = _astype(x, np.dtype(np.float32))
    texts = [_number_text(v) for v in x.ravel().tolist()]
    return np.array(texts, dtype=object).reshape(x.shape)


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """Powers of two 2^(code - 127), code 0..254; 255 is NaN.  Negative inputs are
    undefined in ONNX: their magnitude is converted."""
    w = np.abs(x.astype(np.float64))
    mant, exp = np.frexp(w)  # w = mant * 2^exp with mant in [0.5, 1)
    code = exp - 1 + 127
    frac = 2 * mant - 1  # w = (1 + frac) * 2^(code - 127)
    if round_mode == "up":
        code = code + (frac > 0)
    elif round_mode == "nearest":
        code = code + (frac >= 0.5)  # the midpoint 1.5 * 2^k rounds up
    low, high = (0, 254) if saturate else (255, 255)
    code = np.where(code < 0, low, np.where(code > 254, high, code))
    code = np.where(w == 0, low, code)
    code = np.where(np.isinf(w), high, code)
    code = np.where(np.isnan(w), 255, code)
    return code.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)


@evaluates("nn.cast")
def cast(op, x):
    to: DType = op.to
    if to is DType.STRING:
        return x.copy() if x.dtype == object else _to_strings(x)
    if x.dtype == object:
        x = _parse_strings(x, to)
    with np.errstate(all="ignore"):  # out-of-range and NaN conversions are values, not errors
        if to is DType.F8E8M0FNU:
            return _to_e8m0(x, op.saturate, op.round_mode)
        if to in _F8_SATURATING and op.saturate:
            # Clamp first: infinities and values beyond the range become the largest finite
            # value instead of inf/NaN.  NaN stays NaN.
            info = ml_dtypes.finfo(to.numpy)
            x = np.clip(_astype(x, np.dtype(np.float64)), float(info.min), float(info.max))
        return _astype(x, to.numpy)


def _bits(x: np.ndarray) -> np.ndarray:
    """The raw bits of each element of a sub-byte array, as uint8."""
    dtype = DType.from_numpy(x.dtype)
    if dtype.is_int:
        return x.astype(np.int8).view(np.uint8) & ((1 << bit_width(dtype)) - 1)
    return x.view(np.uint8)


def _from_bits(bits: np.ndarray, to: DType) -> np.ndarray:
    n = bit_width(to)
    if to is DType.F4E2M1FN:
        return bits.view(to.numpy)
    if to.is_signed:  # sign-extend the n-bit two's complement value
        vals = bits.astype(np.int16) - ((bits >> (n - 1)) & 1).astype(np.int16) * (1 << n)
        return vals.astype(to.numpy)
    return bits.astype(to.numpy)


@evaluates("nn.bit_cast")
def bit_cast(op, x):
    to: DType = op.to
    if bit_width(to) >= 8:
        return x.view(to.numpy)
    # Sub-byte types sit one per byte in numpy, so a plain view would read the padding too.
    return _from_bits(_bits(x), to)
