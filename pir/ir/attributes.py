"""Attribute values and the kinds that op declarations use to check them.

Attribute values are immutable Python values: ``bool``, ``int``, ``float``, ``str``, tuples of
those, a :class:`~pir.ir.types.DType`, a :class:`~pir.ir.types.Type`, or one of the frozen
dataclasses below (an inline tensor, a reference to a resource, a reference to a symbol).
An op declaration names a *kind* for each attribute (``INT``, ``FLOATS``, ``TENSOR`` ...); the
kind checks and normalises a value when an op is built (lists become tuples, ints given to a
float attribute become floats), so a malformed attribute never reaches a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from pir.ir.types import DType, TensorType, Type

__all__ = [
    "DenseAttr",
    "dense_array",
    "ResourceRef",
    "SymbolRef",
    "AttrKind",
    "INT",
    "FLOAT",
    "BOOL",
    "STR",
    "INTS",
    "FLOATS",
    "STRS",
    "DTYPE",
    "TYPE",
    "TENSOR",
    "SYMBOL",
    "ANY",
]


@dataclass(frozen=True, eq=False)
class DenseAttr:
    """A small tensor stored inline in the IR text (large ones go to the resource section)."""

    array: np.ndarray

    def __post_init__(self) -> None:
        arr = np.array(self.array, copy=True)  # own the data so nobody can mutate it behind us
        arr.flags.writeable = False
        object.__setattr__(self, "array", arr)
        DType.from_numpy(arr.dtype)  # raises for dtypes the IR cannot hold

    @property
    def type(self) -> TensorType:
        return TensorType.of(self.array)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DenseAttr):
            return NotImplemented
        a, b = self.array, other.array
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind in "fc":  # NaN payloads compare equal, -0.0 differs from 0.0
            return a.tobytes() == b.tobytes()
        return bool(np.array_equal(a, b))

    def __hash__(self) -> int:
        return hash((self.array.dtype.str, self.array.shape, self.array.tobytes()[:64]))


@dataclass(frozen=True)
class ResourceRef:
    """Names an entry of the module's resource section: ``resource<"fc1.weight">``."""

    key: str


@dataclass(frozen=True)
class SymbolRef:
    """Names a symbol (a function) of the module: ``@main``."""

    name: str


@dataclass(frozen=True)
class AttrKind:
    """How to check and normalise one kind of attribute value."""

    name: str
    convert: Callable[[Any], Any]

    def __call__(self, value: Any) -> Any:
        return self.convert(value)


def _int(v: Any) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"expected an integer, got {v!r}")
    return int(v)


def _float(v: Any) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"expected a number, got {v!r}")
    return float(v)


def _bool(v: Any) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)) and v in (0, 1):  # ONNX spells booleans as 0/1 ints
        return bool(v)
    raise TypeError(f"expected a boolean, got {v!r}")


def _str(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if not isinstance(v, str):
        raise TypeError(f"expected a string, got {v!r}")
    return v


def _seq(item: Callable[[Any], Any]) -> Callable[[Any], tuple]:
    def convert(v: Any) -> tuple:
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
            raise TypeError(f"expected a list, got {v!r}")
        return tuple(item(x) for x in v)

    return convert


def _dtype(v: Any) -> DType:
    if isinstance(v, DType):
        return v
    raise TypeError(f"expected an element type, got {v!r}")


def _type(v: Any) -> Type:
    if isinstance(v, Type):
        return v
    raise TypeError(f"expected a type, got {v!r}")


def _tensor(v: Any) -> DenseAttr | ResourceRef:
    if isinstance(v, (DenseAttr, ResourceRef)):
        return v
    if isinstance(v, np.ndarray):
        return DenseAttr(v)
    raise TypeError(f"expected a tensor (dense<...> or resource<...>), got {v!r}")


def _symbol(v: Any) -> SymbolRef:
    if isinstance(v, SymbolRef):
        return v
    if isinstance(v, str):
        return SymbolRef(v)
    raise TypeError(f"expected a symbol reference, got {v!r}")


def _any(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_any(x) for x in v)
    return v


INT = AttrKind("int", _int)
FLOAT = AttrKind("float", _float)
BOOL = AttrKind("bool", _bool)
STR = AttrKind("str", _str)
INTS = AttrKind("ints", _seq(_int))
FLOATS = AttrKind("floats", _seq(_float))
STRS = AttrKind("strs", _seq(_str))
DTYPE = AttrKind("dtype", _dtype)
TYPE = AttrKind("type", _type)
TENSOR = AttrKind("tensor", _tensor)
SYMBOL = AttrKind("symbol", _symbol)
ANY = AttrKind("any", _any)


def _check_integral(value: Any, ty: TensorType) -> None:
    """Integer and boolean tensors take whole numbers only: numpy would truncate 3.7."""
    if isinstance(value, list):
        for v in value:
            _check_integral(v, ty)
    elif isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{value} is not a whole number, as {ty.dtype.value} elements must be")
    elif isinstance(value, (str, complex)):
        raise ValueError(f"{value!r} is not a {ty.dtype.value} element")


def dense_array(value: Any, ty: TensorType) -> np.ndarray:
    """The array a dense literal's nested values denote for ``ty`` (one value: a splat);
    a ValueError when they do not fit it."""
    npdt = ty.dtype.numpy
    if ty.dtype is DType.STRING:
        arr = np.array(value, dtype=object)
    elif ty.dtype.is_float and ty.dtype not in (DType.F32, DType.F64, DType.F16):
        arr = np.array(value, dtype=np.float64).astype(npdt)  # bf16/f8: via a wide float
    else:
        if ty.dtype.is_int or ty.dtype is DType.BOOL:
            _check_integral(value, ty)
        arr = np.array(value, dtype=npdt)
    if arr.ndim == 0 and ty.rank != 0:
        return np.full(ty.shape, arr[()], dtype=arr.dtype)  # splat
    if arr.shape != ty.shape and not (arr.size == 0 and ty.numel == 0):
        raise ValueError(f"{arr.shape} elements given for {ty}")
    return arr.reshape(ty.shape)
