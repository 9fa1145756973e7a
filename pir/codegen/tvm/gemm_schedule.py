"""The register-tiled schedule of a ``matmul`` or ``conv`` group's kernel
(pir.codegen.tvm.gemm forms the groups; pir.codegen.tvm.conv the convolutions this
schedule also takes): an ``MI x BN`` tile of the output in registers (``MI`` rows of two
vectors each, sized for the target CPU: pir.codegen.tvm.target), a loop over K with
broadcast-FMA, the epilogue written back while the tile is in registers, column panels in
chunks that stay in L2, and a one-row variant (``ROWS1``) for a symbolic row count that a
run finds to be small.
"""

from __future__ import annotations

import numpy as np

from tvm import tirx
from tvm.s_tir import Schedule, ScheduleError

from pir.codegen.tvm.direct import inline_lone_epilogue
from pir.codegen.tvm.dot4 import DEPTH, LANES
from pir.codegen.tvm.fast_schedule import FastSchedule
from pir.codegen.tvm.lower import LoweredKernel

__all__ = ["schedule_matmul", "ROWS1", "one_row_dim", "CHUNK_BYTES"]


def _tile_rows(extent, rows: int, few: bool = False) -> int:
    """Rows per register tile: ``rows`` (the target's), or the largest of ``rows - 1`` down
    to 4 that divides a static row count (a 7x7 or 14x14 feature map), so that no row needs
    padding.  With ``few`` (a matmul's rows, not a convolution's positions, whose window
    loads TVM then fails to inline) a static count below ``rows`` is its own tile (a
    recurrent step's batch of one: 8 rows would be 7 of padding)."""
    if isinstance(extent, tirx.IntImm):
        if few and extent.value < rows:
            return max(int(extent.value), 1)
        for mi in range(rows, 3, -1):
            if extent.value % mi == 0:
                return mi
    return rows


#: The suffix of a matmul kernel's one-row variant (see ``one_row_dim``).
ROWS1 = "_rows1"


def one_row_dim(block) -> object | None:
    """The row dim of a matmul group's one product when it is symbolic: such a kernel also
    gets a variant of one-row tiles (``ROWS1``), which a run takes when the rows are fewer
    than the target's ``small_rows`` (a batch of one: padded to a full tile, 7 of 8 rows
    would be padding).  None for a static row count or another kind of group."""
    dots = [op for op in block.ops if op.name == "prim.dot_general"]
    if len(dots) != 1:
        return None
    # the rows are the lhs's dim before its contracted last ones ([..., M, K], or a dot4
    # product's [..., M, K/4, 4]; the result is [..., M, panels, BN] against packed weights)
    shape = getattr(dots[0].operands[0].type, "shape", None)
    contracted = list(dots[0].lhs_contracting_dimensions)
    if not shape or not contracted or len(shape) < len(contracted) + 1 or \
            contracted != list(range(len(shape) - len(contracted), len(shape))):
        return None
    rows = shape[-len(contracted) - 1]
    return None if rows is None or isinstance(rows, int) else rows


