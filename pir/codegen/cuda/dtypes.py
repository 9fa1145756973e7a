"""Element types in CUDA C: the storage type of a buffer, the type arithmetic is done in, how a
load widens and a store narrows, and how a literal is spelled.

float16 and bfloat16 are stored as ``__half`` / ``__nv_bfloat16`` and computed in float32
(loads widen, stores round to nearest even once), as the reference runtime and the tvm
lowering do; sums of them accumulate in float32.
"""

from __future__ import annotations

import math

import numpy as np

from pir.errors import PirError
from pir.ir.types import DType

__all__ = ["storage", "compute", "family", "load", "store", "rounded", "literal", "itemsize",
           "SUPPORTED"]

_STORAGE = {
    DType.BOOL: "bool", DType.I8: "signed char", DType.I16: "short", DType.I32: "int",
    DType.I64: "long long", DType.U8: "unsigned char", DType.U16: "unsigned short",
    DType.U32: "unsigned int", DType.U64: "unsigned long long", DType.F16: "__half",
    DType.BF16: "__nv_bfloat16", DType.F32: "float", DType.F64: "double",
}
SUPPORTED = frozenset(_STORAGE)

#: the type arithmetic on an element is done in (f16 and bf16 widen to float)
_COMPUTE = {DType.F16: "float", DType.BF16: "float"}


def _check(dtype: DType) -> None:
    if dtype not in _STORAGE:
        raise PirError(f"cuda codegen: element type {dtype.value} is not supported")


def storage(dtype: DType) -> str:
    _check(dtype)
    return _STORAGE[dtype]


def compute(dtype: DType) -> str:
    _check(dtype)
    return _COMPUTE.get(dtype, _STORAGE[dtype])


def family(dtype: DType) -> str:
    """Which column of the op table applies: ``float`` (f16, bf16, f32), ``double``, ``int``
    (signed), ``uint`` or ``bool``."""
    _check(dtype)
    if dtype is DType.BOOL:
        return "bool"
    if dtype is DType.F64:
        return "double"
    if dtype.is_float:
        return "float"
    return "uint" if dtype.value.startswith("ui") else "int"


def itemsize(dtype: DType) -> int:
    return np.dtype(dtype.numpy).itemsize


def load(dtype: DType, expr: str) -> str:
    """A stored element as its compute type."""
    if dtype is DType.F16:
        return f"__half2float({expr})"
    if dtype is DType.BF16:
        return f"__bfloat162float({expr})"
    return expr


def store(dtype: DType, expr: str) -> str:
    """A computed value as the stored element (rounded to nearest even for f16 / bf16)."""
    if dtype is DType.F16:
        return f"__float2half_rn({expr})"
    if dtype is DType.BF16:
        return f"__float2bfloat16_rn({expr})"
    return expr


def rounded(dtype: DType, expr: str) -> str:
    """An op's float result rounded to its narrow type and widened again: every f16 / bf16
    op rounds its result once, as the reference runtime (and the tvm lowering) do, so
    kernels give the reference's numbers, not more precise ones."""
    if dtype in (DType.F16, DType.BF16):
        return load(dtype, store(dtype, expr))
    return expr


def literal(value, dtype: DType) -> str:
    """``value`` as a C literal of ``dtype``'s compute type (infinities and NaN by their bits:
    CUDA's INFINITY needs a header NVRTC does not always have)."""
    fam = family(dtype)
    if fam == "bool":
        return "true" if bool(value) else "false"
    if fam in ("float", "double"):
        v = float(value)
        single = fam == "float"
        if math.isnan(v):
            return "__int_as_float(0x7fffffff)" if single else \
                "__longlong_as_double(0x7ff8000000000000LL)"
        if math.isinf(v):
            if single:
                return f"__int_as_float({'0xff800000' if v < 0 else '0x7f800000'})"
            return f"__longlong_as_double({'0xfff0000000000000' if v < 0 else '0x7ff0000000000000'}LL)"
        if single:
            v = float(np.float32(v))
            text = repr(v)
            return f"{text}f" if any(c in text for c in ".e") else f"{text}.0f"
        text = repr(v)
        return text if any(c in text for c in ".e") else f"{text}.0"
    v = int(value)
    if fam == "uint":
        return f"{v}ULL" if dtype is DType.U64 else f"{v}u"
    if dtype is DType.I64:
        return "(-9223372036854775807LL - 1)" if v == -2**63 else f"{v}LL"
    if v == -2**31:
        return "(-2147483647 - 1)"
    return str(v)
