"""Register tiles without the batch dim: a scheduled kernel's local buffers that one batch
iteration uses alone lose that dim.

``cache_write`` gives a GEMM's register tile the shape of the whole result, ``[N, P, O]``,
and TVM's ``CompactBufferAllocation`` shrinks it to the tile when it lowers the kernel.  With
a symbolic batch N that pass took 10-14 ms of the kernel's 60-100 ms build (ResNet-50's
kernels: a buffer of static shape, 0.3 ms), and a model compiles dozens of such kernels.
Every access of the tile indexes the batch by the same loop variable, inside that loop, so
no value crosses batch iterations: the buffer can drop the dim, and the pass has a static
shape to work on.  The kernel computes the same thing (the tile lives in registers either
way).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.s_tir.stmt import SBlockRealize

from pir.codegen.tvm.rowfunc import with_root

__all__ = ["drop_batch_dims"]


def drop_batch_dims(func: tvm.tirx.PrimFunc) -> tvm.tirx.PrimFunc:
    """``func`` with each root-allocated ``local`` buffer whose leading dim is symbolic, and
    indexed everywhere by one and the same loop variable, reallocated without that dim."""
    block = getattr(func.body, "block", None)
    if block is None:
        return func
    realizes = []
    tvm_ffi.structural_walk(func.body, [(SBlockRealize, realizes.append)])
    for buf in list(block.alloc_buffers):
        if buf.scope() != "local" or not buf.shape or isinstance(buf.shape[0], tirx.IntImm):
            continue
        if _one_loop_var(realizes, buf) is None:
            continue
        func = _drop_first(func, buf)
        block = func.body.block
    return func


def _one_loop_var(realizes, buf):
    """The loop variable every access of ``buf`` indexes its first dim by, else None."""
    found = []
    for realize in realizes:
        blk = realize.block
        if _has_blocks(blk.body):
            continue  # (the root: its body holds the other blocks, their vars unbound here)
        binding = [(iv.var, value) for iv, value in zip(blk.iter_vars, realize.iter_values)]
        firsts = [r.region[0].min for r in (*blk.reads, *blk.writes) if r.source.same_as(buf)]
        for stmt in (blk.body, blk.init):
            if stmt is None:
                continue
            tvm_ffi.structural_walk(stmt, [
                (tvm.ir.expr.TensorLoad,
                 lambda v: firsts.append(v.indices[0]) if v.source.same_as(buf) else None),
                (tirx.stmt.BufferStore,
                 lambda s: firsts.append(s.indices[0]) if s.buffer.same_as(buf) else None)])
        for first in firsts:
            bound = _bound(first, binding)
            if not isinstance(bound, tvm.ir.expr.Var):
                return None
            found.append(bound)
    if not found or any(not v.same_as(found[0]) for v in found):
        return None
    return found[0]


def _has_blocks(stmt) -> bool:
    inner = []
    tvm_ffi.structural_walk(stmt, [(SBlockRealize, inner.append)])
    return bool(inner)


def _bound(expr, binding):
    if isinstance(expr, tvm.ir.expr.Var):
        return next((e for w, e in binding if w.same_as(expr)), expr)
    return expr


def _drop_first(func, buf):
    """``func`` with ``buf`` replaced by a buffer without its first dim, in every load, store,
    region and allocation."""
    new = tirx.decl_buffer(list(buf.shape)[1:], buf.dtype, name=buf.name, scope="local")

    def load(v):
        return tirx.BufferLoad(new, list(v.indices)[1:]) if v.source.same_as(buf) else v

    def store(s):
        if not s.buffer.same_as(buf):
            return s
        return tirx.BufferStore(new, s.value, list(s.indices)[1:])

    def region(r):
        return tirx.BufferRegion(new, list(r.region)[1:]) if r.source.same_as(buf) else r

    func = tvm_ffi.structural_map(func, [(tvm.ir.expr.TensorLoad, load),
                                         (tirx.stmt.BufferStore, store),
                                         (tvm.ir.expr.TensorRegion, region)])
    allocs = [new if b.same_as(buf) else b for b in func.body.block.alloc_buffers]
    return with_root(func, alloc_buffers=allocs)
