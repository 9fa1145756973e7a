"""Peel the elementwise front off a group that consumes a convolution or matmul result.

``fuse`` marks a group that consumes a library result directly as its epilogue, whatever
else the group holds: ResNet's stem is one group of bias, relu and the 3x3 max pool.  A
kernel can only take an elementwise epilogue (the rest reads neighbouring outputs, which a
register tile does not have), so such a group left the convolution writing its raw result
and the pool group adding the bias and relu while it padded the input into a buffer of its
own (a value the 9 window slices read is computed once).  :func:`split_elementwise_front`
moves the elementwise front into a group of its own, which the convolution then takes as its
epilogue, and leaves the rest reading the front's one result.
"""

from __future__ import annotations

from pir.ir.core import Block, Operation, Region, Value
from pir.ir.dialects.builtin import ConstantOp
from pir.ir.dialects.fusion import GroupOp, YieldOp
from pir.ir.opdef import Elementwise

__all__ = ["split_elementwise_front"]


def _front_op(op: Operation) -> bool:
    return isinstance(op, ConstantOp) or op.has_trait(Elementwise) \
        or op.name == "prim.broadcast_in_dim"


def split_elementwise_front(g: GroupOp, result: Value) -> GroupOp | None:
    """Split ``g`` (a group that reads ``result``, a library op's value) into an
    elementwise group computing the ops that depend on ``result`` through elementwise ops
    and broadcasts only, and ``g`` reading that group's result; the new group, or None when
    ``g`` has no such front, or it ends in more than one value the rest reads."""
    body = g.body.block
    index = [i for i, v in enumerate(g.operands) if v is result]
    if len(index) != 1:
        return None
    start = body.args[index[0]]
    front: list[Operation] = []
    inside: set[Value] = {start}
    for op in body.ops[:-1]:
        if not _front_op(op):
            continue
        if not isinstance(op, ConstantOp) and op.results[0].type != start.type:
            # a broadcast that grows a value (a squeeze-excite gate's [N, C, 1, 1] to the
            # whole map) would make the kernel write the grown value, not the product's
            continue
        if isinstance(op, ConstantOp) or any(v in inside for v in op.operands):
            if all(v in inside or _outside_ok(v, body) for v in op.operands):
                front.append(op)
                inside.update(op.results)
    computed = [op for op in front if not isinstance(op, ConstantOp)]
    if not computed:
        return None
    read = {v for op in computed for v in op.operands}
    front = [op for op in front if not isinstance(op, ConstantOp) or op.results[0] in read]
    front_set = set(front)
    exits = [v for op in computed for v in op.results
             if any(u.op not in front_set for u in v.uses)]
    if len(exits) != 1 or any(u.op not in front_set for u in start.uses):
        return None
    (exit_value,) = exits
    # constants the rest of the region reads too stay there as well (a copy each)
    keep = {op for op in front if isinstance(op, ConstantOp)
            and any(u.op not in front_set for u in op.results[0].uses)}
    args = [a for a in body.args if any(u.op in front_set for u in a.uses)]
    new_body = Block([a.type for a in args], [a.name for a in args])
    arg_map = dict(zip(args, new_body.args))
    clones: dict[Value, Value] = {}
    for op in front:
        if op in keep:
            c = ConstantOp(list(op.operands), [r.type for r in op.results],
                           dict(op.attributes), loc=op.loc,
                           result_names=[r.name for r in op.results])
            new_body.append(c)
            clones[op.results[0]] = c.results[0]
            continue
        body.remove(op)
        op.operands = [clones.get(v, arg_map.get(v, v)) for v in op.operands]
        new_body.append(op)
    rest_uses = _uses_outside(exit_value, front_set)  # (before the new yield is one)
    new_body.append(YieldOp([exit_value]))
    outer = [g.operands[a.index] for a in args]
    epi = GroupOp(outer, [exit_value.type], {"kind": "elementwise",
                                              "epilogue_of": result.name or ""},
                  [Region([new_body])], loc=g.loc, result_names=[exit_value.name])
    parent = g.parent
    parent.insert(parent.index(g), epi)
    # the rest reads the front's result through the block argument that read ``result``
    start.type = exit_value.type
    for u in rest_uses:
        u.op.set_operand(u.index, start)
    g.set_operand(index[0], epi.results[0])
    g.attributes.pop("epilogue_of", None)  # the new group is the epilogue now
    return epi


def _outside_ok(v: Value, body: Block) -> bool:
    """A value the front may read besides its start: a block argument of rank 0 or 1 (a
    bias vector, a scalar)."""
    t = v.type
    return getattr(v, "owner", None) is body and t.shape is not None and len(t.shape) <= 1


def _uses_outside(v: Value, front: set[Operation]):
    return [u for u in v.uses if u.op not in front]