def schedule_matmul(kernel: LoweredKernel, split_cols: bool = False,
                    lanes: int | None = None, tile_rows: int | None = None) -> Schedule | None:
    """The register-tiled schedule of a ``matmul`` or ``conv`` group's kernel, its tile
    sized for the kernel's target (``kernel.cpu``); None if it does not apply (the caller
    then uses the generic schedule).

    The GEMM block computes ``[outer..., rows, cols]`` over one or more reduce loops: for a
    matmul the columns come split as ``[panels, BN]`` (the packed weights' layout), for a
    convolution (``[N, P, O]`` over C, R, S, see pir.codegen.tvm.conv: ``split_cols``) they
    are split here.  ``tile_rows``: the tile's rows, instead of the target's (``ROWS1``: 1).
    A convolution's zero-padded input (``*_xpad``) is computed into a buffer before the GEMM;
    its window loads (``*_col``) are inlined into the GEMM.

    ``lanes``: write the tile back in vectors of that many columns (a result or residual in
    channel blocks of 16, pir.codegen.tvm.nchwc: a 32-wide vector would span two blocks,
    whose addresses are not one ramp, and TVM would write it a lane at a time)."""
    import tvm

    cpu = kernel.cpu
    sch = FastSchedule(tvm.IRModule({kernel.name: kernel.func}))
    sch.work_on(kernel.name)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    gemm = [b for b in blocks if any(iv.iter_type == tirx.IterVar.CommReduce
                                     for iv in sch.get(b).iter_vars)]
    if len(gemm) != 1:
        return None
    (dot,) = gemm
    dot_name = sch.get(dot).name_hint
    outputs = {sch.get(b).name_hint for b in sch.get_output_blocks("root")}
    col = None
    for b in reversed(blocks):  # the reshape, the epilogue's inner values, a 1x1 im2col
        nm = sch.get(b).name_hint
        if nm != dot_name and nm not in outputs:
            if nm.endswith(("_col", "_xpad")) and not _pure_load(sch, b):
                col = b
                continue
            if nm.endswith(("_wpack", "_xf", "_xu8")):
                continue  # computed weights packed, integer inputs converted, once a call
            try:
                sch.compute_inline(b)
            except ScheduleError:
                pass
    n_reduce = sum(iv.iter_type == tirx.IterVar.CommReduce for iv in sch.get(dot).iter_vars)
    quads = _u8_quads(sch, dot, n_reduce)
    loops = sch.get_loops(dot)
    ks = loops[-n_reduce:]
    try:
        if split_cols:
            *outer, rows, o = loops[:-n_reduce]
            panels, cols = sch.split(o, [None, cpu.panel(int(sch.get(o).extent))])
        else:
            *outer, rows, panels, cols = loops[:-n_reduce]
    except (ScheduleError, TypeError, ValueError):
        return None
    extent = sch.get(rows).extent
    mi_rows = tile_rows or _tile_rows(extent, cpu.gemm_rows, few=not split_cols)
    pads = []
    try:
        if not isinstance(extent, tirx.IntImm) and mi_rows > 1:
            # A symbolic row count (a batch or sequence): pad the rows to a multiple of the
            # tile (TVM's pad_einsum: the input rows are copied into a zero-padded buffer,
            # once, and the output copied out), so the accumulator is a
            # fixed-size tile that stays in registers.  With a predicate instead, TVM cannot
            # bound the accumulator and sizes it for the whole output.  A static count the
            # tile does not divide (a convolution's 9 x 9 positions) takes the predicate: TVM
            # bounds that accumulator, and pad_einsum would refuse a convolution anyway (its
            # window and packed-weight indices are not plain iterators), which left it on the
            # generic schedule, 100x slower.
            known = {sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_sblock("root"))}
            sch.pad_einsum(dot, [1] * len(outer) + [mi_rows, 1, 1] + [1] * n_reduce)
            pads = [b for b in sch.get_producers(dot) if sch.get(b).name_hint not in known]
            for b in sch.get_consumers(dot):
                if sch.get(b).name_hint not in known:
                    sch.compute_inline(b)  # the copy-out: consumers read the padded result
            loops = sch.get_loops(dot)
            ks = loops[-n_reduce:]
            *outer, rows, panels, cols = loops[:-n_reduce]
        # Tiles of mi_rows rows of the last row dim.  Fusing all row dims first would give
        # longer loops, but with two symbolic dims (batch x seq) TVM could not bound the
        # accumulator either.
        mo, mi = sch.split(rows, [None, mi_rows])
        chunk = _panel_chunk(sch, panels, ks, cols, cpu.min_chunks)
        inner = [mi, cols]
        if quads:
            # 16 columns x 4 products innermost: one dot instruction each (dot4.use_vnni)
            vectors, lanes16 = sch.split(cols, [None, LANES])
            inner = [mi, vectors, lanes16, ks[-1]]
            ks = ks[:-1]
        if chunk > 1:
            # Panels in chunks that stay in L2 while every row tile passes over them: the
            # output rows are then written (and a residual read) a chunk's width at a time,
            # not one panel's 128 bytes in each of all the rows, which the hardware streams
            # far better from memory (ResNet's 56x56 1x1 convolutions, cold caches: 1.0 ->
            # 0.5 ms; warm, the same)
            po, tile = sch.split(panels, [None, chunk])
            sch.reorder(po, *outer, mo, tile, *ks, *inner)
        else:
            po, tile = panels, mo
            sch.reorder(panels, *outer, mo, *ks, *inner)
        # vectorize and parallel before decompose_reduction: TVM checks that the loops hold a
        # complete or reduction block, which the decomposed update block no longer is
        if quads:
            sch.unroll(inner[1])
        else:
            sch.vectorize(cols)
        sch.unroll(mi)
        sch.parallel(po)
        acc = sch.cache_write(dot, 0, "local")
        sch.reverse_compute_at(acc, tile)
        init = sch.decompose_reduction(dot, ks[0])
        sch.vectorize(sch.get_loops(init)[-1])
        # (the padded copy of the rows is made once, before the parallel loop: per tile, a
        # batch of one copied 8 x K rows for each of a classifier's 63 panels, and took
        # 0.40 against 0.33 ms; 125 rows x 768 x 3072 measured the same either way)
    except ScheduleError:
        return None
    if col is not None:
        _schedule_col(sch, col)
    if quads:
        _schedule_quads(sch, pads)
    # The epilogue: into the write-back of the tile when it is the only reader (one output
    # computed from the tile in registers), else right after the tile, while it is in cache.
    written = [b for b in sch.get_child_blocks(sch.get_sblock("root"))
               if sch.get(b).name_hint in outputs and sch.get(b).name_hint != dot_name]
    vector_blocks = [acc, *pads]
    if isinstance(extent, tirx.IntImm) and extent.value % mi_rows != 0:
        # The last row tile is cut by a predicate.  TVM's reverse_compute_inline would keep
        # only the consumer's own predicate (a slice's `col < 24`) and drop the rows', and
        # reverse_compute_at can make loops of a varying extent, which it cannot vectorize:
        # the epilogue stays a pass of its own over the product.
        written = []
    written = inline_lone_epilogue(sch, written)
    for b in written:
        saved = sch.copy()
        try:
            sch.reverse_compute_at(b, tile)
        except ScheduleError:
            continue
        if _iterations_under(sch, b, tile) > mi_rows * int(sch.get(cols).extent) \
                or not _covers(sch, b):
            # TVM could not narrow the block to the tile (an epilogue that slices padded
            # columns off): under the parallel panel loop it would write every column and
            # read panels other threads have not computed yet.  Or it narrowed it to too
            # little: a tile of 5 of a [2048, 5, 2] map's 10 positions is no box of (h, w),
            # and TVM's region for it, h in [2 p, 2 p + 3) and w = p, left 40% of a
            # quantized ResNet's layer4 output unwritten.  It stays a pass of its own.
            sch = saved
            continue
        vector_blocks.append(b)
    for b in vector_blocks:
        try:
            _vectorize(sch, sch.get_loops(b)[-1], lanes)
        except ScheduleError:
            pass
    return sch


