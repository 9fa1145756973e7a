"""Arrays whose data start on a 64-byte boundary: what TVM shares with numpy without a copy
(DLPack), and what a kernel's AVX-512 loads need.  numpy itself aligns to 16 bytes."""

from __future__ import annotations

import ctypes
import math

import numpy as np

__all__ = ["ALIGN", "address", "aligned_empty", "aligned"]

ALIGN = 64


def aligned_empty(shape: tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialised C-ordered array whose data start on a 64-byte boundary."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize  # (np.prod costs microseconds a call)
    buf = np.empty(nbytes + ALIGN, np.uint8)
    start = -address(buf) % ALIGN
    return buf[start:start + nbytes].view(dtype).reshape(shape)


def aligned(a: np.ndarray) -> np.ndarray:
    """``a`` itself when it is C-ordered and aligned (or empty), else an aligned copy."""
    if not a.size or (a.flags.c_contiguous and not a.ctypes.data % ALIGN):  # (may be read-only)
        return a
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


def address(buf: np.ndarray) -> int:
    """The address of a writable C-ordered array's data: a third of the time numpy's
    ``ctypes.data`` takes (0.4 us against 1-2), which a loop's run pays per buffer."""
    if not buf.nbytes:
        return buf.ctypes.data
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))
