"""Software prefetch of the next rows in a row-fused kernel (RMSNorm, LayerNorm, softmax).

A row kernel reads its row (the reduction), then writes its output row.  The writes miss
in the cache (the line is read before it is written), fill the store buffer, and the core
stalls before it reaches the next row's loads: reading and writing take turns instead of
overlapping, and an RMSNorm over [16384, 768] took 1.6x the copy time.  Prefetching the
row ``DISTANCE`` rows ahead, one ``prefetcht0`` per cache line at the top of each row,
overlaps them again (1.2x on the same kernel; bench/kernels.py).

TVM's schedule has no prefetch primitive, so this step edits the scheduled function: the
root block's body must be the one parallel row loop that ``schedule.fuse_rows`` makes, and
the loop gets a serial loop of prefetches in front of its body.  The prefetches are plain
TIR (``llvm.prefetch`` calls), so the printed kernel source shows them and parses back.

A kernel that keeps a whole row in a buffer (softmax's exponentials) is left alone: TVM
allocates that buffer from its workspace pool on every row (it is over 1 KB), and with the
prefetches added the kernel measured 5-10% slower, not faster.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from pir.codegen.tvm.rowfunc import row_loop, with_root

__all__ = ["prefetch_rows", "DISTANCE", "LINE_BYTES", "MIN_ROW_BYTES"]

#: How many rows ahead to prefetch: 1 and 2 measure alike; 2 leaves room for a slow row.
DISTANCE = 2
LINE_BYTES = 64
#: Rows shorter than this are left to the hardware prefetcher (a few lines per row).
MIN_ROW_BYTES = 512


def prefetch_rows(func: tvm.tirx.PrimFunc, inputs: int, rows: int) -> tvm.tirx.PrimFunc:
    """``func`` with prefetches of the rows ``DISTANCE`` ahead of each of its first
    ``inputs`` parameters whose leading ``rows`` dims are the row loop's (possibly
    symbolic) and whose row (the other dims) is static; ``func`` itself when nothing
    applies."""
    found = row_loop(func)
    if found is None:
        return func
    block, loop = found
    extent = loop.extent
    same = Analyzer().can_prove_equal
    if any(same(_rows_of(buf, rows), extent) and _row_bytes(buf, rows) >= _STACK_BYTES
           for buf in block.alloc_buffers):
        return func  # a row buffer: see the module docstring
    prefetches = []
    for buf in list(func.params)[:inputs]:
        shape = list(buf.shape)
        inner = shape[rows:]
        if not inner or not all(isinstance(d, tirx.IntImm) for d in inner):
            continue
        if not same(_rows_of(buf, rows), extent):
            continue  # not indexed by this row loop
        itemsize = tvm.DataType(str(buf.dtype)).bits // 8
        if _row_bytes(buf, rows) < MIN_ROW_BYTES:
            continue
        prefetches.append(_prefetch_loop(buf, loop.loop_var, extent, shape[:rows],
                                         [int(d) for d in inner], itemsize))
    if not prefetches:
        return func
    body = tirx.SeqStmt([*prefetches, loop.body])
    new_loop = tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, body,
                        loop.thread_binding, loop.annotations)
    return with_root(func, body=new_loop)


#: TVM puts a buffer of fewer bytes than this on the stack, others in its workspace pool.
_STACK_BYTES = 1024


def _rows_of(buf, rows: int):
    """The product of the first ``rows`` dims of ``buf`` (an expression if one is
    symbolic)."""
    n = tirx.const(1, "int32")
    for d in list(buf.shape)[:rows]:
        n = n * d
    return n


def _row_bytes(buf, rows: int) -> int:
    """Bytes of one row of ``buf`` (its dims after the first ``rows``)."""
    n = tvm.DataType(str(buf.dtype)).bits // 8
    for d in list(buf.shape)[rows:]:
        n *= int(d) if isinstance(d, tirx.IntImm) else 1 << 30  # symbolic: big
    return n


def _prefetch_loop(buf, row, n_rows, row_dims: list, inner: list[int],
                   itemsize: int) -> tirx.Stmt:
    """for line in range(lines): prefetch(&buf[unravel(min(row + DISTANCE, last))][line])"""
    ahead = tirx.min(row + DISTANCE, n_rows - 1)
    index = []
    for d in reversed(row_dims):  # row-major unravel of the fused row index
        index.append(tirx.floormod(ahead, d))
        ahead = tirx.floordiv(ahead, d)
    index.reverse()
    row_elems = 1
    for d in inner:
        row_elems *= d
    per_line = max(1, LINE_BYTES // itemsize)
    lines = -(-row_elems // per_line)
    line = tirx.Var("line", "int32")
    flat = line * per_line
    inner_index = []
    for d in reversed(inner):
        inner_index.append(tirx.floormod(flat, d))
        flat = tirx.floordiv(flat, d)
    inner_index.reverse()
    address = tirx.address_of(tirx.BufferLoad(buf, index + inner_index))
    # llvm.prefetch(address, rw = 0 (read), locality = 3 (keep in all levels), cache = 1 (data))
    call = tirx.call_llvm_intrin("void", "llvm.prefetch.p0", address, 0, 3, 1)
    return tirx.For(line, 0, lines, tirx.ForKind.SERIAL, tirx.Evaluate(call))
