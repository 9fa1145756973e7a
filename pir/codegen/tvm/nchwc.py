"""Channel blocks (NCHW16c) between convolution kernels.

In NCHW the channels of one position lie ``H x W`` apart.  A convolution kernel that puts
output channels in the vector lanes (every one but a large 1x1, see
:func:`pir.codegen.tvm.conv._positions_in_lanes`) then writes each tile, and reads a residual
it adds, one lane at a time, and its window loads step ``H x W`` floats per input channel.
ONNX Runtime's MLAS avoids both with its NCHWc layout: a tensor ``[N, C, H, W]`` is held as
``[N, C/16, H, W, 16]``, 16 channels of a position contiguous.  On ResNet-50, one thread, that
layout is 22% of ORT's time (ORT_ENABLE_EXTENDED, without it, 46 ms; ORT_ENABLE_ALL 36 ms).

Codegen does the same for the values that convolution groups hand each other: a value is
*blocked* when a convolution group (with its epilogue) makes it and only convolution groups
read it (as their input, or as a residual in their epilogue), with static channels that 16
divides.  The maker's region ends in ``to_blocked`` (a reshape and a transpose), and each
reader's begins with ``from_blocked``, so every region is still plain prim IR over NCHW that
the reference runtime runs and ``pir diff`` reads; the kernels index the blocks directly
(TVM inlines the index maps).  A value a function returns, or a pool or any other op reads,
stays NCHW: the layout never leaks out of the kernels that chose it.

A convolution whose input is blocked reduces over ``(C/16, R, S, 16)``, the input's order,
and its weights are packed in that order (:func:`pack_weights`).
"""

from __future__ import annotations

import numpy as np

from pir.ir.core import Block, Operation, Value
from pir.ir.dialects.fusion import GroupOp
from pir.ir.types import DType, TensorType

__all__ = ["BLOCK", "plan_blocked", "block_outputs", "blocked_source", "yields_blocked",
           "pack_weights", "BLOCKED_PANEL_PERM", "to_blocked", "blocked_type", "FROM_PERM"]

#: Channels per block: one AVX-512 vector of float32.
BLOCK = 16
#: to_blocked's transpose: [N, C/16, 16, H, W] -> [N, C/16, H, W, 16]
TO_PERM = (0, 1, 3, 4, 2)
#: from_blocked's transpose: [N, C/16, H, W, 16] -> [N, C/16, 16, H, W]
FROM_PERM = (0, 1, 4, 2, 3)
#: packed blocked-order weights [O/BN, C/16, R, S, 16, BN] -> [O/BN, BN, C/16, 16, R, S]
BLOCKED_PANEL_PERM = (0, 5, 1, 4, 2, 3)


