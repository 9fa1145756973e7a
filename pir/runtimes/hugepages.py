"""Memory on 2 MB pages for the TVM runtime's long-lived buffers: the kernels' weights and the
execution plan's slots.

With 4 KB pages a model's working set (ResNet-50: 100 MB of weights, a few MB of activations
at a time) needs far more page-table entries than the CPU's TLBs hold, and every kernel walks
the page tables as it streams its weights and activations.  Linux backs memory with
transparent huge pages where a program asks for them (``madvise(MADV_HUGEPAGE)``: the
default "madvise" setting of /sys/kernel/mm/transparent_hugepage/enabled), as PyTorch's CPU
allocator does.  An :class:`Arena` hands out 64-byte aligned pieces of such chunks, bump
allocated and freed together with the arena; a program keeps one arena for its weights and
each execution plan one for its slots, which live as long as they do.

ResNet-50 and the GPT-style model, one thread: 2-4% less time (A/B in one process, 30
alternating rounds).  Where huge pages are not offered (not Linux, or an mmap module without
``MADV_HUGEPAGE``) the chunks are plain anonymous memory, which costs nothing more.
"""

from __future__ import annotations

import mmap

import numpy as np

__all__ = ["Arena", "HUGE_PAGE"]

HUGE_PAGE = 2 << 20
ALIGN = 64
#: Bytes an arena maps at a time (a bigger request gets a chunk of its own).
CHUNK = 32 << 20
#: A buffer of this many bytes or more starts on a huge page.
BIG = 1 << 20


class Arena:
    """Bump-allocated 64-byte aligned buffers in huge-page chunks, all freed with the arena
    (when the last array of it is gone: each holds its chunk's mmap)."""

    def __init__(self, chunk: int = CHUNK):
        self.chunk = chunk
        self._buf: np.ndarray | None = None  # the current chunk, as bytes
        self._used = 0

    def empty(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        """An uninitialised C-ordered array (zeros on first use: fresh mmap memory)."""
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        if n == 0:
            return np.empty(shape, dtype)
        nbytes = n * dtype.itemsize
        align = HUGE_PAGE if nbytes >= BIG else ALIGN
        start = -(-self._used // align) * align
        if self._buf is None or start + nbytes > self._buf.size:
            self._buf, start = _huge_chunk(max(self.chunk, nbytes)), 0
        self._used = start + nbytes
        return self._buf[start:start + nbytes].view(dtype).reshape(shape)

    def copy(self, a: np.ndarray) -> np.ndarray:
        """``a`` copied into the arena."""
        out = self.empty(a.shape, a.dtype)
        out[...] = a
        return out


def _huge_chunk(nbytes: int) -> np.ndarray:
    """``nbytes`` (rounded up to whole huge pages) of anonymous memory starting on a huge
    page, with huge pages asked for, as a uint8 array (which keeps the mapping alive); plain
    aligned memory where mmap cannot map it so (not a Unix)."""
    size = -(-nbytes // HUGE_PAGE) * HUGE_PAGE
    try:
        m = mmap.mmap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (AttributeError, OSError, ValueError):
        raw = np.empty(size + ALIGN, np.uint8)
        start = -raw.ctypes.data % ALIGN
        return raw[start:start + size]
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is not None:
        try:
            m.madvise(advice)
        except OSError:
            pass  # a kernel without transparent huge pages: plain pages then
    raw = np.frombuffer(m, np.uint8)
    start = -raw.ctypes.data % HUGE_PAGE
    return raw[start:start + size]
