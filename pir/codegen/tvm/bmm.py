"""Products of two computed operands as TVM kernels: attention's batched ``Q . K^T`` and
``P . V`` (``[B, heads, S, D] x [B, heads, D, S]``, the sequence length symbolic), and any
other ``prim.dot_general`` whose right operand is not a layer's weights.

The GEMM path (pir.codegen.tvm.gemm) packs constant weights at codegen and tiles static
columns.  Here both operands arrive at run time and every dim may be symbolic, so the kernel
packs the right operand itself and pads what it cannot divide::

    bpack[b..., jt, k, v] = rhs[b..., k, jt*LANES + v]   (0 past N), per batch element
    gemm[b..., i, j]      = sum over k of lhs[b..., min(i, M - 1), k]
                                          * bpack[b..., j // LANES, k, j % LANES]
    out[b..., i, j]       = gemm[b..., i, j]   for i < M, j < N

over ``ceil(M / ROWS) * ROWS`` rows and ``ceil(N / LANES) * LANES`` columns: the GEMM runs
over whole register tiles with no bounds check (a padded row re-reads the last one, a padded
column reads zeros), and only the write of the result (through its elementwise epilogue, the
attention scale or mask) is cut at ``M x N``.  :func:`schedule_batched` runs the batch
elements in parallel, packs each one's right operand into a buffer the caches hold (one
pass over it, against ``M`` reads of each element in the product), and computes each
``ROWS x LANES`` tile in registers: a broadcast of ``lhs`` and a vector of ``bpack`` per row
and ``k``.
"""

from __future__ import annotations

import tvm
from tvm import te, tirx
from tvm.s_tir import ScheduleError

from pir.codegen.tvm.direct import (compacts, gemm_schedule, inline_lone_epilogue,
                                    output_names)
from pir.codegen.tvm.lower import LoweredKernel, tvm_dtype
from pir.ir.core import Operation
from pir.ir.types import DType, TensorType

__all__ = ["why_not_batched", "batched_compute", "is_batched_block", "schedule_batched"]

#: Rows of the register tile (broadcasts of the left operand)...
ROWS = 4
#: ... by columns (one AVX-512 vector, two AVX2 ones): eight AVX2 accumulators.
LANES = 16


def _axes(op: Operation) -> tuple[list, int, int, int, int]:
    """(batch axes of the lhs, its free axis, its contracted axis, the rhs free axis, the
    rhs contracted axis); raises ValueError when the product is not of that form."""
    lb, rb = list(op.lhs_batching_dimensions), list(op.rhs_batching_dimensions)
    (lc,), (rc,) = op.lhs_contracting_dimensions, op.rhs_contracting_dimensions
    (lf,) = [i for i in range(len(op.operands[0].type.shape)) if i not in lb + [lc]]
    (rf,) = [i for i in range(len(op.operands[1].type.shape)) if i not in rb + [rc]]
    return lb, lf, lc, rf, rc


def why_not_batched(op: Operation) -> str | None:
    """Why this form cannot compute the dot_general ``op`` (None when it can)."""
    lt, rt = op.operands[0].type, op.operands[1].type
    if not (isinstance(lt, TensorType) and isinstance(rt, TensorType)) or lt.shape is None \
            or rt.shape is None:
        return "unranked operands"
    if lt.dtype != DType.F32 or rt.dtype != DType.F32 or op.results[0].type.dtype != DType.F32:
        return "only float32 products are compiled"
    if len(op.lhs_contracting_dimensions) != 1 or len(op.rhs_contracting_dimensions) != 1:
        return "a product that contracts several dims"
    try:
        _axes(op)
    except ValueError:
        return "a product whose operands have other than one free dim each"
    if any(d is None for d in (*lt.shape, *rt.shape)):
        return "unknown dims"
    if 0 in lt.shape or 0 in rt.shape:
        return "an empty product"
    return None


def is_batched_block(block) -> bool:
    """Whether a matmul group's region holds a product of this form."""
    return any(op.name == "prim.dot_general" and why_not_batched(op) is None
               for op in block.ops)


