"""Reshard insertion: a plan (:mod:`pir.passes.shard.propagate`) written into the function.

Every value the plan lays out gets its ``!dist.tensor`` type (global shape, mesh,
placements); constants stay plain ``tensor`` types, since every rank holds them whole (a
constant's result type is its array's).  Where a consumer needs another layout than its
operand has, the steps of :func:`pir.passes.shard.comm.reshard_steps` are inserted before
the first consumer that needs it, and later consumers that need the same layout share them:

- collectives: ``dist.all_reduce``, ``dist.all_gather``, ``dist.reduce_scatter``,
  ``dist.all_to_all``, one mesh axis each, innermost axis first;
- the local step (``R -> S(d)``, a slice of each rank's block, and ``R -> P(k)``) stays a
  ``dist.reshard``: it needs no communication.  A constant enters the program this way.

Each inserted op carries ``shard.why``, naming the value, the producer's layout, the
consumer and the layout it needs: ``%h0.fc2.mm is [R, P(sum)]; prim.add "/h0.fc2" needs
[R, R]`` (placements per mesh axis, as the types print them).
"""

from __future__ import annotations

from pir.ir.builder import Builder
from pir.ir.core import Operation, OpResult, Value
from pir.ir.dialects.dist import (
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    ReduceScatterOp,
    ReshardOp,
)
from pir.ir.types import FunctionType, TensorType
from pir.passes.shard.comm import reshard_steps, resolve_shape
from pir.passes.shard.propagate import Plan, is_free
from pir.passes.shard.sharding import Sharding

__all__ = ["apply_plan"]

_OPS = {"all_reduce": AllReduceOp, "all_gather": AllGatherOp,
        "reduce_scatter": ReduceScatterOp, "all_to_all": AllToAllOp}


def _placements(s: Sharding | None, plan: Plan, rank: int) -> str:
    s = s or Sharding.replicated(rank)
    return "[" + ", ".join(map(str, s.placements(plan.mesh))) + "]"


class _Inserter:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.made: dict[tuple[Value, Sharding], Value] = {}

    def reshard(self, v: Value, have: Sharding | None, need: Sharding, before: Operation,
                consumer: str) -> Value:
        """``v`` laid out as ``need`` (inserting the steps before ``before`` the first time)."""
        if have is not None and is_free(v):
            # an annotated constant: each rank holds only its block, taken when it loads it;
            # other layouts are made from that block, by collectives
            base = self._emit(v, None, have, before, consumer)
            return base if have == need else self._emit(base, have, need, before, consumer)
        return self._emit(v, have, need, before, consumer)

    def _emit(self, v: Value, have: Sharding | None, need: Sharding, before: Operation,
              consumer: str) -> Value:
        key = (v, need)
        if key in self.made:
            return self.made[key]
        plan, mesh = self.plan, self.plan.mesh
        rank = len(v.type.shape)
        src = have or Sharding.replicated(rank)
        is_ = "whole (a constant)" if have is None else _placements(have, plan, rank)
        why = f"%{v.name} is {is_}; {consumer} needs {_placements(need, plan, rank)}"
        b = Builder(before.parent, before=before, loc=before.loc)
        cur = v
        shape = resolve_shape(v.type.shape, plan.dims)
        base = v.name or "v"
        for step in reshard_steps(shape, v.type.dtype, src, need, mesh):
            t = step.after.to_type(TensorType(v.type.dtype, v.type.shape), mesh)
            if step.kind == "local":
                op = ReshardOp.build(cur, result_types=[t], loc=b.loc,
                                     result_names=[f"{base}.reshard"])
            else:
                attrs = {"mesh_axis": step.axis}
                if step.dim is not None:
                    attrs["dim"] = step.dim
                op = _OPS[step.kind].build(cur, loc=b.loc, result_names=[f"{base}.{step.kind}"],
                                           **attrs)
            op.attributes["shard.why"] = why
            b.insert(op)
            cur = op.result
        self.made[key] = cur
        return cur


def _consumer(op: Operation, i: int) -> str:
    return f"{op.describe()} operand {i}"


def apply_plan(plan: Plan) -> None:
    """Rewrite ``plan.fn`` as the plan says (types, reshards, function type)."""
    fn, mesh = plan.fn, plan.mesh
    ins = _Inserter(plan)
    for a in fn.entry.args:
        if a in plan.layout:
            a.type = plan.layout[a].to_type(a.type, mesh)
    for op in list(fn.entry.ops):
        d = plan.decision.get(op)
        if d is not None:
            for i, (v, need) in enumerate(zip(list(op.operands), d.inputs)):
                have = plan.have(v)  # None: a constant not annotated, whole
                if have is None and not need.used_axes:
                    continue  # a whole constant, used whole
                if have != need or is_free(v):
                    op.set_operand(i, ins.reshard(v, have, need, op, _consumer(op, i)))
            for r, s in zip(op.results, d.outputs):
                r.type = s.to_type(r.type, mesh)
            for r in op.results:
                if r in plan.forced:  # an annotated result the op gives in another layout
                    _force(plan, ins, op, r)
        elif op.name == "func.return":
            _reshard_returns(op, list(op.operands), plan, ins)
    _retype(fn)


def _reshard_returns(op: Operation, orig: list[Value], plan: Plan, ins: _Inserter) -> None:
    """Reshard the returned values as the plan says; the function's outputs keep their
    names (``pir run`` keys its outputs by them): the value returned takes the name, and the
    value it was resharded from becomes ``NAME.local``."""
    for i, (v, need) in enumerate(zip(orig, plan.returns)):
        have = plan.have(v)
        if (have != need or (is_free(v) and have is not None)) and not (
                have is None and not need.used_axes):
            op.set_operand(i, ins.reshard(v, have, need, op, "func.return"))
    for v, new in zip(orig, op.operands):
        # (an argument keeps its name: it is an input's name too)
        if new is not v and isinstance(v, OpResult) and v.name and new.name != v.name:
            new.name, v.name = v.name, f"{v.name}.local"


def _force(plan: Plan, ins: _Inserter, op: Operation, r: Value) -> None:
    """Reshard ``r`` right after ``op`` into its annotated layout, for every use."""
    want = plan.layout[r]
    users = list(r.uses)
    block = op.parent
    nxt = block.ops[block.index(op) + 1]
    new = ins.reshard(r, plan.forced[r], want, nxt, "its annotation")
    plan.layout[new] = want
    for u in users:
        u.op.set_operand(u.index, new)
    if r.name:  # the annotated name names the value in its annotated layout
        new.name, r.name = r.name, f"{r.name}.local"


def _retype(fn) -> None:
    inputs = tuple(a.type for a in fn.entry.args)
    outputs = tuple(v.type for v in fn.return_op.operands)
    fn.attributes["function_type"] = FunctionType(inputs, outputs)
