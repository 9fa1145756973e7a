"""A row kernel's kept row, written into its output instead of a buffer of its own.

Softmax keeps ``e = exp(x - max)`` for its row (the sum reads it, then the output
``e * (1 / sum)``).  ``schedule.fuse_rows`` gives ``e`` a buffer of its own, one row long;
over 1 KB, TVM takes that buffer from its workspace pool on every row (a call and a free
through thread-local state), and the kernel reads and writes one more row.  ONNX Runtime's
MLAS writes the exponentials into the output row and scales them in place; this step does the
same to the scheduled function: the kept buffer becomes the output buffer.  Softmax over
[16384, 768] went from 5.4 to 3.8 ms (bench/kernels.py), and the row prefetch
(``prefetch.py``), which a row buffer made slower, then applies as well.

TVM's schedule has no primitive that aliases two buffers, so this edits the scheduled
function, with ``tvm_ffi.structural_map`` (the buffer is a variable: every load, store and
region of it is renamed at once).  It is done only where it can not change a result:

- the kept buffer ``B`` has the output ``O``'s shape and dtype, and nothing reads ``O``;
- the output's block (the anchor) is the last statement of the row loop, the only one that
  writes ``O``, and reads ``B`` only at the element it writes: overwriting ``O[i, j]`` then
  never destroys an element that is still to be read;
- every other block touches ``B`` only in the current row, so that no row writes into
  another row's (finished) output.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.s_tir.stmt import SBlockRealize
from tvm.sym import Analyzer

from pir.codegen.tvm.rowfunc import row_loop, with_root

__all__ = ["reuse_output"]


def reuse_output(func: tvm.tirx.PrimFunc, rows: int) -> tvm.tirx.PrimFunc:
    """``func`` (a row-fused kernel with one output, its first ``rows`` dims the rows) with
    its first row buffer that can live in the output moved there; ``func`` itself if none
    can."""
    found = row_loop(func)
    if found is None:
        return func
    block, loop = found
    out = list(func.params)[-1]
    realizes = _realizes(loop.body)
    anchor = _anchor(loop.body, out)
    if anchor is None or _reads(realizes, out):
        return func
    for buf in block.alloc_buffers:
        if _same_type(buf, out) and _safe(realizes, anchor, buf, out, rows):
            return _replace(func, buf, out)
    return func


def _realizes(stmt) -> list:
    found = []
    tvm_ffi.structural_walk(stmt, [(SBlockRealize, found.append)])
    return found


def _anchor(body, out):
    """The one block realize writing ``out`` if it is the loop body's last statement."""
    last = body.seq[-1] if isinstance(body, tirx.SeqStmt) else body
    writers = [r for r in _realizes(body) if _store_of(r, out) is not None]
    if len(writers) != 1 or not any(r.same_as(writers[0]) for r in _realizes(last)):
        return None
    return writers[0]


def _store_of(realize, buf):
    store = realize.block.body
    if isinstance(store, tirx.stmt.BufferStore) and store.buffer.same_as(buf):
        return store
    return None


def _loads(stmt, buf) -> list:
    found = []
    tvm_ffi.structural_walk(stmt, [(tvm.ir.expr.TensorLoad, lambda v: found.append(v)
                                    if v.source.same_as(buf) else None)])
    return found


def _reads(realizes, buf) -> bool:
    return any(_loads(r.block, buf) for r in realizes)


def _same_type(a, b) -> bool:
    same = Analyzer().can_prove_equal
    return (str(a.dtype) == str(b.dtype) and len(a.shape) == len(b.shape)
            and all(same(x, y) for x, y in zip(a.shape, b.shape)))


def _bound(realize, indices) -> list:
    """``indices`` in terms of the loops: the block's iter vars replaced by their bindings."""
    # a list, not a dict: ``==`` on TIR variables builds an expression, not a bool
    binding = [(iv.var, value) for iv, value in zip(realize.block.iter_vars,
                                                      realize.iter_values)]
    swap = [(tvm.ir.expr.Var, lambda v: next((e for w, e in binding if w.same_as(v)), v))]
    return [tvm_ffi.structural_map(i, swap) for i in indices]


def _accesses(realize, buf) -> list:
    """The index lists of every load and store of ``buf`` in the block of ``realize``."""
    block = realize.block
    found = [load.indices for load in _loads(block, buf)]
    for stmt in (block.body, block.init):
        if isinstance(stmt, tirx.stmt.BufferStore) and stmt.buffer.same_as(buf):
            found.append(stmt.indices)
    return [_bound(realize, idx) for idx in found]


def _safe(realizes, anchor, buf, out, rows: int) -> bool:
    same = Analyzer().can_prove_equal
    written = _bound(anchor, _store_of(anchor, out).indices)
    for realize in realizes:
        # the anchor may read B only at the element it writes; others only in this row
        keep = len(written) if realize.same_as(anchor) else rows
        for idx in _accesses(realize, buf):
            if not all(same(a, b) for a, b in zip(idx[:keep], written[:keep])):
                return False
    return True


def _replace(func, buf, out):
    func = tvm_ffi.structural_map(func, [(tvm.ir.expr.Var, lambda v: out if v.same_as(buf)
                                          else v)])
    kept = [b for b in func.body.block.alloc_buffers if not b.same_as(out)]
    return with_root(func, alloc_buffers=kept)
