"""Depthwise convolutions (MobileNet's 3x3 per-channel filters) as TVM kernels.

A 2-d ``prim.conv`` with one group per input channel (``feature_group_count == C``, the
kernel ``[C * m, 1, R, S]``, float32, constant weights) is too small a GEMM for the matmul
schedule (each output sums only R x S products), and numpy runs it as a strided einsum.
Codegen makes it, with its elementwise epilogue (batch norm, relu6), a ``fusion.group`` of
kind ``dwconv``; the lowering is the convolution's own loop nest over a zero-padded copy of
the input, and :func:`schedule_depthwise` runs the (batch, channel) planes in parallel,
computes each output row with the R x S loop outside a vector loop over the row's columns,
and applies the epilogue to the row while it is in cache.
"""

from __future__ import annotations

import tvm
from tvm import te, tirx
from tvm.s_tir import Schedule, ScheduleError

from pir.codegen.tvm.conv import padded_input
from pir.codegen.tvm.fast_schedule import FastSchedule
from pir.codegen.tvm.gemm import _epilogue, form_group
from pir.codegen.tvm.halo import conv_halo
from pir.codegen.tvm.lower import LoweredKernel, tvm_dtype
from pir.codegen.tvm.weights import known_weights
from pir.ir.core import Block, Operation, Value
from pir.ir.dialects.builtin import enclosing_module, make_constant
from pir.ir.types import DType, TensorType

__all__ = ["DWCONV", "is_depthwise", "depthwise_compute", "form_depthwise_groups",
           "schedule_depthwise"]

DWCONV = "dwconv"

#: Columns of one vector (float32, AVX-512).
_LANES = 16


def is_depthwise(op: Operation) -> bool:
    """A static 2-d float32 convolution with one group per input channel, no input dilation
    and no cropping."""
    if op.name != "prim.conv":
        return False
    xt, kt = op.operands[0].type, op.operands[1].type
    if not (isinstance(xt, TensorType) and isinstance(kt, TensorType)) or xt.shape is None \
            or kt.shape is None or len(xt.shape) != 4 or len(kt.shape) != 4:
        return False
    if xt.dtype != DType.F32 or kt.dtype != DType.F32:
        return False
    if not all(isinstance(d, int) for d in (*xt.shape[1:], *kt.shape)):
        return False
    c, o = xt.shape[1], kt.shape[0]
    w = op.window(2)
    return (op.feature_group_count == c > 1 and kt.shape[1] == 1 and o % c == 0
            and w["lhs_dilation"] == (1, 1)
            and min(w["padding_low"] + w["padding_high"]) >= 0)


