"""Outlining: each group of ops becomes one ``fusion.group`` op, and the block is put back
in a valid order.

A group's operands are the values its ops read from outside, in first-use order; its results
are the values of its ops used outside it, in program order, and they keep those values'
names, so the function's outputs and every use outside the group read the same names as
before.  Inside, each operand becomes a block argument named after it, except tiny
constants (a scale of ``1e-05``, a count of ``768``): each group gets its own copy inside,
so code generation sees the value (an immediate in the kernel) rather than a parameter.
"""

from __future__ import annotations

import heapq

from pir.ir.core import Block, Operation, Region, Value
from pir.ir.dialects.builtin import ConstantOp
from pir.ir.dialects.fusion import GroupOp, YieldOp
from pir.ir.opdef import Terminator
from pir.passes.fuse.grouping import Unit, ancestor_in

__all__ = ["outline_groups"]


def outline_groups(block: Block, units: list[Unit],
                   hidden: list[tuple[Operation, Operation]] = ()) -> list[GroupOp]:
    """Replace each unit's ops by one fusion.group op; then reorder ``block``, keeping the
    ``hidden`` dependencies (pairs of ops, see grouping.symbol_edges) too."""
    index = {op: i for i, op in enumerate(block.ops)}
    key: dict[Operation, int] = dict(index)
    holder: dict[Operation, Operation] = {}
    groups = []
    for unit in units:
        group = _outline(block, unit)
        key[group] = max(index[op] for op in unit.ops)
        holder.update((op, group) for op in unit.ops)
        groups.append(group)
    extra = [(holder.get(a, a), holder.get(b, b)) for a, b in hidden]
    _reorder(block, key, [(a, b) for a, b in extra if a is not b])
    return groups


#: Constants of at most this many elements are copied into the groups that read them.
TINY_CONSTANT = 64


def _tiny_constant(v: Value) -> bool:
    op = getattr(v, "op", None)
    if not isinstance(op, ConstantOp):
        return False
    n = getattr(v.type, "numel", None)
    return n is not None and n <= TINY_CONSTANT


def _outline(block: Block, unit: Unit) -> GroupOp:
    members = set(unit.ops)
    inputs: list[Value] = []
    copied: dict[Value, Operation] = {}
    for op in unit.ops:
        for v in op.operands:
            if getattr(v, "op", None) in members or v in inputs or v in copied:
                continue
            if _tiny_constant(v):
                c = v.op
                copied[v] = type(c)([], [v.type], dict(c.attributes), loc=c.loc,
                                    result_names=[v.name])
            else:
                inputs.append(v)
    outputs = [r for op in unit.ops for r in op.results
               if any(ancestor_in(block, u.op) not in members for u in r.uses)]
    body = Block([v.type for v in inputs], [v.name for v in inputs])
    arg_of = dict(zip(inputs, body.args))
    for v, c in copied.items():
        body.append(c)
        arg_of[v] = c.results[0]
    group = GroupOp(inputs, [r.type for r in outputs], _attributes(unit), [Region([body])],
                    loc=_anchor(unit).loc, result_names=[r.name for r in outputs])
    # Uses outside the group now read the group's results; then the ops move inside.
    for r, new in zip(outputs, group.results):
        for use in list(r.uses):
            if ancestor_in(block, use.op) not in members:
                use.op.set_operand(use.index, new)
    for op in unit.ops:
        block.remove(op)
        op.operands = [arg_of.get(v, v) for v in op.operands]
        body.append(op)
    body.append(YieldOp(list(outputs)))
    block.append(group)
    for v in copied:
        if not v.uses and v.op.parent is block:
            v.op.erase()  # every reader has its own copy now
    return group


def _attributes(unit: Unit) -> dict:
    attrs = {"kind": unit.kind}
    if unit.epilogue_of is not None and not unit.reductions:
        attrs["epilogue_of"] = unit.epilogue_of.name or ""
    return attrs


def _anchor(unit: Unit) -> Operation:
    """The op whose location the group takes: its first reduction, else its first op."""
    from pir.passes.fuse.classify import REDUCTION, kind_of
    return next((op for op in unit.ops if kind_of(op) == REDUCTION), unit.ops[0])


def _reorder(block: Block, key: dict[Operation, int],
             extra: list[tuple[Operation, Operation]]) -> None:
    """A topological order of the block's ops (Kahn's algorithm), taking the ready op that
    came first in the original program each time, so that untouched code keeps its order
    and the result is deterministic.  A group counts as sitting where its last op was: the
    ops that ran before it still do, which matters to a runtime that learns a symbolic dim
    (``B``) from the first value that shows it.  The terminator stays last."""
    ops = [op for op in block.ops if Terminator not in op.traits]
    tail = [op for op in block.ops if Terminator in op.traits]
    position = {op: i for i, op in enumerate(ops)}
    waiting = {op: 0 for op in ops}
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    hidden: dict[Operation, set[Operation]] = {}
    for a, b in extra:
        if a in position and b in position:
            hidden.setdefault(b, set()).add(a)
    for op in ops:
        deps = set(hidden.get(op, ()))
        for nested in op.walk():
            for v in nested.operands:
                owner = getattr(v, "op", None)
                p = ancestor_in(block, owner) if owner is not None else None
                if p is not None and p is not op and p in position:
                    deps.add(p)
        waiting[op] = len(deps)
        for p in deps:
            users[p].append(op)
    ready = [(key[op], position[op], op) for op in ops if waiting[op] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, _, op = heapq.heappop(ready)
        order.append(op)
        for u in users[op]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (key[u], position[u], u))
    assert len(order) == len(ops), "fuse: the grouped block has a cycle"
    block.ops[:] = order + tail
    block._hint = 0