def batched_compute(op, lhs, rhs, ctx, name):
    """The packing, the GEMM and the result of the module docstring."""
    lt, rt, ot = op.operands[0].type, op.operands[1].type, op.results[0].type
    lb, lf, lc, rf, rc = _axes(op)
    rb = list(op.rhs_batching_dimensions)
    batch = [ctx.dim(lt.shape[a]) for a in lb]
    m, k, n = ctx.dim(lt.shape[lf]), ctx.dim(lt.shape[lc]), ctx.dim(rt.shape[rf])
    rows = tirx.floordiv(m + (ROWS - 1), ROWS) * ROWS
    panels = tirx.floordiv(n + (LANES - 1), LANES)
    dtype = tvm_dtype(ot.dtype)

    def lhs_at(b, i, kk):
        idx = [None] * len(lt.shape)
        for a, v in zip(lb, b):
            idx[a] = v
        idx[lf], idx[lc] = i, kk
        return lhs(*idx).astype(dtype)

    def rhs_at(b, kk, j):
        idx = [None] * len(rt.shape)
        for a, v in zip(rb, b):
            idx[a] = v
        idx[rf], idx[rc] = j, kk
        return rhs(*idx).astype(dtype)

    def pack(*i):
        b, jt, kk, v = i[:-3], i[-3], i[-2], i[-1]
        j = jt * LANES + v
        return tirx.if_then_else(j < n, rhs_at(b, kk, j), tirx.const(0, dtype))

    bpack = te.compute((*batch, panels, k, LANES), pack, name=f"{name}_bpack")
    kr = te.reduce_axis((0, k), name=f"{name}_k")

    def product(*i):
        b, row, col = i[:-2], i[-2], i[-1]
        return te.sum(lhs_at(b, tirx.min(row, m - 1), kr)
                      * bpack(*b, tirx.floordiv(col, LANES), kr, tirx.floormod(col, LANES)),
                      axis=kr)

    gemm = te.compute((*batch, rows, panels * LANES), product, name=f"{name}_gemm")
    return te.compute(ctx.shape(ot), lambda *i: gemm(*i), name=name)


def schedule_batched(kernel: LoweredKernel) -> tvm.IRModule | None:
    """The schedule of the module docstring; None when it does not apply.  The batch dims
    run in parallel as one fused loop, or the first alone where TVM cannot size the buffers
    under the fused one (pir.codegen.tvm.direct.compacts)."""
    for fuse_batch in (True, False):
        mod = _schedule_batched(kernel, fuse_batch)
        if mod is not None and compacts(mod):
            return mod
    return None


def _schedule_batched(kernel: LoweredKernel, fuse_batch: bool) -> tvm.IRModule | None:
    found = gemm_schedule(kernel, "bpack")
    if found is None:
        return None
    sch, gemm, pack = found
    try:
        *batch, i, j, kk = sch.get_loops(gemm)
        it, ii = sch.split(i, [None, ROWS])
        jt, jj = sch.split(j, [None, LANES])
        sch.reorder(*batch, jt, it, kk, ii, jj)
        if len(batch) > 1 and fuse_batch:
            outer = sch.fuse(*batch)
        elif batch:
            outer = batch[0]
        elif fuse_batch:
            outer = jt
        else:
            return None
        sch.vectorize(jj)
        sch.unroll(ii)
        sch.parallel(outer)
        acc = sch.cache_write(gemm, 0, "local")
        sch.reverse_compute_at(acc, it)
        init = sch.decompose_reduction(gemm, kk)
        sch.vectorize(sch.get_loops(init)[-1])
    except (ScheduleError, TypeError, ValueError):
        return None
    if pack is not None:
        try:
            if batch:
                sch.compute_at(pack, outer)  # each batch element's panels, while cached
            sch.vectorize(sch.get_loops(pack)[-1])
        except ScheduleError:
            pass
    written = [b for b in sch.get_child_blocks(sch.get_sblock("root"))
               if sch.get(b).name_hint in output_names(sch)]
    inline_lone_epilogue(sch, written)
    try:
        sch.vectorize(sch.get_loops(acc)[-1])
    except ScheduleError:
        pass
    return sch.mod
