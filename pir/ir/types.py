"""Element types and value types of the IR.

Types are immutable and check themselves when built (xDSL's pattern): a malformed type can
not exist, so no later stage has to re-check it.

A tensor shape is a tuple of dims, each an ``int`` (static), a ``str`` (a named symbolic dim
such as ``B`` or ``seq``, equal wherever the same name appears in one function), a
:class:`~pir.ir.dimexpr.DimExpr` (an expression over symbols, printed in parentheses:
``tensor<Nx4x((H + 1) floordiv 2)xf32>``) or ``None`` (unknown, printed ``?``).  ``shape=None`` is an unranked tensor, printed ``tensor<*xf32>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Callable

import ml_dtypes
import numpy as np

from pir.ir import dimexpr
from pir.ir.dimexpr import DimExpr
from pir.limits import INT64_MAX

__all__ = ["DType", "Dim", "Type", "TensorType", "IndexType", "FunctionType", "is_symbol_name",
           "bound_shape", "parse_tensor_body", "int64_problem", "DIALECT_TYPES",
           "register_dialect_type"]

_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_symbol_name(name: str) -> bool:
    """A symbolic dim name is an identifier (it is printed bare inside ``tensor<...>``)."""
    return bool(_SYMBOL.match(name)) and not _DIM_LOOKS_LIKE_DTYPE.match(name)


# A symbol spelled like a dtype ("f32") would make ``tensor<f32xf32>`` ambiguous to read.
_DIM_LOOKS_LIKE_DTYPE = re.compile(r"(f|i|ui|bf|c)\d+(E\d+M\d+\w*)?\Z|str\Z|index\Z")


class DType(Enum):
    """Element types, spelled as in MLIR.  The value is the printed spelling."""

    BOOL = "i1"
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    I64 = "i64"
    U8 = "ui8"
    U16 = "ui16"
    U32 = "ui32"
    U64 = "ui64"
    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"
    C64 = "c64"
    C128 = "c128"
    STRING = "str"
    # Narrow types of ONNX's quantisation and Cast tests (ml_dtypes gives them to numpy).
    F8E4M3FN = "f8E4M3FN"
    F8E4M3FNUZ = "f8E4M3FNUZ"
    F8E5M2 = "f8E5M2"
    F8E5M2FNUZ = "f8E5M2FNUZ"
    F8E8M0FNU = "f8E8M0FNU"
    F4E2M1FN = "f4E2M1FN"
    I4 = "i4"
    U4 = "ui4"
    I2 = "i2"
    U2 = "ui2"

    @property
    def numpy(self) -> np.dtype:
        return _TO_NUMPY[self]

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_int(self) -> bool:
        return self in _INTS

    @property
    def is_signed(self) -> bool:
        return self in (DType.I8, DType.I16, DType.I32, DType.I64) or self.is_float

    @property
    def itemsize(self) -> int:
        return 0 if self is DType.STRING else _TO_NUMPY[self].itemsize

    @staticmethod
    def from_numpy(dtype) -> DType:
        dtype = np.dtype(dtype)
        if dtype.kind in "OUS":
            return DType.STRING
        try:
            return _FROM_NUMPY[dtype]
        except KeyError:
            raise ValueError(f"numpy dtype {dtype} has no IR element type") from None

    @staticmethod
    def parse(text: str) -> DType:
        try:
            return DType(text)
        except ValueError:
            raise ValueError(f"unknown element type '{text}'") from None

    def __repr__(self) -> str:
        return f"DType.{self.name}"


_INTS = frozenset(
    {DType.I8, DType.I16, DType.I32, DType.I64, DType.U8, DType.U16, DType.U32, DType.U64,
     DType.I4, DType.U4, DType.I2, DType.U2}
)
_FLOATS = frozenset(
    {DType.F16, DType.BF16, DType.F32, DType.F64, DType.F8E4M3FN, DType.F8E4M3FNUZ,
     DType.F8E5M2, DType.F8E5M2FNUZ, DType.F8E8M0FNU, DType.F4E2M1FN}
)
_TO_NUMPY = {
    DType.BOOL: np.dtype(np.bool_),
    DType.I8: np.dtype(np.int8),
    DType.I16: np.dtype(np.int16),
    DType.I32: np.dtype(np.int32),
    DType.I64: np.dtype(np.int64),
    DType.U8: np.dtype(np.uint8),
    DType.U16: np.dtype(np.uint16),
    DType.U32: np.dtype(np.uint32),
    DType.U64: np.dtype(np.uint64),
    DType.F16: np.dtype(np.float16),
    DType.BF16: np.dtype(ml_dtypes.bfloat16),
    DType.F32: np.dtype(np.float32),
    DType.F64: np.dtype(np.float64),
    DType.C64: np.dtype(np.complex64),
    DType.C128: np.dtype(np.complex128),
    DType.STRING: np.dtype(object),
    DType.F8E4M3FN: np.dtype(ml_dtypes.float8_e4m3fn),
    DType.F8E4M3FNUZ: np.dtype(ml_dtypes.float8_e4m3fnuz),
    DType.F8E5M2: np.dtype(ml_dtypes.float8_e5m2),
    DType.F8E5M2FNUZ: np.dtype(ml_dtypes.float8_e5m2fnuz),
    DType.F8E8M0FNU: np.dtype(ml_dtypes.float8_e8m0fnu),
    DType.F4E2M1FN: np.dtype(ml_dtypes.float4_e2m1fn),
    DType.I4: np.dtype(ml_dtypes.int4),
    DType.U4: np.dtype(ml_dtypes.uint4),
    DType.I2: np.dtype(ml_dtypes.int2),
    DType.U2: np.dtype(ml_dtypes.uint2),
}
_FROM_NUMPY = {v: k for k, v in _TO_NUMPY.items() if k is not DType.STRING}

Dim = int | str | DimExpr | None


def _dim_text(d: Dim) -> str:
    # Dims are separated by 'x', so a symbol holding an 'x' is quoted: tensor<"max_len"x4xf32>;
    # an expression is parenthesised, which delimits it whatever it holds.
    if d is None:
        return "?"
    if isinstance(d, DimExpr):
        return dimexpr.dim_text(d)
    if isinstance(d, str) and "x" in d:
        return f'"{d}"'
    return str(d)


class Type:
    """Base of all value types."""

    __slots__ = ()


_GOOD_SHAPES: set[tuple] = set()


def _known_good(shape: tuple) -> bool:
    """Shapes are checked once: type rules build the same few shapes over and over."""
    if shape in _GOOD_SHAPES:
        return True
    if len(_GOOD_SHAPES) < 65536 and all(
        d is None or (type(d) is int and d >= 0) or (type(d) is str and is_symbol_name(d))
        or (type(d) is DimExpr and _good_expr(d))
        for d in shape
    ):
        _GOOD_SHAPES.add(shape)
        return True
    return False


def _good_expr(d: DimExpr) -> bool:
    return all(is_symbol_name(s) for s in dimexpr.symbols(d))


@dataclass(frozen=True, slots=True)
class FunctionType(Type):
    """``(inputs) -> (outputs)``: the type of a function."""

    inputs: tuple[Type, ...]
    outputs: tuple[Type, ...]

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        outs = ", ".join(map(str, self.outputs))
        return f"({ins}) -> ({outs})"


@dataclass(frozen=True, slots=True)
class IndexType(Type):
    """A scalar integer used for sizes and loop counters (MLIR's ``index``)."""

    def __str__(self) -> str:
        return "index"


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """``tensor<d0 x d1 x ... x dtype>``; a rank-0 tensor is ``tensor<f32>``."""

    dtype: DType
    shape: tuple[Dim, ...] | None

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DType):
            raise TypeError(f"tensor element type must be a DType, got {self.dtype!r}")
        if self.shape is None:
            return
        if not isinstance(self.shape, tuple):
            object.__setattr__(self, "shape", tuple(self.shape))
        if _known_good(self.shape):
            return
        for d in self.shape:
            if d is None:
                continue
            if isinstance(d, DimExpr):
                bad = sorted(s for s in dimexpr.symbols(d) if not is_symbol_name(s))
                if bad:
                    raise ValueError(f"symbolic dim '{bad[0]}' is not an identifier")
                continue
            if isinstance(d, bool) or not isinstance(d, (int, str)):
                raise TypeError(f"tensor dim must be int, symbol, expression or None, got {d!r}")
            if isinstance(d, int) and d < 0:
                raise ValueError(f"tensor dim must be non-negative, got {d}")
            if isinstance(d, str) and not is_symbol_name(d):
                raise ValueError(f"symbolic dim '{d}' is not an identifier")

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    @property
    def numel(self) -> int | None:
        if not self.is_static:
            return None
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int | None:
        n = self.numel
        return None if n is None else n * self.dtype.itemsize

    def with_shape(self, shape) -> TensorType:
        return TensorType(self.dtype, None if shape is None else tuple(shape))

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(dtype, self.shape)

    def __str__(self) -> str:
        if self.shape is None:
            return f"tensor<*x{self.dtype.value}>"
        dims = "".join(f"{_dim_text(d)}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype.value}>"

    @staticmethod
    def of(array: np.ndarray) -> TensorType:
        return TensorType(DType.from_numpy(array.dtype), tuple(int(d) for d in array.shape))


def int64_problem(ty: TensorType) -> str | None:
    """Why ``ty`` can be no tensor, or None: numpy, ONNX and every kernel count dims,
    elements and bytes in int64 (pir.limits), so a type past that is an error even where
    nothing allocates it.  Exact, in Python integers."""
    if ty.shape is None:
        return None
    for d in ty.shape:
        if type(d) is int and d > INT64_MAX:
            return f"dim {d} does not fit in int64"
    if not ty.is_static:
        return None
    n = ty.numel
    if n * max(ty.dtype.itemsize, 1) <= INT64_MAX:
        return None
    dims = ", ".join(map(str, ty.shape))
    if n > INT64_MAX:
        return f"shape [{dims}] has {n} elements, more than int64 can count"
    return f"shape [{dims}] takes {n * ty.dtype.itemsize} bytes, more than int64 can count"


_DIM = re.compile(r'(\d+|\?|"([A-Za-z_][A-Za-z0-9_]*)"|[A-Za-z_][A-Za-wyz0-9_]*)x')


def parse_tensor_body(body: str) -> TensorType:
    """The tensor type spelled ``body`` (the text inside ``tensor<...>``: ``Bx4xf32``,
    ``*xf32``); raises ValueError or TypeError when it is malformed."""
    pos = 0
    dims: list[Dim] = []
    if body.startswith("*x"):
        shape = None
        pos = 2
    else:
        while True:
            if body.startswith("(", pos):  # an expression runs to its matching parenthesis
                end = _closing_paren(body, pos)
                if not body.startswith("x", end + 1):
                    break
                dims.append(dimexpr.parse_dim_expr(body[pos + 1:end]))
                pos = end + 2
                continue
            m = _DIM.match(body, pos)
            if m is None:
                break
            d = m.group(1)
            if d == "?":
                dims.append(None)
            elif d.isdigit():
                dims.append(int(d))
            else:
                dims.append(m.group(2) or d)
            pos = m.end()
        shape = tuple(dims)
    return TensorType(DType.parse(body[pos:]), shape)


def _closing_paren(body: str, start: int) -> int:
    depth = 0
    for i in range(start, len(body)):
        if body[i] == "(":
            depth += 1
        elif body[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("a dim expression's '(' is never closed")


#: Types that dialects declare, spelled ``!dialect.name<body>`` (MLIR's dialect types), by
#: ``dialect.name``: each parser takes the body (the text between the outer angle brackets)
#: and returns the type, raising ValueError or TypeError when the body is malformed.  The
#: type's ``__str__`` prints the same spelling back.
DIALECT_TYPES: dict[str, Callable[[str], Type]] = {}


def register_dialect_type(name: str, parse: Callable[[str], Type]) -> None:
    """Declare the dialect type ``!name<...>`` (called once, by its dialect's module)."""
    if name in DIALECT_TYPES:
        raise ValueError(f"type '!{name}' is declared twice")
    DIALECT_TYPES[name] = parse


def bound_shape(t, sizes: dict[str, int]) -> tuple[int, ...] | None:
    """The shape of tensor type ``t`` with its symbolic dims taken from ``sizes`` (a run's
    binding); None when a dim is unknown or unbound, or ``t`` is not a ranked tensor."""
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    out = []
    for d in t.shape:
        n = dimexpr.evaluate(d, sizes)
        if n is None:
            return None
        out.append(n)
    return tuple(out)