def _u8_quads(sch: Schedule, dot, n_reduce: int) -> bool:
    """Whether the GEMM block is pir.codegen.tvm.dot4's product: uint8 by int8 with two
    reduce loops, the last four products."""
    block = sch.get(dot)
    dtypes = sorted(str(r.source.dtype) for r in block.reads
                    if str(r.source.dtype) != "int32")  # (the accumulator, if listed)
    if n_reduce != 2 or dtypes != ["int8", "uint8"]:
        return False
    extent = sch.get(sch.get_loops(dot)[-1]).extent
    return isinstance(extent, tirx.IntImm) and extent.value == DEPTH


def _schedule_quads(sch: Schedule, pads) -> None:
    """The uint8 stage of a dot4 product (``*_xu8``): inlined into the copy that pads its
    rows when there is one, else parallel over its rows and in vectors of 64."""
    for b in sch.get_child_blocks(sch.get_sblock("root")):
        if not sch.get(b).name_hint.endswith("_xu8"):
            continue
        if pads:
            try:
                sch.compute_inline(b)
                continue
            except ScheduleError:
                pass
        try:
            *rows, k, j = sch.get_loops(b)
            quad = sch.fuse(k, j)
            extent = sch.get(quad).extent
            if isinstance(extent, tirx.IntImm) and extent.value % 64 == 0:
                sch.vectorize(sch.split(quad, [None, 64])[1])
            if rows:
                sch.parallel(sch.fuse(*rows) if len(rows) > 1 else rows[0])
        except ScheduleError:
            pass


