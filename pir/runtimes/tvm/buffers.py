"""numpy arrays as TVM tensors: sharing memory (DLPack) where TVM can, copying where not.

TVM shares only C-ordered memory aligned to 64 bytes, of a dtype DLPack knows (not the
ml_dtypes bfloat16 and f8 types), and refuses the zero strides of an empty numpy array.
"""

from __future__ import annotations

import math
import sys
from collections import deque

import numpy as np

import tvm

from pir.ir.types import DType
from pir.runtimes.aligned import ALIGN, address, aligned, aligned_empty

__all__ = ["ALIGN", "OutputPool", "aligned_empty", "as_tvm", "contiguous", "shareable"]


class OutputPool:
    """Memory for the arrays a function returns, reused once the caller has dropped them.

    A returned array must survive the next run, so it cannot live in a planned slot; a new
    allocation per run, though, costs a page fault and a zeroed page per 4 KB (for a
    [16384, 768] float32 output, more than the kernel that fills it).  Like ONNX Runtime's
    arena, the pool lends a buffer, and lends it again once nothing holds the array it gave
    or any view of it: numpy makes every view's ``base`` the array that owns the memory, so
    the owner's reference count, and that of the lent array itself, say whether anything
    outside the pool still reads the buffer (0.1 us to ask, where a finaliser on a wrapper
    object cost 2.5 us an array)."""

    def __init__(self) -> None:
        # by size in bytes, each in the order a request looks at them: one it lends, or finds
        # still held, goes to the back, so the buffers a caller keeps make a request look
        # at each of them once (0.1 us a buffer) but never make it allocate another
        self._buffers: dict[int, deque[_Buffer]] = {}

    def empty(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        """An uninitialised, 64-byte aligned C-ordered array from the pool."""
        return self.empty_at(shape, dtype)[0]

    def empty_at(self, shape: tuple[int, ...], dtype) -> tuple[np.ndarray, int]:
        """:meth:`empty`, and the address of the array's data."""
        dtype = np.dtype(dtype)
        shape = tuple(shape)
        nbytes = math.prod(shape) * dtype.itemsize  # (np.prod costs 6 us a call)
        bufs = self._buffers.get(nbytes)
        if bufs is None:
            bufs = self._buffers[nbytes] = deque()
        for _ in range(len(bufs)):
            buf = bufs.popleft()
            bufs.append(buf)
            if buf.free():
                return buf.lend(shape, dtype), buf.address
        buf = _Buffer(nbytes)
        bufs.append(buf)
        return buf.lend(shape, dtype), buf.address


class _Buffer:
    """One buffer of the pool: its memory, and the array it last lent."""

    __slots__ = ("raw", "owner", "address", "arr", "arr_refs", "owner_refs")

    def __init__(self, nbytes: int):
        self.raw = aligned_empty((max(nbytes, 1),), np.uint8)
        self.owner = self.raw.base  # the allocation that every view of it has as its base
        self.address = address(self.raw)
        self.arr: np.ndarray | None = None

    def lend(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """The buffer as an array of ``shape`` and ``dtype`` (the last one lent, when it has
        them): the caller must have checked :meth:`free` first."""
        if self.arr is None or self.arr.shape != shape or self.arr.dtype != dtype:
            nbytes = math.prod(shape) * dtype.itemsize
            self.arr = self.raw[:nbytes].view(dtype).reshape(shape)
            # what the pool's own references count, taken as free() takes them
            self.arr_refs = sys.getrefcount(self.arr)
            self.owner_refs = sys.getrefcount(self.owner)
        return self.arr

    def free(self) -> bool:
        """Whether nothing but the pool holds the lent array or a view of the buffer."""
        return sys.getrefcount(self.arr) == self.arr_refs \
            and sys.getrefcount(self.owner) == self.owner_refs


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
