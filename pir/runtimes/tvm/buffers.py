"""numpy arrays as TVM tensors: sharing memory (DLPack) where TVM can, copying where not.

TVM shares only C-ordered memory aligned to 64 bytes, of a dtype DLPack knows (not the
ml_dtypes bfloat16 and f8 types), and refuses the zero strides of an empty numpy array.
"""

from __future__ import annotations

import math

import numpy as np

import tvm

from pir.ir.types import DType
from pir.runtimes.aligned import ALIGN, aligned, aligned_empty

__all__ = ["ALIGN", "OutputPool", "aligned_empty", "as_tvm", "contiguous", "shareable"]


class OutputPool:
    """Memory for the arrays a function returns, reused once the caller has dropped them.

    A returned array must survive the next run, so it cannot live in a planned slot; a new
    allocation per run, though, costs a page fault and a zeroed page per 4 KB (for a
    [16384, 768] float32 output, more than the kernel that fills it).  Like ONNX Runtime's
    arena, the pool lends a buffer: the array it returns holds a :class:`_Lease`, whose
    finaliser gives the buffer back when the last array or view of it is gone."""

    def __init__(self) -> None:
        # free buffers by size, each with its address (``ctypes.data`` costs microseconds,
        # and a run takes one buffer per output: the pool is on every run's path)
        self._free: dict[int, list[tuple[np.ndarray, int]]] = {}

    def empty(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        """An uninitialised, 64-byte aligned C-ordered array from the pool."""
        return self.empty_at(shape, dtype)[0]

    def empty_at(self, shape: tuple[int, ...], dtype) -> tuple[np.ndarray, int]:
        """:meth:`empty`, and the address of the array's data."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize  # (np.prod costs 6 us a call)
        free = self._free.get(nbytes)
        if free:
            raw, address = free.pop()
        else:
            raw = aligned_empty((max(nbytes, 1),), np.uint8)
            address = raw.ctypes.data
        arr = np.asarray(_Lease(raw, address, tuple(shape), dtype, self._free, nbytes))
        # dtypes numpy's array interface cannot name (ml_dtypes' bfloat16 reads as V2)
        return (arr if arr.dtype == dtype else arr.view(dtype)), address


class _Lease:
    """The owner of a pooled buffer while arrays view it (numpy keeps the object an array
    was made from alive as its base, through every view)."""

    def __init__(self, raw: np.ndarray, address: int, shape, dtype: np.dtype, free: dict,
                 nbytes: int):
        self._raw, self._address, self._free, self._nbytes = raw, address, free, nbytes
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str, "version": 3,
                                    "data": (address, False), "descr": dtype.descr}

    def __del__(self) -> None:
        self._free.setdefault(self._nbytes, []).append((self._raw, self._address))


def as_tvm(a: np.ndarray, device) -> tuple[tvm.runtime.Tensor, np.ndarray | None]:
    """A TVM tensor for ``a``: sharing its memory when TVM can (C order, aligned, a dtype
    DLPack knows, writable), else a copy.  Also returns the numpy array the tensor shares
    (None for a copy), which a kernel's output can be read from without copying back."""
    a = contiguous(a)
    if a.size == 0:  # TVM refuses the zero strides numpy gives an empty array
        return tvm.runtime.empty(a.shape, _tvm_dtype_name(a.dtype), device), None
    if a.flags.writeable:
        a = aligned(a)
        try:
            return tvm.runtime.from_dlpack(a), a
        except (BufferError, RuntimeError, TypeError, ValueError):
            pass  # bf16 and other dtypes numpy cannot export: copy
    return tvm.runtime.tensor(a, device), None


def _tvm_dtype_name(dtype: np.dtype) -> str:
    return "bool" if dtype == np.bool_ else str(dtype)


def contiguous(a) -> np.ndarray:
    """A C-contiguous array of the same shape (np.ascontiguousarray makes 0-d arrays 1-d)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else np.array(a, order="C")


#: Element types numpy shares with TVM through DLPack (bfloat16 and the f8 types are
#: ml_dtypes that numpy cannot export: their results take the interpreter's path, a copy).
_DLPACK_KINDS = frozenset("biuf")


def shareable(dtype: DType, shape: tuple[int, ...]) -> bool:
    """A result the plan can give a buffer TVM writes in place: a dtype DLPack knows, and at
    least one element (TVM refuses the zero strides of an empty numpy array)."""
    np_dtype = np.dtype(dtype.numpy)
    return (np_dtype.kind in _DLPACK_KINDS and np_dtype.itemsize in (1, 2, 4, 8)
            and np_dtype.name in np.sctypeDict and 0 not in shape)