def blocked_type(t: TensorType) -> TensorType:
    n, c, h, w = t.shape
    return t.with_shape([n, c // BLOCK, h, w, BLOCK])


def _blockable(t) -> bool:
    """A float32 NCHW tensor with static C (a multiple of 16), H and W."""
    return (isinstance(t, TensorType) and t.dtype == DType.F32 and t.shape is not None
            and len(t.shape) == 4 and all(isinstance(d, int) for d in t.shape[1:])
            and t.shape[1] % BLOCK == 0 and t.shape[1] > 0)


def plan_blocked(convs: dict[Operation, GroupOp | None],
                 others: list[GroupOp] = ()) -> tuple[set, set, dict]:
    """Which of ``convs`` (each convolution that becomes a ``conv`` group -> its epilogue
    group, or None) make a blocked result, which read a blocked input, and how each of
    ``others`` (groups that keep channels apart, pir.codegen.tvm.nchwc_region) computes on
    blocks: group -> the indices of its blocked operands.

    A result is blocked when every user of it reads blocks: a convolution (its input), the
    epilogue of one (a residual), or one of ``others`` whose own result is blocked.  One of
    ``others`` makes a blocked result only when it reads a blocked operand (else blocking
    would only move a transpose).  The largest such set: start from every candidate and drop
    values until none breaks the rule.  Decided before the groups are formed, so that a
    reader's weights are packed in the blocked order from the start."""
    conv_of_epilogue = {epi: op for op, epi in convs.items() if epi is not None}
    others = [g for g in others if g not in conv_of_epilogue]
    maker: dict[Value, Operation] = {}
    for op, epi in convs.items():
        if epi is None or len(epi.results) == 1:
            maker[epi.results[0] if epi is not None else op.results[0]] = op
    for g in others:
        maker[g.results[0]] = g
    blocked = {v for v in maker if _blockable(v.type) and v.uses}

    def reads_blocks(use) -> bool:
        user = use.op
        if user in convs:
            return use.index == 0 and len(user.operands[0].type.shape) == 4
        return user in conv_of_epilogue or (user in others and user.results[0] in blocked)

    changed = True
    while changed:
        changed = False
        for v in list(blocked):
            m = maker[v]
            if not all(reads_blocks(u) for u in v.uses) or (
                    isinstance(m, GroupOp) and not any(o in blocked for o in m.operands)):
                blocked.discard(v)
                changed = True
    makes = {maker[v] for v in blocked if maker[v] in convs}
    reads = {u.op for v in blocked for u in v.uses if u.op in convs}
    # (a group with a blocked operand has a blocked result: else that operand's use would
    # have dropped it, and the other way round)
    regions = {g: {i for i, o in enumerate(g.operands) if o in blocked}
               for g in others if g.results[0] in blocked}
    return makes, reads, regions


def block_outputs(groups: list[GroupOp], halos: dict | None = None) -> None:
    """Hand the result of each of ``groups`` (whose result :func:`plan_blocked` chose) to its
    readers in blocks: ``to_blocked`` before the maker's yield (unless its region already
    computes on blocks), the result's type made blocked, and ``from_blocked`` at the start
    of each reader's region (unless it computes on blocks).  A group in ``halos`` (group ->
    halo) pads its blocked result with zeros, and its readers slice the halo off first
    (pir.codegen.tvm.halo)."""
    from pir.codegen.tvm.halo import pad_maker, unpad_reader, unpadded_type

    halos = halos or {}
    for g in groups:
        v = g.results[0]
        halo = halos.get(g)
        if len(v.type.shape) == 4:
            body = g.body.block
            term = body.terminator
            y = to_blocked(body, body.index(term), term.operands[0])
            if halo is not None:
                y = pad_maker(body, body.index(term), y, halo)
            term.set_operand(0, y)
            v.type = y.type
        for use in list(v.uses):
            reader = use.op
            assert isinstance(reader, GroupOp), "plan_blocked admits only group readers"
            arg = reader.body.block.args[use.index]
            if arg.type == v.type:
                continue  # a region that computes on blocks
            if halo is None:
                _from_blocked(reader.body.block, arg, v.type)
            else:
                _from_blocked(reader.body.block, arg, unpadded_type(v.type, halo))
                unpad_reader(reader.body.block, arg, halo)


def to_blocked(body: Block, at: int, y: Value) -> Value:
    """Insert at ``at`` in ``body`` the reshape and transpose that block ``y`` (NCHW)."""
    from pir.ir.dialects.prim.shape import ReshapeOp, TransposeOp

    t: TensorType = y.type
    n, c, h, w = t.shape
    name = y.name or "y"
    loc = getattr(y.owner, "loc", None)
    split = body.insert(at, ReshapeOp.build(
        y, result_types=[t.with_shape([n, c // BLOCK, BLOCK, h, w])], loc=loc,
        result_names=[f"{name}.cb"]))
    return body.insert(at + 1, TransposeOp.build(
        split.results[0], permutation=list(TO_PERM), loc=loc,
        result_names=[f"{name}.nchwc"])).results[0]


def _from_blocked(body: Block, arg: Value, blocked: TensorType) -> None:
    """Make ``arg`` blocked, and give its NCHW readers the value unblocked."""
    from pir.ir.dialects.prim.shape import ReshapeOp, TransposeOp

    nchw = arg.type
    arg.type = blocked
    uses = list(arg.uses)
    n, cb, h, w, _ = blocked.shape
    name = arg.name or "x"
    t = body.insert(0, TransposeOp.build(arg, permutation=list(FROM_PERM),
                                         result_names=[f"{name}.cb"]))
    x = body.insert(1, ReshapeOp.build(t.results[0], result_types=[nchw],
                                       result_names=[f"{name}.nchw"])).results[0]
    for u in uses:
        u.op.set_operand(u.index, x)


def blocked_source(x: Value) -> Value | None:
    """The blocked ``[N, C/16, H, W, 16]`` value that ``x`` unblocks, when ``x`` is
    ``from_blocked`` of one; else None."""
    r = getattr(x, "op", None)
    if r is None or r.name != "prim.reshape":
        return None
    t = getattr(r.operands[0], "op", None)
    if t is None or t.name != "prim.transpose" or tuple(t.permutation) != FROM_PERM:
        return None
    src = t.operands[0]
    return src if src.type.shape[-1] == BLOCK else None


def yields_blocked(block: Block) -> bool:
    """Whether ``block`` (a group's region) yields its result in channel blocks (padded by a
    halo or not)."""
    from pir.codegen.tvm.halo import yielded_halo

    term = block.terminator
    if term is None or not term.operands:
        return False
    halo = yielded_halo(block)
    t = getattr(halo[0].operands[0] if halo else term.operands[0], "op", None)
    return t is not None and t.name == "prim.transpose" and tuple(t.permutation) == TO_PERM


def pack_weights(w: np.ndarray, bn: int) -> np.ndarray:
    """``[O, C, R, S]`` weights as ``[O/BN, C/16, R, S, 16, BN]`` panels: a panel's rows in
    the order a blocked input is reduced in."""
    o, c, r, s = w.shape
    return np.ascontiguousarray(w.reshape(o // bn, bn, c // BLOCK, BLOCK, r, s)
                                .transpose(0, 2, 4, 5, 3, 1))
