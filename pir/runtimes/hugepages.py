"""Memory on 2 MB pages for the TVM runtime's long-lived buffers: the kernels' weights and the
execution plan's slots.

With 4 KB pages a model's working set (ResNet-50: 100 MB of weights, a few MB of activations
at a time) needs far more page-table entries than the CPU's TLBs hold, and every kernel walks
the page tables as it streams its weights and activations.  Linux backs memory with
transparent huge pages where a program asks for them (``madvise(MADV_HUGEPAGE)``: the
default "madvise" setting of /sys/kernel/mm/transparent_hugepage/enabled), as PyTorch's CPU
allocator does.  An :class:`Arena` hands out 64-byte aligned pieces of memory, bump
allocated and freed together with the arena; a program keeps one arena for its weights and
each execution plan one for its slots, which live as long as they do.

ResNet-50, the GPT- and BERT-style models, one thread: 2-3% less time (A/B in one process,
40-80 alternating rounds).  Where huge pages are not offered (not Linux, or an mmap module
without ``MADV_HUGEPAGE``) the memory is plain, which costs nothing more.
"""

from __future__ import annotations

import mmap

import numpy as np

__all__ = ["Arena", "HUGE_PAGE", "BIG", "SMALL_CHUNK"]

HUGE_PAGE = 2 << 20
ALIGN = 64
#: Bytes a weights arena maps at a time (a bigger request gets a chunk of its own).
CHUNK = 32 << 20
#: Bytes of plain memory a plan's arena takes at a time for its small slots.
SMALL_CHUNK = 256 << 10
#: A buffer of this many bytes or more starts on a huge page.
BIG = 1 << 20


class Arena:
    """Bump-allocated 64-byte aligned buffers, all freed with the arena (when the last array
    of it is gone: each holds its chunk's memory).  A buffer of BIG bytes or more starts on
    a huge page.

    ``huge_chunks``: the chunks that the small buffers come from are on huge pages too (a
    program's weights: one arena for the program's lifetime).  Else they are plain memory
    and each big buffer gets a mapping of its own (an execution plan: a program keeps one
    per binding of its symbolic dims, so a plan of a few small slots must cost neither a
    2 MB page nor a chunk of address space)."""

    def __init__(self, chunk: int = CHUNK, huge_chunks: bool = True):
        self.chunk = chunk
        self.huge_chunks = huge_chunks
        self._buf: np.ndarray | None = None  # the current chunk, as bytes
        self._used = 0

    def empty(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        """An uninitialised C-ordered array."""
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        if n == 0:
            return np.empty(shape, dtype)
        nbytes = n * dtype.itemsize
        if nbytes >= BIG and not self.huge_chunks:
            return _chunk(nbytes, huge=True)[:nbytes].view(dtype).reshape(shape)
        align = HUGE_PAGE if nbytes >= BIG else ALIGN
        start = -(-self._used // align) * align
        if self._buf is None or start + nbytes > self._buf.size:
            self._buf, start = _chunk(max(self.chunk, nbytes), self.huge_chunks), 0
        self._used = start + nbytes
        return self._buf[start:start + nbytes].view(dtype).reshape(shape)

    def copy(self, a: np.ndarray) -> np.ndarray:
        """``a`` copied into the arena."""
        out = self.empty(a.shape, a.dtype)
        out[...] = a
        return out


def _chunk(nbytes: int, huge: bool) -> np.ndarray:
    """``nbytes`` of memory as a uint8 array (which keeps it alive), 64-byte aligned; with
    ``huge``, rounded up to whole huge pages of anonymous memory that start on one, with
    huge pages asked for (plain memory where mmap cannot map it so: not a Unix)."""
    if huge:
        size = -(-nbytes // HUGE_PAGE) * HUGE_PAGE
        try:
            m = mmap.mmap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        except (AttributeError, OSError, ValueError):
            m = None
        if m is not None:
            advice = getattr(mmap, "MADV_HUGEPAGE", None)
            if advice is not None:
                try:
                    m.madvise(advice)
                except OSError:
                    pass  # a kernel without transparent huge pages: plain pages then
            raw = np.frombuffer(m, np.uint8)
            start = -raw.ctypes.data % HUGE_PAGE
            return raw[start:start + size]
    raw = np.empty(nbytes + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + nbytes]
