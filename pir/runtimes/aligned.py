"""Arrays whose data start on a 64-byte boundary: what TVM shares with numpy without a copy
(DLPack), and what a kernel's AVX-512 loads need.  numpy itself aligns to 16 bytes."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ALIGN", "aligned_empty", "aligned"]

ALIGN = 64


def aligned_empty(shape: tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialised C-ordered array whose data start on a 64-byte boundary."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize  # (np.prod costs microseconds a call)
    buf = np.empty(nbytes + ALIGN, np.uint8)
    start = -buf.ctypes.data % ALIGN
    return buf[start:start + nbytes].view(dtype).reshape(shape)


def aligned(a: np.ndarray) -> np.ndarray:
    """``a`` itself when it is C-ordered and aligned (or empty), else an aligned copy."""
    if not a.size or (a.flags.c_contiguous and not a.ctypes.data % ALIGN):
        return a
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out
