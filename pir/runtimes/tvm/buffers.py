"""numpy arrays as TVM tensors: sharing memory (DLPack) where TVM can, copying where not.

TVM shares only C-ordered memory aligned to 64 bytes, of a dtype DLPack knows (not the
ml_dtypes bfloat16 and f8 types), and refuses the zero strides of an empty numpy array.
"""

from __future__ import annotations

import numpy as np

import tvm

__all__ = ["ALIGN", "aligned_empty", "as_tvm", "contiguous"]

ALIGN = 64  # TVM only shares (DLPack) memory aligned to 64 bytes


def aligned_empty(shape: tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialised C-ordered array whose data start on a 64-byte boundary."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = np.empty(nbytes + ALIGN, np.uint8)
    start = -buf.ctypes.data % ALIGN
    return buf[start:start + nbytes].view(dtype).reshape(shape)


def as_tvm(a: np.ndarray, device) -> tuple[tvm.runtime.Tensor, np.ndarray | None]:
    """A TVM tensor for ``a``: sharing its memory when TVM can (C order, aligned, a dtype
    DLPack knows, writable), else a copy.  Also returns the numpy array the tensor shares
    (None for a copy), which a kernel's output can be read from without copying back."""
    a = contiguous(a)
    if a.size == 0:  # TVM refuses the zero strides numpy gives an empty array
        return tvm.runtime.empty(a.shape, _tvm_dtype_name(a.dtype), device), None
    if a.flags.writeable:
        if a.ctypes.data % ALIGN:
            aligned = aligned_empty(a.shape, a.dtype)
            aligned[...] = a
            a = aligned
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
