"""Convolutions the fast paths do not take, as one direct loop nest with output positions in
the vector lanes: symbolic spatial dims (an OCR detector's ``N x 3 x H x W``), groups,
input dilation (ConvTranspose) and, through the unit height conv.py gives them, 1-d ones.

The fast paths (pir.codegen.tvm.conv: im2col-free GEMM, channel blocks, Winograd, halos)
choose their layout, tiles and weight packing from static sizes.  This form needs only the
channels and the kernel static, and computes, for the ``[N, O, H', W']`` result::

    xpad[n, c, iy, q, j]  = the dilated, zero-padded input at column j*sw + q     (a copy)
    gemm[n, o, y, x]      = sum over (c, r, s) in o's group of
                            xpad[n, g(o)*C/G + c, y*sh + r*dh, (s*dw) % sw, x + (s*dw) // sw]
                            * w[o, c, r, s]
    conv[n, o, y, x]      = gemm[n, o, y, x]   for x < W'

The copy splits the columns into ``sw`` phases, so that a window's loads over consecutive
output positions are consecutive floats for any stride, and it is ``ceil(W' / LANES) *
LANES`` columns wide (zeros past the input): the GEMM then runs over whole vectors of
positions with no bounds check, and only the write of the result is cut at ``W'``.  The
schedule (:func:`schedule_direct`) computes a tile of ``rows`` output channels by ``lanes``
positions of one output row in registers (each weight a broadcast, each input a vector
load), every channel tile of those positions in turn, output rows in parallel (a 1-d
convolution's runs of positions), and writes the tile through the elementwise epilogue
(bias, activation, a residual) as whole vectors, a predicate cutting the last one of a
row: in NCHW the positions of one channel are contiguous, so every store (and a
residual's load) is a vector.  Nothing is padded or sliced in the output channels:
the tile's rows are a divisor of them (:func:`tile_rows`), its lanes the rest of the
target's accumulators (pir.codegen.tvm.target: 16 x 16 with AVX-512, 6 x 16 or 4 x 16
with AVX2).

A stride-1 convolution with enough products per position (FLAT_FROM) takes the flat form
instead, which wastes no lanes on the ends of short rows (a 20-wide row is two 16-lane
vectors, 37% of them past its end).  With ``Wp = W' + (S - 1) * dw`` the padded row::

    xpad[n, c, p]    = the zero-padded input at row p // Wp, column p % Wp       (a copy)
    gemm[n, o, q]    = sum over (c, r, s) of xpad[n, c', q + r*dh*Wp + s*dw] * w[o, c, r, s]
    conv[n, o, y, x] = gemm[n, o, y * Wp + x]

over runs of output positions q that cross rows: the columns past ``W'`` of each padded row
are computed and never read.  The copy is written row by row into a buffer laid out as one
run per channel (TVM's ``transform_layout``), so it divides nothing per float; TVM's
analysis cannot prove that the copy covers what the products read (the bound is not
linear), so this form is scheduled without TVM's prerequisite checks (it covers it by
construction: ``extra`` rows of zeros past the input).

A transposed convolution (ConvTranspose, input dilation ``d``) computes on the dilated
input, ``d x d`` times the products it needs (its zeros are multiplied); decompose writes
the common one whose kernel is its stride as a 1x1 conv and a depth-to-space instead.
A 1-d convolution whose channels fit whole vectors puts them in the lanes instead of its
positions (pir.codegen.tvm.lanes): a streaming model's few frames a call.
"""

from __future__ import annotations

import math

import tvm
from tvm import te, tirx
from tvm.s_tir import Schedule, ScheduleError

from pir.codegen.tvm.fast_schedule import FastSchedule
from pir.codegen.tvm.lower import LoweredKernel, tvm_dtype
from pir.codegen.tvm.target import CpuTarget
from pir.ir.core import Operation
from pir.ir.types import DType, TensorType

__all__ = ["LANES", "why_not_direct", "wants_direct", "padded_channels", "tile_rows", "is_flat",
           "direct_compute",
           "schedule_direct", "is_direct_block"]