def depthwise_compute(op, x, w, ctx, name):
    """out[n, o, y, x] = sum over r, s of xpad[n, o // m, y*sh + r*dh, x*sw + s*dw] *
    w[o, 0, r, s], m = O / C."""
    n = ctx.dim(op.operands[0].type.shape[0])
    c = op.operands[0].type.shape[1]
    o, _, kr, ks = op.operands[1].type.shape
    _, _, ho, wo = op.results[0].type.shape
    m = o // c
    win = op.window(2)
    (sh, sw), (dh, dw) = win["window_strides"], win["rhs_dilation"]
    rr = te.reduce_axis((0, kr), name=f"{name}_r")
    rs = te.reduce_axis((0, ks), name=f"{name}_s")
    # a row computed in whole vectors: 14 columns as 16 (the extra ones read zero padding
    # and are dropped), not in pieces of 8, 4 and 2 lanes for each of the R x S taps
    row = wo if wo % _LANES == 0 else -(-wo // _LANES) * _LANES
    extra = (row - wo) * sw
    if sw > 1 and dw == 1:
        x = _phased_input(op, x, n, name, sw, extra)

        def load(b, ci, iy, xx, s):  # column xx * sw + s is phase s % sw, xx + s // sw
            return x[b, ci, iy, s % sw, xx + s // sw]
    else:
        x = padded_input(op, x, n, name, extra=extra)

        def load(b, ci, iy, xx, s):
            return x[b, ci, iy, xx * sw + s * dw]
    out = te.compute(
        (n, o, ho, row),
        lambda b, oc, y, xx: te.sum(
            load(b, oc // m if m > 1 else oc, y * sh + rr * dh, xx, rs)
            * w[oc, 0, rr, rs], axis=[rr, rs]),
        name=f"{name}_dw")
    if row == wo:
        return out
    return te.compute((n, o, ho, wo), lambda b, oc, y, xx: out[b, oc, y, xx],
                      name=f"{name}_row")


def _phased_input(op, x, n, name: str, sw: int, extra: int):
    """The zero-padded input of a convolution of column stride ``sw``, its columns dealt
    into ``sw`` phases (``[N, C, Hp, sw, ceil(Wp / sw)]``: column ``j * sw + p`` at phase
    ``p``, ``j``), as the ``*_xpad`` stage.  A row of outputs then reads each filter tap's
    inputs as one contiguous run, not every ``sw``-th column: MobileNet's stride-2 3x3
    layers took 1.0 ms for 32 x 56 x 56 outputs with the strided loads."""
    _, c, h, wd = op.operands[0].type.shape
    ph, pw, qh, qw = conv_halo(op) or (0, 0, 0, 0)
    hp, wp = h + ph + qh, wd + pw + qw + extra
    zero = tirx.const(0, tvm_dtype(op.results[0].type.dtype))

    def phase(b, ci, iy, p, j):
        ix = j * sw + p
        inside = tirx.all(iy >= ph, iy < h + ph, ix >= pw, ix < wd + pw)
        return tirx.if_then_else(inside, x[b, ci, iy - ph, ix - pw], zero)

    return te.compute((n, c, hp, sw, -(-wp // sw)), phase, name=f"{name}_xpad")


def form_depthwise_groups(block: Block) -> int:
    """Replace each depthwise convolution by constant weights (and its epilogue group) by
    one ``dwconv`` group whose region holds the weights and the convolution."""
    from pir.ir.dialects.prim.linalg import ConvOp

    count = 0
    for op in list(block.ops):
        # a constant, or a group over constants (a QDQ model's centred int8 weights)
        w = known_weights(op.operands[1]) if is_depthwise(op) else None
        if w is None or w.dtype != op.operands[1].type.dtype.numpy:
            continue
        name = op.results[0].name or "conv"

        def core(body: Block, x_arg: Value, op=op, w=w, name=name) -> Value:
            c = body.append(make_constant(enclosing_module(op), w, f"{name}.w", op.loc))
            attrs = {k: op.attributes[k] for k in op.attributes}
            return body.append(ConvOp.build(x_arg, c.results[0], loc=op.loc,
                                            result_types=[op.results[0].type],
                                            result_names=[name], **attrs)).results[0]

        form_group(op, core, _epilogue(op), DWCONV)
        count += 1
    return count


def schedule_depthwise(kernel: LoweredKernel) -> Schedule | None:
    """Planes in parallel, an output row at a time: the R x S loop outside a vector loop over
    the row (see _vectorize_row); the padded input is computed per plane, the epilogue per
    row.  None if a step fails (the generic schedule is then used)."""
    sch = FastSchedule(tvm.IRModule({kernel.name: kernel.func}))
    sch.work_on(kernel.name)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    names = {sch.get(b).name_hint: b for b in blocks}
    dw = next((b for n, b in names.items() if n.endswith("_dw")), None)
    pad = next((b for n, b in names.items() if n.endswith("_xpad")), None)
    outputs = sch.get_output_blocks("root")
    if dw is None or len(outputs) != 1:
        return None
    out = outputs[0]
    try:
        for b in reversed(blocks):  # the epilogue's inner values and the weights' loads
            if b not in (dw, pad, out) and sch.get(b).name_hint not in (
                    sch.get(dw).name_hint, sch.get(out).name_hint):
                try:
                    sch.compute_inline(b)
                except ScheduleError:
                    pass
        padded_row = any(n.endswith("_row") for n in names)
        if sch.get(out).name_hint == sch.get(dw).name_hint or padded_row:
            # (a row padded to whole vectors is computed plane by plane apart from the
            # epilogue: under the epilogue's row TVM would narrow it back to the row)
            n_, o_ = sch.get_loops(dw)[:2]
            plane = sch.fuse(n_, o_)
            sch.parallel(plane)
            if padded_row:
                n_, o_ = sch.get_loops(out)[:2]
                sch.parallel(sch.fuse(n_, o_))
                _vectorize_row(sch, out, sch.get_loops(out)[-1])
        else:
            n_, o_, y, _ = sch.get_loops(out)
            plane = sch.fuse(n_, o_)
            sch.parallel(plane)
            sch.compute_at(dw, y)
            _vectorize_row(sch, out, sch.get_loops(out)[-1])
        # the conv's own loops under the row: (x, r, s) -> (r, s, x), x in vectors
        xl, rl, sl = sch.get_loops(dw)[-3:]
        sch.reorder(rl, sl, xl)
        # vectorise before decompose_reduction: TVM vectorises only loops over a complete
        # or reduction block, which the update block is not once its init is split off
        _vectorize_row(sch, dw, sch.get_loops(dw)[-1])
        init = sch.decompose_reduction(dw, rl)
        _vectorize_row(sch, init, sch.get_loops(init)[-1])
        if pad is not None:
            sch.compute_at(pad, plane)
            _vectorize_row(sch, pad, sch.get_loops(pad)[-1])
    except ScheduleError:
        return None
    return sch


def _vectorize_row(sch: Schedule, block, loop) -> None:
    """Vectorise ``loop`` (a row of output columns): whole when it is short, else in pieces
    of 16 or of the largest width from 32 down to 8 that divides it (a row of 40 in 2 x 20),
    so that no piece needs a tail."""
    extent = sch.get(loop).extent
    if not isinstance(extent, tirx.IntImm):
        return
    n = extent.value
    width = n if n <= 2 * _LANES else _LANES if n % _LANES == 0 else next(
        (d for d in range(2 * _LANES, 7, -1) if n % d == 0), None)
    if width is None:
        return
    try:
        sch.vectorize(loop if width == n else sch.split(loop, [None, width])[1])
    except ScheduleError:
        pass
