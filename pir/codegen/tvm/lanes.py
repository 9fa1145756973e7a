"""1-d convolutions of a run-time length with output channels in the vector lanes.

The direct form (pir.codegen.tvm.direct) puts output positions in the lanes: a tile is 16
channels by 16 positions (AVX-512), and a row is rounded up to whole tiles.  A streaming
audio model runs its 1-d convolutions over a few frames per call (Silero VAD: 4 positions
of 128 channels), so three quarters of those lanes computed padding, and the kernel cost
the same at 4 positions as at 64.  Here a tile is a few vectors of 16 output channels by
``POSITIONS`` positions: each input value is one broadcast, each weight vector (16
channels of one tap, contiguous in the packed weights ``[O/16, C, 1, S, 16]``) one load
that serves every position of the tile::

    xpad[n, c, j]            = the zero-padded input at column j               (a copy)
    acc[n, o/16, x, o%16]    = sum over (c, s) of xpad[n, c, x*sw + s*dw] * w[o, c, 0, s]
    conv[n, o, 0, x]         = acc[n, o/16, x, o%16]     for x < W'

A 129 -> 128 channel, 3-tap convolution took 3.9 us at 4 positions and 43 us at 64 (the
direct form: 20-37 us at either), one thread.  It applies to ungrouped, undilated-input
1-d convolutions (a height-1 2-d one, as conv.py gives them) whose channels 16 divides.
"""

from __future__ import annotations

import tvm
from tvm import te, tirx
from tvm.s_tir import ScheduleError

from pir.codegen.tvm.direct import _schedule_copy, gemm_schedule, output_names
from pir.codegen.tvm.lower import LoweredKernel
from pir.ir.core import Operation
from pir.ir.types import DType

__all__ = ["CHANNELS", "lanes_apply", "takes_lanes", "lanes_compute", "schedule_lanes",
           "is_lanes_kernel"]

#: Output channels of one vector (the packed weights' panel), and positions per tile.
CHANNELS, POSITIONS = 16, 4


def lanes_apply(o: int, groups: int, lhs_dilation, dtype: DType) -> bool:
    """Whether a 1-d convolution of ``o`` output channels (as the direct form computes it:
    padded) takes this form."""
    return (o % CHANNELS == 0 and groups == 1 and all(d == 1 for d in lhs_dilation)
            and dtype == DType.F32)


def takes_lanes(op: Operation) -> bool:
    """Whether the height-1 2-d ``prim.conv`` of a direct conv group takes this form."""
    xt, kt, out = op.operands[0].type, op.operands[1].type, op.results[0].type
    win = op.window(2)
    return (len(kt.shape) == 4 and kt.shape[2] == 1 and out.shape[2] == 1
            and lanes_apply(kt.shape[0], op.feature_group_count, win["lhs_dilation"],
                            xt.dtype))


def lanes_compute(op, x, w, ctx, name):
    """The copy, the channel-lane product and the result of the module docstring."""
    xt, kt, out_t = op.operands[0].type, op.operands[1].type, op.results[0].type
    n, wd = ctx.dim(xt.shape[0]), ctx.dim(xt.shape[3])
    wo = ctx.dim(out_t.shape[3])
    c, (o, _, _, ks) = xt.shape[1], kt.shape
    win = op.window(2)
    sw, dw, pw = win["window_strides"][1], win["rhs_dilation"][1], win["padding_low"][1]
    positions = tirx.floordiv(wo + (POSITIONS - 1), POSITIONS) * POSITIONS
    cols = (positions - 1) * sw + (ks - 1) * dw + 1
    zero = tirx.const(0, "float32")

    def pad(b, ci, j):
        u = j - pw
        return tirx.if_then_else(tirx.all(u >= 0, u < wd), x[b, ci, 0, u], zero)

    xpad = te.compute((n, c, cols), pad, name=f"{name}_xpad")
    rc = te.reduce_axis((0, c), name=f"{name}_c")
    rs = te.reduce_axis((0, ks), name=f"{name}_s")
    acc = te.compute(
        (n, o // CHANNELS, positions, CHANNELS),
        lambda b, ot, p, oi: te.sum(xpad[b, rc, p * sw + rs * dw]
                                    * w[ot * CHANNELS + oi, rc, 0, rs], axis=[rc, rs]),
        name=f"{name}_lanes")
    return te.compute((n, o, 1, wo),
                      lambda b, oc, y, xx: acc[b, oc // CHANNELS, xx, oc % CHANNELS],
                      name=name)


def is_lanes_kernel(kernel: LoweredKernel) -> bool:
    return any(b.name.endswith("_lanes") for b in kernel.func.body.block.alloc_buffers)


def schedule_lanes(kernel: LoweredKernel) -> tvm.IRModule | None:
    """Tiles of a few channel vectors by POSITIONS positions in registers, runs of
    positions in parallel; the copy per (batch, channel) plane; the result and its
    epilogue a pass over (batch x channel) rows.  None when a step fails."""
    found = gemm_schedule(kernel, "xpad", product="lanes")
    if found is None:
        return None
    sch, acc, xpad = found
    regs = kernel.cpu.direct_tile_floats // kernel.cpu.lanes  # vector accumulators
    try:
        n, ot, p, oi, c, s = sch.get_loops(acc)
        vectors = int(sch.get(ot).extent)
        per_tile = next(v for v in (4, 2, 1) if vectors % v == 0 and v * POSITIONS <= regs)
        ot_o, ot_i = sch.split(ot, [None, per_tile])
        pt, pi = sch.split(p, [None, POSITIONS])
        sch.reorder(n, pt, ot_o, c, s, ot_i, pi, oi)
        local = sch.cache_write(acc, 0, "local")
        sch.reverse_compute_at(local, ot_o)
        # (vectorize and parallel before decompose_reduction, which leaves the update
        # block neither complete nor a reduction in TVM's eyes)
        sch.vectorize(oi)
        sch.unroll(pi)
        sch.unroll(ot_i)
        sch.parallel(pt)
        init = sch.decompose_reduction(acc, c)
        sch.vectorize(sch.get_loops(init)[-1])
        sch.vectorize(sch.get_loops(local)[-1])
    except (ScheduleError, StopIteration, TypeError, ValueError):
        return None
    if xpad is not None:
        _schedule_copy(sch, xpad)
    for b in sch.get_child_blocks(sch.get_sblock("root")):
        if sch.get(b).name_hint in output_names(sch):
            try:
                loops = sch.get_loops(b)
                sch.parallel(sch.fuse(*loops[:2]))
            except ScheduleError:
                pass
    return sch.mod