def _iterations_under(sch: Schedule, block, loop) -> int:
    """How many times ``block`` runs per iteration of ``loop`` (one of its loops): the
    product of the static extents of its loops inside ``loop`` (a symbolic one counts as
    unbounded)."""
    loops = sch.get_loops(block)
    at = next(i for i, lp in enumerate(loops) if sch.get(lp).same_as(sch.get(loop)))
    n = 1
    for lp in loops[at + 1:]:
        extent = sch.get(lp).extent
        n *= int(extent.value) if isinstance(extent, tirx.IntImm) else 1 << 40
    return n


def _covers(sch: Schedule, block) -> bool:
    """Whether ``block``'s loops, all of them, run at least once per element of the buffer
    it writes (when every extent is static; a symbolic one is taken on trust)."""
    runs = 1
    for lp in sch.get_loops(block):
        extent = sch.get(lp).extent
        if not isinstance(extent, tirx.IntImm):
            return True
        runs *= int(extent.value)
    writes = sch.get(block).writes
    if len(writes) != 1:
        return True
    size = 1
    for d in writes[0].source.shape:
        if not isinstance(d, tirx.IntImm):
            return True
        size *= int(d.value)
    return runs >= size


def _vectorize(sch: Schedule, loop, lanes: int | None) -> None:
    """Vectorise ``loop``, in vectors of ``lanes`` (the pieces unrolled) when it is longer."""
    extent = sch.get(loop).extent
    if lanes and isinstance(extent, tirx.IntImm) and extent.value > lanes \
            and extent.value % lanes == 0:
        outer, loop = sch.split(loop, [None, lanes])
        sch.unroll(outer)
    sch.vectorize(loop)


#: The most bytes of the column operand a chunk of panels may hold (L2 is 1-2 MB a core).
CHUNK_BYTES = 256 << 10


def _panel_chunk(sch: Schedule, panels, ks, cols, min_chunks: int) -> int:
    """How many column panels a row tile passes over before the next row tile: the largest
    divisor of the panel count whose slice of the column operand (reduce extent x panel
    width x 4 bytes each) fits CHUNK_BYTES, leaving at least ``min_chunks`` chunks (the
    target's: one per core at least) to run in parallel; 1 when none does (or an extent is
    symbolic)."""
    extents = [sch.get(loop).extent for loop in (panels, *ks, cols)]
    if not all(isinstance(e, tirx.IntImm) for e in extents):
        return 1
    n, *k, width = (int(e.value) for e in extents)
    panel_bytes = 4 * width * int(np.prod(k, dtype=np.int64))
    best = 1
    for c in range(2, n // min_chunks + 1):
        if n % c == 0 and c * panel_bytes <= CHUNK_BYTES:
            best = c
    return best


def _pure_load(sch: Schedule, block) -> bool:
    value = sch.get(block).body.value
    return type(value).__name__ in ("TensorLoad", "BufferLoad")


def _schedule_col(sch: Schedule, col) -> None:
    """The padded input ``[N, C, H, W]``: parallel over the channels, the columns vectorised
    when there are enough of them."""
    try:
        n, c, *_, x = sch.get_loops(col)
        sch.parallel(sch.fuse(n, c))
    except ScheduleError:
        return
    extent = sch.get(x).extent
    if isinstance(extent, tirx.IntImm) and extent.value % 16 == 0:
        try:
            sch.vectorize(sch.split(x, [None, 16])[1])
        except ScheduleError:
            pass
