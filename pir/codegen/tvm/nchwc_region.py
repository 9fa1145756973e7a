"""Channel-blind groups in channel blocks: an elementwise or injective group between
convolutions (bias, relu, a max pool) rewritten to compute on ``[N, C/16, H, W, 16]``.

A group qualifies (:func:`keeps_channels`) when every op of its region leaves each channel to
itself: elementwise ops, broadcasts of a scalar or of a per-channel vector, and pads and slices
of the spatial dims only.  The same ops then compute on blocks with a trailing dim of 16 added
(:func:`block_region`): a per-channel vector ``[C]`` is reshaped to ``[C/16, 16]`` before its
broadcast, a pad pads the new dim by 0, a slice leaves it whole.  The schedule's vectors then
run along the 16 channels of a position, contiguous in every buffer the group touches (the max
pool's padded input included), where a region that kept NCHW and converted at its edges would
gather a lane at a time.
"""

from __future__ import annotations

from pir.codegen.tvm.nchwc import BLOCK, blocked_type, to_blocked
from pir.ir.core import Operation, Value, attr_or_default
from pir.ir.dialects.builtin import ConstantOp
from pir.ir.dialects.fusion import GroupOp
from pir.ir.opdef import Elementwise
from pir.ir.types import TensorType

__all__ = ["keeps_channels", "block_region"]


def _rank(v: Value) -> int | None:
    t = v.type
    return len(t.shape) if isinstance(t, TensorType) and t.shape is not None else None


def keeps_channels(g: GroupOp) -> bool:
    """Whether every op of ``g``'s region (an elementwise or injective group with one NCHW
    result) leaves each channel to itself, so that it can compute on channel blocks."""
    if g.kind not in ("elementwise", "injective") or len(g.results) != 1:
        return False
    out = g.results[0].type
    if _rank(g.results[0]) != 4 or not isinstance(out.shape[1], int) or out.shape[1] % BLOCK:
        return False
    c = out.shape[1]
    body = g.body.block
    if any(_rank(a) not in (0, 1, 4) or (_rank(a) == 4 and a.type.shape[1] != c)
           or (_rank(a) == 1 and a.type.shape != (c,)) for a in body.args):
        return False
    return all(_op_keeps_channels(op, c) for op in body.ops[:-1])


def _op_keeps_channels(op: Operation, c: int) -> bool:
    if isinstance(op, ConstantOp):
        return _rank(op.results[0]) in (0, 1)
    if len(op.results) != 1 or _rank(op.results[0]) != 4 \
            or op.results[0].type.shape[1] != c:
        return False
    if op.has_trait(Elementwise):
        return all(_rank(v) == 4 for v in op.operands)
    if op.name == "prim.broadcast_in_dim":
        x, dims = op.operands[0], tuple(op.broadcast_dimensions)
        return (_rank(x) == 0 or (dims == (1,) and x.type.shape == (c,))
                or (dims == (0, 1, 2, 3) and x.type.shape[1] == c))
    if op.name == "prim.pad":
        interior = attr_or_default(op, "interior_padding") or (0,) * 4
        return op.edge_padding_low[1] == op.edge_padding_high[1] == interior[1] == 0
    if op.name == "prim.slice":
        axes = attr_or_default(op, "axes")
        if axes:
            return 1 not in axes
        strides = attr_or_default(op, "strides") or (1,) * 4
        return op.start_indices[1] == 0 and op.limit_indices[1] == c and strides[1] == 1
    return False


def block_region(g: GroupOp, blocked_args: set[int]) -> None:
    """Rewrite ``g`` (:func:`keeps_channels`) to compute on channel blocks: the NCHW
    arguments at ``blocked_args`` arrive blocked, any other is blocked at the start of the
    region, and the result leaves blocked."""
    body = g.body.block
    for i, a in enumerate(body.args):
        if _rank(a) != 4:
            continue
        if i in blocked_args:
            a.type = blocked_type(a.type)
        else:
            uses = list(a.uses)
            b = to_blocked(body, 0, a)
            for u in uses:
                u.op.set_operand(u.index, b)
    for op in list(body.ops[:-1]):
        if op.results and _rank(op.results[0]) == 4 and not _is_layout_op(op):
            _block_op(body, op)
    g.results[0].type = body.terminator.operands[0].type


def _is_layout_op(op: Operation) -> bool:
    """The reshape and transpose :func:`block_region` itself inserted (already blocked)."""
    return op.name in ("prim.reshape", "prim.transpose") and _rank(op.results[0]) == 5


def _block_op(body, op: Operation) -> None:
    """Retype ``op`` (its operands already blocked) to compute on blocks, rebuilding it
    where an attribute names dims."""
    from pir.ir.dialects.prim.shape import BroadcastInDimOp, PadOp, ReshapeOp, SliceOp

    r = op.results[0]
    bt = blocked_type(r.type)
    if op.has_trait(Elementwise):
        r.type = bt
        return
    at = body.index(op)
    if op.name == "prim.broadcast_in_dim":
        x, dims = op.operands[0], list(op.broadcast_dimensions)
        if _rank(x) == 1:  # [C] -> [C/16, 16], over dims 1 and 4
            x = body.insert(at, ReshapeOp.build(
                x, result_types=[x.type.with_shape([x.type.shape[0] // BLOCK, BLOCK])],
                loc=op.loc, result_names=[f"{x.name or 'v'}.cb"])).results[0]
            at += 1
            dims = [1, 4]
        elif _rank(x) == 5:
            dims = [0, 1, 2, 3, 4]
        new = BroadcastInDimOp.build(x, broadcast_dimensions=dims, result_types=[bt],
                                     loc=op.loc, result_names=[r.name])
    elif op.name == "prim.pad":
        interior = attr_or_default(op, "interior_padding")
        extra = {"interior_padding": [*interior, 0]} if interior else {}
        new = PadOp.build(*op.operands, edge_padding_low=[*op.edge_padding_low, 0],
                          edge_padding_high=[*op.edge_padding_high, 0], loc=op.loc,
                          result_names=[r.name], **extra)
    else:  # prim.slice: with axes, the new dim is not among them; without, it is whole
        axes = attr_or_default(op, "axes")
        kw = {"axes": list(axes)} if axes else {}
        starts, limits = list(op.start_indices), list(op.limit_indices)
        strides = list(attr_or_default(op, "strides") or ())
        if not axes:  # the channel dim whole (keeps_channels): C/16 blocks
            limits[1] //= BLOCK
            starts, limits = starts + [0], limits + [BLOCK]
            strides = strides + [1] if strides else []
        if strides:
            kw["strides"] = strides
        new = SliceOp.build(op.operands[0], start_indices=starts, limit_indices=limits,
                            loc=op.loc, result_names=[r.name], **kw)
    body.insert(at, new)
    r.replace_all_uses_with(new.results[0])
    body.remove(op)
