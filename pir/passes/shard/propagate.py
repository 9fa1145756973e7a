"""Sharding propagation: from a few annotated values to a layout for every value and a
decision for every op.

The propagation runs in two phases over one function (straight-line code, as ``pir shard``
sees it after decomposition):

1. **Hints, to a fixed point.**  Forward over the ops, then backward, again and again until
   nothing changes.  An op whose operands and results are all unknown waits; otherwise its
   rule decides from what is known (:func:`resolve`), and each unknown result and operand
   takes the layout the decision gives it (operands without partials: a rule decides where
   partial values arise).  Values are only ever filled in, so this ends.  Annotated values
   keep their annotation; arguments not annotated are whole (replicated) from the start.
2. **Decisions, forward once.**  Every op decides again, now from its operands' actual
   layouts, with the hints of phase 1 as wanted result layouts.  A result's layout is what
   its op gives; an annotated result that differs is resharded right after its op.

Constants are *free*: every rank holds them whole, so any layout is a local slice (no
communication).  They are never hints, and they take the layout their consumer needs.

**Conflicts** (operands that disagree, or a wanted result the operands do not give) are
resolved by cost (:func:`resolve`): a few candidate decisions (the rule on all known
operands, on each operand alone, with partial operands reduced first, and from the wanted
results) are priced in bytes communicated per step by the reshards each needs
(:mod:`pir.passes.shard.comm`), plus the all-reduce a partial result will eventually need;
ties go to the candidate with the smaller results per rank, then to the rule on all
operands.  A partial operand that has other uses is reduced here rather than carried: carrying
it would leave one reduction per consumer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from pir.errors import PirError
from pir.ir.core import Operation, Value
from pir.ir.dialects.dist import DistTensorType, Mesh
from pir.ir.dialects.func import FuncOp
from pir.ir.types import TensorType
from pir.passes.shard.comm import local_bytes, reshard_bytes, resolve_shape
from pir.passes.shard.registry import infer, ops_without_rule
from pir.passes.shard.sharding import Sharding, SpmdDecision

__all__ = ["Plan", "propagate", "resolve", "check_rules", "is_free"]

_SKIP = ("func.return", "builtin.constant")


@dataclass
class Plan:
    """The outcome of propagation on one function: ``layout`` of every tensor value (what
    it has in the sharded program; free constants are absent: whole), the ``decision`` of
    every op, ``forced`` annotated results whose op gives another layout (value -> the
    op's layout; the value is resharded right after its op), and the layouts the function's
    results must be returned in (``returns``)."""

    fn: FuncOp
    mesh: Mesh
    dims: Mapping[str, int]
    layout: dict[Value, Sharding] = field(default_factory=dict)
    decision: dict[Operation, SpmdDecision] = field(default_factory=dict)
    forced: dict[Value, Sharding] = field(default_factory=dict)
    returns: list[Sharding] = field(default_factory=list)

    def have(self, v: Value) -> Sharding | None:
        """The layout ``v`` is consumed in (None: a free constant, whole on every rank)."""
        return self.layout.get(v)


def is_free(v: Value) -> bool:
    """A constant's result: whole on every rank, so any layout is a local slice."""
    return getattr(v, "op", None) is not None and v.op.name == "builtin.constant"


def _shape(v: Value, dims) -> tuple[int, ...]:
    return resolve_shape(v.type.shape, dims)


def _tensor(v: Value) -> bool:
    return isinstance(v.type, TensorType) and v.type.shape is not None


def check_rules(fn: FuncOp) -> list[Operation]:
    """The ops of ``fn`` that propagation visits; a PirError listing, all at once, every op
    without an SPMD rule (``pir shard`` stops before propagating anything)."""
    ops = [op for op in fn.entry.ops if op.name not in _SKIP]
    if any(isinstance(v.type, DistTensorType) for v in fn.entry.args) or any(
            op.name.startswith("dist.") for op in ops):
        raise PirError(f"@{fn.sym_name} is already sharded (it has !dist.tensor values): "
                       "shard the program it was made from")
    missing = ops_without_rule(ops)
    if missing:
        hint = ""
        if any(n.startswith("nn.") for n in missing):
            hint = " (decompose nn ops to prim first: pir optimize -p decompose)"
        raise PirError(f"{len(missing)} op{'s' if len(missing) > 1 else ''} without an SPMD "
                       f"rule (shard): {', '.join(missing)}{hint}")
    for op in ops:
        for v in list(op.operands) + list(op.results):
            if not _tensor(v):
                raise PirError(f"{op.describe()}: cannot shard a value of type {v.type}")
        if op.regions:
            raise PirError(f"{op.describe()}: ops with regions cannot be sharded")
    return ops


def _cost(op: Operation, d: SpmdDecision, ins: Sequence[Sharding | None],
          outs: Sequence[Sharding | None], mesh: Mesh, dims) -> int:
    """Bytes per rank that decision ``d`` makes the program communicate around ``op``:
    reshards of known operands (each value and layout once), reshards of results to their
    wanted layouts, and the eventual all-reduce of each partial result."""
    total, seen = 0, set()
    for v, have, need in zip(op.operands, ins, d.inputs):
        if have is None or have == need or (v, need) in seen:
            continue
        seen.add((v, need))
        total += reshard_bytes(_shape(v, dims), v.type.dtype, have, need, mesh)
    for r, got, want in zip(op.results, d.outputs, outs):
        shape = _shape(r, dims)
        if want is not None and want != got:
            total += reshard_bytes(shape, r.type.dtype, got, want, mesh)
        elif got.partial:
            total += local_bytes(shape, r.type.dtype, got, mesh)
    return total


def resolve(op: Operation, ins: Sequence[Sharding | None], outs: Sequence[Sharding | None],
            mesh: Mesh, dims: Mapping[str, int] | None = None) -> SpmdDecision:
    """The cheapest decision for ``op`` given its known operand layouts and wanted result
    layouts (None: unknown); see the module docstring."""
    dims = dims or {}
    # a partial operand with other uses is reduced first: carrying it would reduce it twice
    eff = [s.without_partial() if s is not None and s.partial and len(v.uses) > 1 else s
           for v, s in zip(op.operands, ins)]
    first = infer(op, eff, None, mesh)
    if not any(s is not None for s in ins):
        return infer(op, None, outs, mesh) if any(s is not None for s in outs) else first
    if (all(h is None or h == n for h, n in zip(ins, first.inputs))
            and all(w is None or w == g for w, g in zip(outs, first.outputs))
            and not any(g.partial for g in first.outputs)):
        return first  # no reshard, nothing partial: the common case
    cands = [first]
    known = [i for i, s in enumerate(eff) if s is not None]
    if len(known) > 1:
        for i in known:
            only = [s if k == i else None for k, s in enumerate(eff)]
            cands.append(infer(op, only, None, mesh))
    if any(s is not None and s.partial for s in eff):
        cands.append(infer(op, [s.without_partial() if s else s for s in eff], None, mesh))
    if any(s is not None for s in outs):
        cands.append(infer(op, None, outs, mesh))

    def key(item):
        k, d = item
        mem = sum(local_bytes(_shape(r, dims), r.type.dtype, s, mesh)
                  for r, s in zip(op.results, d.outputs))
        return (_cost(op, d, ins, outs, mesh, dims), mem, k)

    return min(enumerate(cands), key=key)[1]


def propagate(fn: FuncOp, mesh: Mesh, annotations: Mapping[Value, Sharding],
              dims: Mapping[str, int] | None = None, cache: dict | None = None) -> Plan:
    """The plan for ``fn`` on ``mesh`` from ``annotations`` (value -> layout).  ``cache``,
    a dict kept between calls on the same function and mesh (the ``--auto`` search), holds
    the decisions already made: rules are pure, and most ops see the same layouts again."""
    dims = dict(dims or {})
    ops = check_rules(fn)
    cache = {} if cache is None else cache

    def decide(op: Operation, ins, outs) -> SpmdDecision:
        key = (op, tuple(ins), tuple(outs))
        d = cache.get(key)
        if d is None:
            d = cache[key] = resolve(op, ins, outs, mesh, dims)
        return d

    fixed = dict(annotations)
    hint: dict[Value, Sharding] = dict(fixed)
    for a in fn.entry.args:  # an input not annotated is whole on every rank
        if _tensor(a) and a not in hint:
            hint[a] = Sharding.replicated(len(a.type.shape))

    def step(op: Operation) -> bool:
        ins = [None if is_free(v) and v not in fixed else hint.get(v) for v in op.operands]
        outs = [hint.get(r) for r in op.results]
        if all(s is None for s in ins) and all(s is None for s in outs):
            return False
        d = decide(op, ins, outs)
        changed = False
        for r, s in zip(op.results, d.outputs):
            if r not in hint:
                hint[r] = s
                changed = True
        for v, s in zip(op.operands, d.inputs):
            if v not in hint and not is_free(v):
                hint[v] = s.without_partial()
                changed = True
        return changed

    changed = True
    while changed:
        changed = False
        for op in ops:
            changed |= step(op)
        for op in reversed(ops):
            changed |= step(op)

    plan = Plan(fn, mesh, dims)
    for a in fn.entry.args:
        if _tensor(a):
            plan.layout[a] = hint.get(a) or Sharding.replicated(len(a.type.shape))
    for op in ops:
        ins = [plan.have(v) if not (is_free(v) and v in fixed) else fixed[v]
               for v in op.operands]
        outs = [hint.get(r) for r in op.results]
        if all(s is None for s in ins) and all(s is None for s in outs):
            outs = [Sharding.replicated(len(r.type.shape)) for r in op.results]
        d = decide(op, ins, outs)
        plan.decision[op] = d
        for r, s in zip(op.results, d.outputs):
            want = fixed.get(r)
            if want is not None and want != s:
                plan.forced[r] = s
                plan.layout[r] = want
            else:
                plan.layout[r] = s
    for v, s in fixed.items():  # annotated constants are laid out once, as annotated
        if is_free(v) and s.used_axes:
            plan.layout[v] = s
    data = {ax for a in fn.entry.args if a in plan.layout for ax in plan.layout[a].used_axes}
    plan.returns = [fixed.get(v) or _returned(plan.have(v), v, data)
                    for v in fn.return_op.operands]
    return plan


def _returned(have: Sharding | None, v: Value, data: set[str]) -> Sharding:
    """The layout an output not annotated is returned in: what it has, reduced, and whole
    along the mesh axes no input is split on (the axes used inside the program only, such
    as tensor parallelism's): outputs leave the program as inputs enter it."""
    if have is None:
        return Sharding.replicated(len(v.type.shape))
    return Sharding(tuple(tuple(a for a in axes if a in data) for axes in have.dims))