#: Positions per vector of a result row's write (its epilogue): one AVX-512 vector of
#: float32, two AVX2 ones.  (The tile's size is the target's: CpuTarget.direct_tile_floats.)
LANES = 16


#: Output channels from which a count that 8 does not divide is padded to a multiple of 16
#: (zero weights, the extra channels sliced off): at most 15/64 more products, against a
#: tile of one or two channels that leaves the FMA units waiting on one accumulator.  An
#: STFT's 257 bins as a convolution ran at 8 GFLOP/s one channel a tile.
PAD_CHANNELS_FROM = 64


def padded_channels(o: int) -> int:
    """The output channels the direct form computes for ``o`` (of an ungrouped
    convolution): ``o`` itself, or ``o`` rounded up to a multiple of 16 when 8 does not
    divide it and it is at least PAD_CHANNELS_FROM."""
    if o % 8 == 0 or o < PAD_CHANNELS_FROM:
        return o
    return -(-o // 16) * 16


def tile_rows(o: int, cpu: CpuTarget, flat: bool = False) -> int:
    """Output channels per tile: the first of the target's ``direct_rows`` (16, 8, 4, 2, 1
    with AVX-512) that divides ``o`` (the packed weights are whole tiles of channels), in
    the flat form at most its ``flat_rows``.  The flat form's runs of positions are long, so
    its tiles are two vectors wide: with AVX-512, 8 x 32, which load 8 weights and 2
    vectors per 16 FMAs where 16 x 16 load 16 and 1 (one thread, symbolic H x W: 64 -> 64
    3x3 at 40 x 40 0.74 -> 0.69 ms, 96 -> 96 at 14 x 20 0.30 -> 0.27 ms, 48 -> 96 1x1 at
    56 x 80 0.39 -> 0.38 ms)."""
    return next(m for m in cpu.direct_rows if o % m == 0 and (m <= cpu.flat_rows or not flat))


def tile_lanes(o: int, cpu: CpuTarget, flat: bool = False) -> int:
    """Output positions per tile: a power of two of vectors that the target's
    accumulators hold over the rows, at most four vectors (``direct_max_lanes``).  A row
    is rounded up to whole tiles, and fewer channels per tile (257 STFT bins: one) would
    otherwise make a tile of 256 positions, most of them past the end of a short row (see
    also padded_channels).  (Three vectors a row, 4 x 24 on AVX2, ran 2.5x slower than
    4 x 16.)"""
    fit = cpu.direct_tile_floats // tile_rows(o, cpu, flat)
    lanes = cpu.lanes
    while 2 * lanes <= min(fit, cpu.direct_max_lanes):
        lanes *= 2
    return lanes


#: Products per output position (C/G x R x S) from which a stride-1 convolution takes the
#: flat form.  The flat form wastes no lanes on the ends of rows, but copies its input
#: into runs and reads its product back once more: with few products per position those
#: passes cost more than the lanes save.  One thread, symbolic H x W, rows / flat: 24 -> 96
#: 1x1 at 56 x 80 (24 products) 0.32 / 0.37 ms, 8 -> 16 3x3 at 160 x 240 (72) 0.78 / 0.93;
#: 96 -> 24 1x1 (96) 0.25 / 0.25, 16 -> 16 3x3 at 160 x 240 (144) 1.29 / 1.11, 24 -> 24 3x3
#: at 56 x 80 (216) 0.37 / 0.30, 16 -> 16 5x5 (400) 0.54 / 0.37.
FLAT_FROM = 96


def is_flat(op: Operation) -> bool:
    """Whether the direct form computes ``op`` in its flat form: stride 1, no input
    dilation, at least FLAT_FROM products per output position (see the module docstring)."""
    win = op.window(len(op.operands[0].type.shape) - 2)
    return all(v == 1 for k in ("window_strides", "lhs_dilation") for v in win[k]) and \
        math.prod(op.operands[1].type.shape[1:]) >= FLAT_FROM


def why_not_direct(op: Operation) -> str | None:
    """Why the direct form cannot compute ``op`` (None when it can)."""
    xt, kt = op.operands[0].type, op.operands[1].type
    if not (isinstance(xt, TensorType) and isinstance(kt, TensorType)) or xt.shape is None \
            or kt.shape is None or len(xt.shape) not in (3, 4):
        return "only 1-d and 2-d convolutions of ranked tensors"
    if xt.dtype != kt.dtype or xt.dtype not in (DType.F32, DType.I32):
        return "only float32 and int32 convolutions (a quantized one's centred operands)"
    if not all(isinstance(d, int) for d in (xt.shape[1], *kt.shape)):
        return "the channels and the kernel size must be static"
    w = op.window(len(xt.shape) - 2)
    if min(w["padding_low"] + w["padding_high"]) < 0:
        return "negative padding (cropping) stays a library call"
    if 0 in kt.shape or xt.shape[1] == 0:
        return "an empty convolution"
    return None


def wants_direct(op: Operation) -> bool:
    """Whether ``op`` is one the fast paths do not take and this form does: a spatial dim
    symbolic, groups, or input dilation."""
    xt = op.operands[0].type
    if why_not_direct(op) is not None:
        return False
    w = op.window(len(xt.shape) - 2)
    out = op.results[0].type
    symbolic = not all(isinstance(d, int) for d in (*xt.shape[2:], *out.shape[2:]))
    return symbolic or op.feature_group_count != 1 or any(d != 1 for d in w["lhs_dilation"])


def is_direct_block(block) -> bool:
    """Whether a conv group's region holds a convolution of this form."""
    return any(op.name == "prim.conv" and wants_direct(op) for op in block.ops)


def _sizes(op, ctx):
    """The sizes both forms read off a 2-d ``op``: (n, c, h, w) of the input, (o, c/g, r, s)
    of the kernel, (h', w') of the result (symbolic ones as TVM expressions), its window
    attributes and its TVM dtype."""
    xt, kt, out_t = op.operands[0].type, op.operands[1].type, op.results[0].type
    n, h, wd = (ctx.dim(d) for d in (xt.shape[0], *xt.shape[2:]))
    ho, wo = (ctx.dim(d) for d in out_t.shape[2:])
    return (n, xt.shape[1], h, wd), tuple(kt.shape), (ho, wo), op.window(2), \
        tvm_dtype(out_t.dtype)


def _reductions(op, name: str):
    """The reduce axes over (c, r, s) of the kernel and the input channel each output
    channel ``oc`` reads at ``c``."""
    o, cg, kr, ks = op.operands[1].type.shape
    og = o // op.feature_group_count
    rc = te.reduce_axis((0, cg), name=f"{name}_c")
    rr = te.reduce_axis((0, kr), name=f"{name}_r")
    rs = te.reduce_axis((0, ks), name=f"{name}_s")

    def channel(oc):
        return rc if op.feature_group_count == 1 else tirx.floordiv(oc, og) * cg + rc

    return rc, rr, rs, channel


def direct_compute(op, x, w, ctx, name):
    """The copy, the GEMM and the result of the module docstring, for a 2-d ``op`` (a 1-d
    one whose channels fit whole vectors: pir.codegen.tvm.lanes)."""
    from pir.codegen.tvm.lanes import lanes_compute, takes_lanes

    if takes_lanes(op):
        return lanes_compute(op, x, w, ctx, name)
    if is_flat(op):
        return _flat_compute(op, x, w, ctx, name)
    (n, c, h, wd), (o, cg, kr, ks), (ho, wo), win, dtype = _sizes(op, ctx)
    (sh, sw), (dh, dw) = win["window_strides"], win["rhs_dilation"]
    (lh, lw), (ph, pw) = win["lhs_dilation"], win["padding_low"]
    lanes = tile_lanes(o, ctx.cpu)
    xp = tirx.floordiv(wo + (lanes - 1), lanes) * lanes  # positions computed per row
    rows_in = (ho - 1) * sh + (kr - 1) * dh + 1
    cols_in = xp + ((ks - 1) * dw) // sw

    def inside(i, pad, dil, size):
        u = i - pad
        ok = [u >= 0, u < (size - 1) * dil + 1]
        if dil > 1:
            ok.append(tirx.floormod(u, dil) == 0)
        return ok, (tirx.floordiv(u, dil) if dil > 1 else u)

    def pad(b, ci, iy, q, j):
        ok_y, sy = inside(iy, ph, lh, h)
        ok_x, sx = inside(j * sw + q, pw, lw, wd)
        return tirx.if_then_else(tirx.all(*ok_y, *ok_x), x[b, ci, sy, sx], tirx.const(0, dtype))

    xpad = te.compute((n, c, rows_in, sw, cols_in), pad, name=f"{name}_xpad")
    rc, rr, rs, channel = _reductions(op, name)
    gemm = te.compute(
        (n, o, ho, xp),
        lambda b, oc, y, xx: te.sum(
            xpad[b, channel(oc), y * sh + rr * dh, tirx.floormod(rs * dw, sw),
                 xx + tirx.floordiv(rs * dw, sw)]
            * w[oc, rc, rr, rs], axis=[rc, rr, rs]), name=f"{name}_gemm")
    return te.compute((n, o, ho, wo), lambda b, oc, y, xx: gemm[b, oc, y, xx], name=name)


def _flat_compute(op, x, w, ctx, name):
    """The flat form of a stride-1 convolution (see the module docstring): the padded input
    as one run of ``Hp x Wp`` positions per channel, the GEMM over runs of the output
    positions ``y * Wp + x`` in that run, and the result read out of it."""
    (n, c, h, wd), (o, cg, kr, ks), (ho, wo), win, dtype = _sizes(op, ctx)
    dh, dw = win["rhs_dilation"]
    ph, pw = win["padding_low"]
    lanes = tile_lanes(o, ctx.cpu, flat=True)
    wp = wo + (ks - 1) * dw  # the padded row: every column a window of the row reads
    positions = tirx.floordiv(ho * wp + (lanes - 1), lanes) * lanes
    # rows past the padded input, zeros, so that the last run's windows stay inside
    extra = tirx.floordiv(lanes + (ks - 1) * dw + wp - 1, tirx.max(wp, 1))
    rows_in = ho + (kr - 1) * dh + extra

    def pad(b, ci, iy, j):
        u, v = iy - ph, j - pw
        inside = tirx.all(u >= 0, u < h, v >= 0, v < wd)
        return tirx.if_then_else(inside, x[b, ci, u, v], tirx.const(0, dtype))

    xpad = te.compute((n, c, rows_in, wp), pad, name=f"{name}_xpad")
    rc, rr, rs, channel = _reductions(op, name)

    def at(q):  # flat position q of the padded input, as (row, column)
        return tirx.floordiv(q, wp), tirx.floormod(q, wp)

    gemm = te.compute(
        (n, o, positions),
        lambda b, oc, q: te.sum(
            xpad[(b, channel(oc), *at(q + rr * (dh * wp) + rs * dw))] * w[oc, rc, rr, rs],
            axis=[rc, rr, rs]), name=f"{name}_gemm")
    return te.compute((n, o, ho, wo), lambda b, oc, y, xx: gemm[b, oc, y * wp + xx], name=name)


def schedule_direct(kernel: LoweredKernel) -> tvm.IRModule | None:
    """The schedule of the module docstring; None when it does not apply (the caller then
    uses the generic one).  A 1-d convolution (one output row per batch element) runs its
    runs of positions in parallel, fused with the batch when TVM can size the result, else
    alone."""
    from pir.codegen.tvm.lanes import is_lanes_kernel, schedule_lanes

    if is_lanes_kernel(kernel):
        mod = schedule_lanes(kernel)
        return mod if mod is not None and compacts(mod) else None
    if _is_flat_kernel(kernel):
        found = gemm_schedule(kernel, "xpad", check=False)
        mod = _schedule_flat(*found, kernel.cpu) if found is not None else None
        return mod if mod is not None and compacts(mod) else None
    for fuse_batch in (True, False):
        mod = _schedule_direct(kernel, fuse_batch)
        if mod is not None and compacts(mod):
            return mod
    return None


def _is_flat_kernel(kernel: LoweredKernel) -> bool:
    """Whether ``kernel`` holds the flat form: its product is ``[n, o, q]``."""
    return any(b.name.endswith("_gemm") and len(b.shape) == 3
               for b in kernel.func.body.block.alloc_buffers)


def gemm_schedule(kernel: LoweredKernel, keep: str, check: bool = True,
                  product: str = "gemm"):
    """A schedule of ``kernel`` with every block inlined but its one ``<prefix>_<product>``,
    its outputs and ``<prefix>_<keep>`` (the padded input, the packed panels): (schedule,
    the product block, the kept block or None); None when the kernel has not one product.
    With ``check`` off, TVM's schedule skips its prerequisite checks (see _schedule_flat)."""
    sch = FastSchedule(tvm.IRModule({kernel.name: kernel.func}), enable_check=check)
    sch.work_on(kernel.name)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    names = [sch.get(b).name_hint for b in blocks]
    gemms = [b for b, nm in zip(blocks, names) if nm.endswith(f"_{product}")]
    if len(gemms) != 1:
        return None
    (gemm,) = gemms
    prefix = sch.get(gemm).name_hint[:-len(product) - 1]
    outputs = {sch.get(b).name_hint for b in sch.get_output_blocks("root")}
    kept = None
    for b, nm in reversed(list(zip(blocks, names))):
        if b.same_as(gemm) or nm in outputs:
            continue
        if nm == f"{prefix}_{keep}":
            kept = b
            continue
        try:
            sch.compute_inline(b)
        except ScheduleError:
            pass
    return sch, gemm, kept


def output_names(sch) -> set[str]:
    return {sch.get(b).name_hint for b in sch.get_output_blocks("root")}


def inline_lone_epilogue(sch, written: list) -> list:
    """The epilogue into the tile's write-back when ``written`` (the blocks that write the
    kernel's results after the product) is one block TVM can inline: then none is left;
    else ``written`` as it was, each a pass of its own."""
    if len(written) == 1:
        try:
            sch.reverse_compute_inline(written[0])
            return []
        except ScheduleError:
            pass
    return written


def _schedule_direct(kernel: LoweredKernel, fuse_batch: bool) -> tvm.IRModule | None:
    found = gemm_schedule(kernel, "xpad")
    if found is None:
        return None
    sch, gemm, xpad = found
    try:
        o_extent = int(sch.get(sch.get_loops(gemm)[1]).extent)
        rows, lanes = tile_rows(o_extent, kernel.cpu), tile_lanes(o_extent, kernel.cpu)
        n, o, y, xx, *ks = sch.get_loops(gemm)
        xt, xi = sch.split(xx, [None, lanes])
        split_off_last(sch, xt)
        ot, oi = sch.split(o, [None, rows])
        # Every channel tile of a run of positions before the next run: the window of
        # input those positions read (C x R rows of ``lanes`` + S floats) stays in L1 while
        # the weights stream past it, where with the channel tiles outermost a whole row of
        # C x R input rows would come from L2 once per channel tile
        if _is_one(sch.get(y).extent):
            sch.reorder(n, y, xt, ot, *ks, oi, xi)
            sch.parallel(sch.fuse(n, y, xt) if fuse_batch else xt)
        else:
            # the output rows in parallel, each over every batch element.  (Not fused with
            # the batch: TVM cannot bound the accumulator under a fused loop whose extent
            # it cannot prove positive, such as ``N * ((H - 1) floordiv 2)``)
            if not fuse_batch:
                return None
            sch.reorder(y, n, xt, ot, *ks, oi, xi)
            sch.parallel(y)
        acc = _register_tile(sch, gemm, ot, oi, xi, ks)
    except (ScheduleError, TypeError, ValueError):
        return None
    if xpad is not None:
        _schedule_copy(sch, xpad)
    written = [b for b in sch.get_child_blocks(sch.get_sblock("root"))
               if sch.get(b).name_hint in output_names(sch)]
    # the epilogue into the tile's write-back: whole vectors of one channel's positions
    written = inline_lone_epilogue(sch, written)
    for b in written:  # (several results: each a pass of its own over the product)
        _vectorize_rows(sch, b)
    try:
        sch.vectorize(sch.get_loops(acc)[-1])
    except ScheduleError:
        pass
    return sch.mod


def _register_tile(sch, gemm, ot, oi, xi, ks):
    """The tile in registers: its positions ``xi`` one vector, its channels ``oi`` and the
    kernel's rows and columns unrolled, its accumulators initialised and written back under
    the channel tile loop ``ot``; returns the write-back block."""
    sch.vectorize(xi)
    sch.unroll(oi)
    for k in ks[1:]:
        sch.unroll(k)
    acc = sch.cache_write(gemm, 0, "local")
    sch.reverse_compute_at(acc, ot)
    init = sch.decompose_reduction(gemm, ks[0])
    sch.vectorize(sch.get_loops(init)[-1])
    return acc


def _schedule_flat(sch, gemm, xpad, cpu: CpuTarget) -> tvm.IRModule | None:
    """The flat form's schedule: runs of ``lanes`` positions (of every batch element) in
    parallel, each over every channel tile, as the row form's; the padded copy laid out as
    one run per channel, so that a window's loads are consecutive floats at a constant
    offset (TVM simplifies ``(q // Wp) * Wp + q % Wp`` back to ``q``); the result (and its
    epilogue) read out of the runs row by row, whole vectors of a row.  ``sch`` skips TVM's
    prerequisite checks (see the module docstring)."""
    try:
        o_extent = int(sch.get(sch.get_loops(gemm)[1]).extent)
        rows, lanes = tile_rows(o_extent, cpu, flat=True), tile_lanes(o_extent, cpu, flat=True)
        n, o, q, *ks = sch.get_loops(gemm)
        qt, qi = sch.split(q, [None, lanes])
        ot, oi = sch.split(o, [None, rows])
        sch.reorder(n, qt, ot, *ks, oi, qi)
        sch.parallel(sch.fuse(n, qt))
        acc = _register_tile(sch, gemm, ot, oi, qi, ks)
        sch.vectorize(sch.get_loops(acc)[-1])
        wp = sch.get(xpad).writes[0].source.shape[3]
        sch.transform_layout(xpad, ("write", 0), lambda b, c, i, j: (b, c, i * wp + j))
    except (ScheduleError, TypeError, ValueError):
        return None
    _schedule_copy(sch, xpad)
    for b in sch.get_child_blocks(sch.get_sblock("root")):
        if sch.get(b).name_hint in output_names(sch):
            _vectorize_rows(sch, b)
    return sch.mod


def compacts(mod: tvm.IRModule) -> bool:
    """Whether TVM's lowering can size the buffers of the scheduled ``mod`` (its first
    passes, through CompactBufferAllocation).  With symbolic extents it sometimes cannot
    bound a tile's accumulator (a region it cannot prove non-empty) and fails the build;
    a schedule that would is not used."""
    from tvm import s_tir

    seq = tvm.transform.Sequential([
        s_tir.transform.LowerInitBlock(), s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
        s_tir.transform.ConvertBlocksToOpaque(), s_tir.transform.CompactBufferAllocation()])
    try:
        seq(mod)
    except Exception:  # noqa: BLE001 - any failure of TVM's analysis
        return False
    return True


def _is_one(extent) -> bool:
    return isinstance(extent, tirx.IntImm) and extent.value == 1


def _schedule_copy(sch: Schedule, block) -> None:
    """The padded copy: (batch x channel) planes in parallel."""
    try:
        n, c, *_ = sch.get_loops(block)
        sch.parallel(sch.fuse(n, c))
    except ScheduleError:
        pass


def split_off_last(sch: Schedule, loop) -> None:
    """Have TVM's LoopPartition split the last iteration off ``loop``, the outer half of a
    split of a symbolic extent: the others then run whole vectors of the inner half with no
    ``i < W`` predicate.  TVM's vectoriser writes a predicated statement one lane at a
    time, so without this every vector of a row (the epilogue of a symbolic convolution:
    a GELU's polynomial erf at a fifth of the speed) would be scalar code."""
    sch.annotate(loop, "pragma_loop_partition_hint", 1)


def _vectorize_rows(sch: Schedule, block) -> None:
    try:
        loops = sch.get_loops(block)
        sch.parallel(sch.fuse(*loops[:2]))
        outer, inner = sch.split(loops[-1], [None, LANES])
        split_off_last(sch, outer)
        sch.vectorize(inner)
    except (ScheduleError, IndexError):
        pass
