"""Convolutions by constant weights as TVM GEMM kernels: im2col, then the matmul schedule.

A 2-d ``prim.conv`` (one group, no input dilation, float32) whose kernel is a constant becomes,
with its elementwise epilogue (batch norm, relu, a residual add), a ``fusion.group`` of kind
``conv``::

    %wp = builtin.constant : tensor<O/32 x C x R x S x 32 xf32>    (the weights, packed)
    %wt = prim.transpose(%wp) {permutation = [0, 4, 1, 2, 3]} : tensor<O/32 x 32 x C x R x S>
    %w  = prim.reshape(%wt) : tensor<O x C x R x S xf32>
    %y  = prim.conv(%x, %w) {...}
    ... the epilogue's ops on %y ...

The lowering computes the convolution as a GEMM over the output positions ``P = H' x W'``:
the input is zero-padded once into a buffer (when the convolution pads), ``col[n, c, r, s, y,
x]`` is the window as plain loads from it (inlined into the GEMM: no im2col copy), and
``gemm[n, p, o] = sum over c, r, s of col[n, c, r, s, p] * w[o, c, r, s]``, which the matmul
schedule (pir.codegen.tvm.gemm_schedule.schedule_matmul) tiles: a few output positions (rows)
by a panel of output channels (two vectors of the target CPU, 32 with AVX-512, loaded from
a panel of the packed weights, each panel one contiguous ``C x R x S x 32`` slab),
accumulated in registers, the epilogue applied as the tile is written to ``[N, O, H', W']``.
A 1x1 convolution over many positions is instead ``gemm[n, o, p]``, positions in the vectors
(:func:`_positions_in_lanes`).

Between two such groups the value goes in channel blocks, ``[N, C/16, H, W, 16]``
(pir.codegen.tvm.nchwc): a group whose input comes blocked reduces over ``(C/16, R, S, 16)``
and reads the blocks directly (:func:`_conv_blocked`).  A 3x3 stride-1 one from blocks to
blocks is computed by Winograd's F(2x2, 3x3) instead (pir.codegen.tvm.winograd): its region
holds the transformed weights and the ops that turn them back into the 3x3 ones.

A convolution these forms do not take (symbolic spatial dims, groups, input dilation: a
ConvTranspose) is a ``conv`` group too, computed by the direct loop nest of
pir.codegen.tvm.direct, its weights packed in panels of the tile's output channels.
"""

from __future__ import annotations

import numpy as np

from tvm import te, tirx

from pir.codegen.tvm.direct import (direct_compute, is_flat, padded_channels, tile_rows,
                                    wants_direct, why_not_direct)
from pir.codegen.tvm.epilogue_split import split_elementwise_front
from pir.codegen.tvm.gemm import _cast, _epilogue, form_group, padded_width
from pir.codegen.tvm.halo import conv_halo, halo_source
from pir.codegen.tvm.int_range import exact_dtype
from pir.codegen.tvm.lanes import CHANNELS, lanes_apply
from pir.codegen.tvm.lower import RULES, tvm_dtype
from pir.codegen.tvm.nchwc import (BLOCK, BLOCKED_PANEL_PERM, block_outputs, blocked_source,
                                   pack_weights, plan_blocked, yields_blocked)
from pir.codegen.tvm.nchwc_region import block_region, keeps_channels
from pir.codegen.tvm.target import CpuTarget
from pir.codegen.tvm.weights import known_weights
from pir.codegen.tvm.winograd import append_weights, winograd_conv, winograd_source
from pir.codegen.tvm.winograd import applies as winograd_applies
from pir.errors import PirError
from pir.ir.core import Block, Operation, Value
from pir.ir.dialects.builtin import enclosing_module, make_constant
from pir.ir.dialects.fusion import GroupOp
from pir.ir.types import DType, TensorType

__all__ = ["form_conv_groups", "CONV", "why_not_compiled"]

CONV = "conv"


def _supported(op: Operation, ranks=(4,)) -> str | None:
    """Why the TE rule cannot take ``op`` (None when it can); ``ranks``: the ranks taken (a
    1-d convolution, rank 3, is formed into a 2-d one over a unit height)."""
    xt, kt = op.operands[0].type, op.operands[1].type
    if not (isinstance(xt, TensorType) and isinstance(kt, TensorType)) or xt.shape is None \
            or kt.shape is None or len(xt.shape) not in ranks:
        return "only 2-d convolutions of ranked tensors"
    if op.feature_group_count != 1:
        return "grouped convolutions stay library calls"
    w = op.window(len(xt.shape) - 2)
    if any(d != 1 for d in w["lhs_dilation"]):
        return "input dilation (transposed convolution) stays a library call"
    if min(w["padding_low"] + w["padding_high"]) < 0:
        return "negative padding (cropping) stays a library call"
    if not all(isinstance(d, int) for d in xt.shape[1:]) or \
            not all(isinstance(d, int) for d in kt.shape):
        return "channels and spatial dims must be static"
    return None


def _conv(op, ins, ctx, name):
    """The im2col + GEMM form of a 2-d convolution (see the module docstring); a depthwise
    one has its own loop nest (pir.codegen.tvm.depthwise)."""
    from pir.codegen.tvm.depthwise import depthwise_compute, is_depthwise

    if is_depthwise(op):
        return depthwise_compute(op, *ins, ctx, name)
    if wants_direct(op):
        return direct_compute(op, *ins, ctx, name)
    why = _supported(op)
    if why is not None:
        raise PirError(f"tvm codegen: {op.describe()}: {why}")
    x, w = ins
    n = ctx.dim(op.operands[0].type.shape[0])
    c = op.operands[0].type.shape[1]
    o, _, kr, ks = op.operands[1].type.shape
    _, _, ho, wo = op.results[0].type.shape
    win = op.window(2)
    (sh, sw), (dh, dw) = win["window_strides"], win["rhs_dilation"]
    # the zero-padded input, computed once (input-sized): the window loads below are then
    # plain loads, which the GEMM reads directly, with no im2col copy
    xb = blocked_source(op.operands[0])
    if xb is not None and reduces_blocks(op):
        return _conv_blocked(op, xb, w, n, ctx, name)
    x = padded_input(op, x, n, name)
    if _positions_in_lanes(op, ctx.cpu):
        # [N, O, P]: vectors of output positions, which the input, a residual and the
        # output all hold contiguously in NCHW (see _positions_in_lanes)
        rc = te.reduce_axis((0, c), name=f"{name}_c")
        gemm = te.compute(
            (n, o, ho * wo),
            lambda b, oc, p: te.sum(x[b, rc, p // wo, p % wo] * w[oc, rc, 0, 0], axis=[rc]),
            name=f"{name}_gemm")
        return te.compute((n, o, ho, wo), lambda b, oc, y, xx: gemm[b, oc, y * wo + xx],
                          name=name)

    col = te.compute((n, c, kr, ks, ho, wo),
                     lambda b, ci, r, s, y, xx: x(b, ci, y * sh + r * dh, xx * sw + s * dw),
                     name=f"{name}_col")
    rc = te.reduce_axis((0, c), name=f"{name}_c")
    rr = te.reduce_axis((0, kr), name=f"{name}_r")
    rs = te.reduce_axis((0, ks), name=f"{name}_s")
    gemm = te.compute(
        (n, ho * wo, o),
        lambda b, p, oc: te.sum(col[b, rc, rr, rs, p // wo, p % wo] * w[oc, rc, rr, rs],
                                axis=[rc, rr, rs]), name=f"{name}_gemm")
    return te.compute((n, o, ho, wo), lambda b, oc, y, xx: gemm[b, y * wo + xx, oc], name=name)


def _positions_in_lanes(op, cpu: CpuTarget) -> bool:
    """A 1x1, stride-1, unpadded convolution over at least 256 output positions that two
    vectors divide: a plain [O, C] x [C, P] product, whose GEMM puts output positions, not
    channels, in the vector lanes.  In NCHW the channels of one position are P apart, so a
    tile of channels is written (and a residual it adds is read) one lane at a time: ResNet's
    56x56 bottleneck output convolutions ran at 80-110 GFLOP/s against 210 for the others,
    and at 160-190 this way.  With positions in one vector per tile row (28 x 28 = 784 is 16
    x 49) the tile is half as wide, and those convolutions measured no faster (slower
    without a residual), so they keep the channel form."""
    _, _, kr, ks = op.operands[1].type.shape
    _, _, ho, wo = op.results[0].type.shape
    win = op.window(2)
    unpadded = not any(win["padding_low"] + win["padding_high"])
    return (kr == ks == 1 and win["window_strides"] == (1, 1) and unpadded
            and ho * wo >= 256 and cpu.panel(ho * wo) == cpu.panel_width
            and not yields_blocked(op.parent))


def reduces_blocks(op) -> bool:
    """Whether a convolution whose input comes in channel blocks reduces over them
    (:func:`_conv_blocked`), or unblocks the input in the zero-padding copy it makes and
    reduces in NCHW order.  Measured on ResNet-50's 3x3 stride-2 convolutions, alone (ms,
    NCHW input / blocked, unblocked in the copy / blocked, reduced over the blocks):
    56x56 -> 28x28, 128 channels: 1.04 / 1.22 / 0.94; 28 -> 14, 256: 0.90 / 0.96 / 0.89;
    14 -> 7, 512: 1.03 / 1.04 / 1.21.  So every window reduces over the blocks but a strided
    one onto fewer than 64 positions (a 7x7 map, one tile row per output row)."""
    _, _, kr, ks = op.operands[1].type.shape
    _, _, ho, wo = op.results[0].type.shape
    strided = tuple(op.window(2)["window_strides"]) != (1, 1)
    return kr * ks == 1 or not strided or ho * wo >= 64


def _conv_blocked(op, xb: Value, w, n, ctx, name):
    """The GEMM form of a convolution whose input comes in channel blocks
    (``xb``: ``[N, C/16, H, W, 16]``, see pir.codegen.tvm.nchwc): reduced over ``(C/16, R,
    S, 16)``, the order its weights are packed in, so a tile row's window loads walk one
    position's 16 channels, contiguous, before the next tap; or, when its weights come from
    Winograd's transformed ones, the Winograd form (pir.codegen.tvm.winograd).  An input its
    maker padded with this convolution's padding (pir.codegen.tvm.halo) is read as it is;
    any other is padded here first."""
    c = op.operands[0].type.shape[1]
    o, _, kr, ks = op.operands[1].type.shape
    _, _, ho, wo = op.results[0].type.shape
    win = op.window(2)
    (sh, sw), (dh, dw) = win["window_strides"], win["rhs_dilation"]
    found = halo_source(xb)
    if found is not None and found[1] == conv_halo(op):
        xb = ctx.env[found[0]]
    else:
        xb = padded_input(op, ctx.env[xb], n, name, blocked=True)
    u = winograd_source(op.operands[1])
    if u is not None:
        return winograd_conv(xb, ctx.env[u], n, c, o, ho, wo, name)
    rb = te.reduce_axis((0, c // BLOCK), name=f"{name}_cb")
    rr = te.reduce_axis((0, kr), name=f"{name}_r")
    rs = te.reduce_axis((0, ks), name=f"{name}_s")
    ri = te.reduce_axis((0, BLOCK), name=f"{name}_ci")
    gemm = te.compute(
        (n, ho * wo, o),
        lambda b, p, oc: te.sum(
            xb[b, rb, (p // wo) * sh + rr * dh, (p % wo) * sw + rs * dw, ri]
            * w[oc, rb * BLOCK + ri, rr, rs], axis=[rb, rr, rs, ri]), name=f"{name}_gemm")
    return te.compute((n, o, ho, wo), lambda b, oc, y, xx: gemm[b, y * wo + xx, oc], name=name)


def padded_input(op, x, n, name: str, blocked: bool = False, extra: int = 0):
    """``x`` (``[N, C, H, W]``, or ``[N, C/16, H, W, 16]`` when ``blocked``) zero-padded by
    the convolution's padding (and ``extra`` more zero columns on the right), as a compute
    named ``*_xpad`` (the schedules find it by that name); ``x`` itself without padding."""
    _, c, h, wd = op.operands[0].type.shape
    halo = conv_halo(op)
    if halo is None and not extra:
        return x
    ph, pw, qh, qw = halo or (0, 0, 0, 0)
    qw += extra
    dtype = tvm_dtype(op.results[0].type.dtype)

    def pad(b, ci, iy, ix, *lane):
        inside = tirx.all(iy >= ph, iy < h + ph, ix >= pw, ix < wd + pw)
        return tirx.if_then_else(inside, x(b, ci, iy - ph, ix - pw, *lane),
                                 tirx.const(0, dtype))

    hp, wp = h + ph + qh, wd + pw + qw
    shape = (n, c // BLOCK, hp, wp, BLOCK) if blocked else (n, c, hp, wp)
    if blocked:  # te.compute passes one index per dim, by the function's arity
        return te.compute(shape, lambda b, ci, iy, ix, i: pad(b, ci, iy, ix, i),
                          name=f"{name}_xpad")
    return te.compute(shape, pad, name=f"{name}_xpad")


RULES["prim.conv"] = _conv


def _conv_weights(op: Operation) -> np.ndarray | None:
    """The [O, C, R, S] weights of a convolution this module compiles, else None."""
    if op.name != "prim.conv" or _supported(op, ranks=(3, 4)) is not None:
        return None
    if op.operands[0].type.dtype != DType.F32 or op.operands[1].type.dtype != DType.F32:
        return None
    # a constant, or a group over constants: the weights of a QDQ model's convolution are
    # its int8 ones centred, which fold leaves to be computed (int8 stays int8 on disk)
    w = known_weights(op.operands[1])
    return w if w is not None and w.size else None


def _plan_layout(block: Block, weights: dict[Operation, np.ndarray]):
    """Before ``block``'s conv groups are formed: each convolution's epilogue group (as
    forming will take it) and the channel-block plan (``nchwc.plan_blocked``)."""
    for op in weights:
        users = {u.op for u in op.results[0].uses}
        if len(users) == 1 and isinstance(g := users.pop(), GroupOp) \
                and g.kind != "elementwise" and g.parent is block:
            split_elementwise_front(g, op.results[0])  # (a pool after bias and relu)
    # (not the epilogue of a convolution this module leaves to others, a depthwise one:
    # its group is formed later, from NCHW values)
    taken = {_epilogue(op) for op in block.ops if op.name == "prim.conv" and op not in weights}
    others = [g for g in block.ops if isinstance(g, GroupOp) and g not in taken
              and keeps_channels(g)]
    # a group that reads two convolutions' results (a residual block's output convolution
    # and its downsample) is the epilogue of the first; the second's result is its input
    epilogues, claimed = {}, set()
    for op in weights:
        epi = _epilogue(op)
        epilogues[op] = epi if epi not in claimed else None
        claimed.add(epi)
    return epilogues, plan_blocked(epilogues, others)


def form_conv_groups(block: Block, cpu: CpuTarget) -> int:
    """Replace each convolution of ``block`` this module compiles (and its epilogue group)
    by one ``conv`` group, its weights packed for the tiles of ``cpu``."""
    from pir.ir.dialects.prim.linalg import ConvOp
    from pir.ir.dialects.prim.shape import ReshapeOp, SliceOp

    weights = {op: w for op in list(block.ops) if (w := _conv_weights(op)) is not None}
    direct = {op: w for op in list(block.ops) if (w := _direct_weights(op)) is not None}
    epilogues, (makes, reads, regions) = _plan_layout(block, weights)
    halo_of = _plan_halos(makes, epilogues, weights)
    blocked: list[GroupOp] = []
    halos: dict[GroupOp, tuple] = {}
    count = 0
    for op, w in weights.items():
        name = op.results[0].name or "conv"

        def core(body: Block, x_arg: Value, op=op, w=w, name=name) -> Value:
            flat = w.ndim == 3  # a 1-d convolution: a 2-d one over a height of 1
            if flat:
                w = w[:, :, None, :]
                xt = x_arg.type
                x_arg = body.append(ReshapeOp.build(
                    x_arg, loc=op.loc, result_names=[f"{name}.x2d"],
                    result_types=[xt.with_shape([*xt.shape[:2], 1, xt.shape[2]])])).results[0]
            o, c_in, kr, ks = w.shape
            # output channels padded with zero filters to whole vectors (24 -> 32): the
            # extra channels are computed and sliced off before the epilogue
            o_pad = padded_width(o)
            if o_pad != o:
                w = np.concatenate([w, np.zeros((o_pad - o, c_in, kr, ks), w.dtype)])
            bn = cpu.panel(o_pad)
            if op in reads and op in makes and not flat and winograd_applies(op, cpu):
                # Winograd's transformed weights, and the ops back to these (its output
                # channels are whole panels: no padding, no slice after the conv)
                kt = append_weights(body, enclosing_module(op), w, op.operands[1].type.dtype,
                                    name, op.loc, cpu.panel_width)
            else:
                kt = _packed_weights(body, op, w, bn, reads, name)
            attrs = {k: op.attributes[k] for k in op.attributes}
            out = op.results[0].type
            if flat:
                win = op.window(1)
                attrs.update({k: (0 if k.startswith("padding") else 1, *win[k]) for k in win})
                out = out.with_shape([*out.shape[:2], 1, out.shape[2]])
            padded = out.with_shape([out.shape[0], o_pad, *out.shape[2:]])
            direct = o_pad == o and not flat
            conv = body.append(ConvOp.build(x_arg, kt, loc=op.loc,
                                            result_types=[padded],
                                            result_names=[name if direct else f"{name}.pad"],
                                            **attrs))
            y = conv.results[0]
            if o_pad != o:
                y = body.append(SliceOp.build(
                    y, start_indices=[0], limit_indices=[o], axes=[1], loc=op.loc,
                    result_types=[out], result_names=[name if not flat else f"{name}.cut"])
                ).results[0]
            if flat:
                y = body.append(ReshapeOp.build(y, loc=op.loc, result_names=[name],
                                                result_types=[op.results[0].type])).results[0]
            return y

        group = form_group(op, core, epilogues[op], CONV)
        if op in makes:
            blocked.append(group)
        if op in halo_of:
            halos[group] = halo_of[op]
        count += 1
    for g, args in regions.items():
        block_region(g, args)
        blocked.append(g)
    block_outputs(blocked, halos)
    for op, w in direct.items():
        _form_direct(op, w, cpu)
        count += 1
    return count


def _direct_weights(op: Operation) -> np.ndarray | Value | None:
    """The [O, C/G, R(, S)] weights of a convolution that the direct form computes
    (pir.codegen.tvm.direct): a constant's array, or the value itself when the kernel is
    computed (a derivative's, a dequantized one), which the kernel then reads unpacked; else
    None.  A static depthwise one is left to pir.codegen.tvm.depthwise."""
    from pir.codegen.tvm.depthwise import is_depthwise

    if op.name != "prim.conv" or not wants_direct(op) or is_depthwise(op):
        return None
    w = known_weights(op.operands[1])  # (a quantized one's: its centred integers)
    if w is None:
        return op.operands[1]
    return w if w.size else None


def _form_direct(op: Operation, w: np.ndarray | Value, cpu: CpuTarget) -> GroupOp:
    """``op`` and its epilogue group as one ``conv`` group of the direct form: constant
    weights packed in panels of the tile's output channels (``[O/rows, C/G, R, S, rows]``),
    a 1-d convolution made a 2-d one over a height of 1."""
    from pir.ir.dialects.prim.linalg import ConvOp
    from pir.ir.dialects.prim.shape import ReshapeOp, SliceOp

    name = op.results[0].name or "conv"
    computed = isinstance(w, Value)

    def core(body: Block, x_arg: Value, *w_arg: Value) -> Value:
        flat = len(op.operands[1].type.shape) == 3
        attrs = {k: op.attributes[k] for k in op.attributes}
        out = op.results[0].type
        if flat:
            xt = x_arg.type
            x_arg = body.append(ReshapeOp.build(
                x_arg, loc=op.loc, result_names=[f"{name}.x2d"],
                result_types=[xt.with_shape([*xt.shape[:2], 1, xt.shape[2]])])).results[0]
            win = op.window(1)
            attrs.update({k: (0 if k.startswith("padding") else 1, *win[k]) for k in win})
            out = out.with_shape([*out.shape[:2], 1, out.shape[2]])
        o = o_pad = out.shape[1]
        if computed:
            kt = w_arg[0]
            if flat:
                wt = kt.type
                kt = body.append(ReshapeOp.build(
                    kt, loc=op.loc, result_names=[f"{name}.w2d"],
                    result_types=[wt.with_shape([*wt.shape[:2], 1, wt.shape[2]])])).results[0]
        else:
            w4 = w[:, :, None, :] if flat else w
            if compute.numpy != w4.dtype:
                w4 = w4.astype(compute.numpy)
            o_pad = padded_channels(o) if op.feature_group_count == 1 else o
            if o_pad != o:  # zero weights for the extra channels (sliced off below)
                w4 = np.concatenate([w4, np.zeros((o_pad - o, *w4.shape[1:]), w4.dtype)])
            # (a 1-d one with channels in the lanes reads vectors of 16 channels of a tap)
            lanes = flat and lanes_apply(o_pad, op.feature_group_count,
                                         op.window(1)["lhs_dilation"], compute)
            kt = _packed_weights(body, op, w4, CHANNELS if lanes else
                                 tile_rows(o_pad, cpu, is_flat(op)), (), name)
        if x_arg.type.dtype != compute:
            x_arg = _cast(body, x_arg, compute, f"{name}.xf", op.loc)
        last = "" if compute == out.dtype else ".f"  # (then cast back, exactly)
        out = out.with_dtype(compute)
        padded = out.with_shape([out.shape[0], o_pad, *out.shape[2:]])
        y = body.append(ConvOp.build(x_arg, kt, loc=op.loc, result_types=[padded],
                                     result_names=[f"{name}.pad" if o_pad != o else
                                                   f"{name}.2d" if flat else name + last],
                                     **attrs)).results[0]
        if o_pad != o:
            y = body.append(SliceOp.build(
                y, start_indices=[0], limit_indices=[o], axes=[1], loc=op.loc,
                result_types=[out],
                result_names=[f"{name}.2d" if flat else name + last])).results[0]
        if flat:
            y = body.append(ReshapeOp.build(
                y, loc=op.loc, result_names=[name + last],
                result_types=[op.results[0].type.with_dtype(compute)])).results[0]
        if last:
            y = _cast(body, y, op.results[0].type.dtype, name, op.loc)
        return y

    # an integer convolution by known weights is computed in float32 where that is exact
    # (pir.codegen.tvm.int_range): the float FMA is 2-3x the int32 multiply
    compute = op.results[0].type.dtype if computed else exact_dtype(
        op.operands[0], w.reshape(w.shape[0], -1).T, op.results[0].type.dtype)
    return form_group(op, core, _epilogue(op), CONV, inputs=[w] if computed else [])


def why_not_compiled(op: Operation) -> str:
    """Why a convolution codegen left outside the kernels stays a library call."""
    from pir.codegen.tvm.depthwise import is_depthwise

    if is_depthwise(op) or _supported(op, ranks=(3, 4)) is None or wants_direct(op):
        if known_weights(op.operands[1]) is None:
            return ("its kernel is computed: the static fast paths pack weights known at "
                    "codegen only")
        if op.operands[0].type.dtype != DType.F32:
            return "only float32 convolutions are compiled"
        return "an empty convolution"
    return why_not_direct(op) or _supported(op, ranks=(3, 4)) or "not compiled"


def _packed_weights(body: Block, op: Operation, w: np.ndarray, bn: int, reads,
                    name: str) -> Value:
    """Append to ``body`` the constant of ``w`` packed in panels of ``bn`` output channels
    (in the input's block order when the convolution reads blocks) and the transpose and
    reshape back to ``[O, C, R, S]``; return that."""
    from pir.ir.dialects.prim.shape import ReshapeOp, TransposeOp

    o_pad, c_in, kr, ks = w.shape
    if op in reads and reduces_blocks(op):  # panel rows in (C/16, R, S, 16) order
        packed, perm = pack_weights(w, bn), BLOCKED_PANEL_PERM
    else:
        packed = np.ascontiguousarray(w.reshape(o_pad // bn, bn, c_in, kr, ks)
                                      .transpose(0, 2, 3, 4, 1))
        perm = (0, 4, 1, 2, 3)
    c = body.append(make_constant(enclosing_module(op), packed, f"{name}.packed", op.loc))
    kt = body.append(TransposeOp.build(c.results[0], permutation=list(perm), loc=op.loc,
                                       result_names=[f"{name}.panels"]))
    wt = op.operands[1].type.with_dtype(DType.from_numpy(w.dtype))  # (f32: an exact int one)
    return body.append(ReshapeOp.build(kt.results[0], loc=op.loc,
                                       result_types=[wt.with_shape([o_pad, c_in, kr, ks])],
                                       result_names=[f"{name}.w"])).results[0]


def _plan_halos(makes: set, epilogues: dict, weights: dict) -> dict:
    """convolution -> the halo (pir.codegen.tvm.halo) its blocked result gets: when every
    reader of that result is a convolution this module compiles, reading it as its input in
    blocks, and all pad it alike."""
    halo_of = {}
    for op in makes:
        epi = epilogues[op]
        v = epi.results[0] if epi is not None else op.results[0]
        readers = [u.op for u in v.uses]
        if not readers or not all(r in weights and u.index == 0 and reduces_blocks(r)
                                  for r, u in zip(readers, v.uses)):
            continue
        halos = {conv_halo(r) for r in readers}
        if len(halos) == 1 and None not in halos:
            halo_of[op] = halos.pop()
    return halo_of
