"""What a plan costs: the collectives it needs with their bytes, and memory per rank.

Both are estimates from the plan alone (:class:`pir.passes.shard.propagate.Plan`), so the
``--auto`` search can price many plans without rewriting the program:

- **communication per step**: the bytes each rank passes through every collective of the
  forward program (:mod:`pir.passes.shard.comm` says how each is counted), each reshard
  counted once per value and layout, as the program shares them;
- **memory per rank**: the parameters (constants) one rank holds, each sliced when all its
  uses need one layout (the rank loads only its block) and whole otherwise, plus the peak of
  the live activations (values from their op to their last use, in program order, at their
  layouts; temporaries of reshards are not counted).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pir.ir.core import Value
from pir.passes.shard.comm import COLLECTIVES, local_bytes, reshard_steps, resolve_shape
from pir.passes.shard.propagate import Plan, is_free
from pir.passes.shard.sharding import Sharding

__all__ = ["Collective", "Summary", "summarize", "parameter_layouts", "human"]


@dataclass(frozen=True)
class Collective:
    """One collective the plan inserts: its kind and mesh axis, the value it moves, the
    layouts before and after the whole reshard, and the bytes per rank."""

    kind: str
    axis: str
    value: str
    src: Sharding
    dst: Sharding
    bytes: int


@dataclass
class Summary:
    collectives: list[Collective] = field(default_factory=list)
    weight_bytes: int = 0  # per rank
    activation_bytes: int = 0  # peak per rank
    weight_bytes_total: int = 0  # one whole copy
    #: (name, global type, placements, bytes per rank) of each split constant
    parameters: list[tuple[str, str, str, int]] = field(default_factory=list)

    @property
    def comm_bytes(self) -> int:
        return sum(c.bytes for c in self.collectives)

    @property
    def memory(self) -> int:
        return self.weight_bytes + self.activation_bytes

    def count(self, kind: str) -> int:
        return sum(1 for c in self.collectives if c.kind == kind)


def _needs(plan: Plan) -> list[tuple[Value, Sharding | None, Sharding]]:
    """(value, layout it has, layout a consumer needs) for every use, in program order."""
    out = []
    for op in plan.fn.entry.ops:
        d = plan.decision.get(op)
        if d is not None:
            out.extend((v, plan.have(v), need) for v, need in zip(op.operands, d.inputs))
            out.extend((r, plan.forced[r], plan.layout[r]) for r in op.results
                       if r in plan.forced)
        elif op.name == "func.return":
            out.extend((v, plan.have(v), need) for v, need in zip(op.operands, plan.returns))
    return out


def summarize(plan: Plan) -> Summary:
    mesh, dims = plan.mesh, plan.dims
    s = Summary()
    seen = set()
    const_layouts: dict[Value, set[Sharding]] = {}
    for v, have, need in _needs(plan):
        if is_free(v) and v not in plan.layout:
            const_layouts.setdefault(v, set()).add(need)
            continue
        if have is None or have == need or (v, need) in seen:
            continue
        seen.add((v, need))
        shape = resolve_shape(v.type.shape, dims)
        for st in reshard_steps(shape, v.type.dtype, have, need, mesh):
            if st.kind in COLLECTIVES:
                s.collectives.append(Collective(st.kind, st.axis, v.name or "?", have, need,
                                                st.bytes))
    for op in plan.fn.entry.ops:
        if op.name == "builtin.constant":
            v = op.result
            if v in plan.layout:
                const_layouts[v] = {plan.layout[v]}
            shape = resolve_shape(v.type.shape, dims)
            whole = local_bytes(shape, v.type.dtype, Sharding.replicated(len(shape)), mesh)
            s.weight_bytes_total += whole
            layouts = const_layouts.get(v, set())
            if len(layouts) == 1:
                s.weight_bytes += local_bytes(shape, v.type.dtype, next(iter(layouts)), mesh)
            else:
                s.weight_bytes += whole
    s.activation_bytes = _peak(plan)
    s.parameters = parameter_layouts(plan)
    return s


def _peak(plan: Plan) -> int:
    """The most bytes of live activations per rank at any op (program order)."""
    ops = plan.fn.entry.ops
    last: dict[Value, int] = {}
    for i, op in enumerate(ops):
        for v in op.operands:
            last[v] = i
    size = {}
    for v, s in plan.layout.items():
        if is_free(v) or v not in last:
            continue
        size[v] = local_bytes(resolve_shape(v.type.shape, plan.dims), v.type.dtype, s, plan.mesh)
    live = sum(size.get(a, 0) for a in plan.fn.entry.args)
    peak = live
    ends: dict[int, int] = {}
    for v, i in last.items():
        if v in size:
            ends[i] = ends.get(i, 0) + size[v]
    for i, op in enumerate(ops):
        live += sum(size.get(r, 0) for r in op.results)
        peak = max(peak, live)
        live -= ends.get(i, 0)
    return peak


def human(n: int) -> str:
    """Bytes for people: 512 B, 4.0 KiB, 1.5 MiB."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def parameter_layouts(plan: Plan) -> list[tuple[str, str, str, int]]:
    """(name, global type, placements, bytes per rank) of each constant that is split,
    in program order (a constant used in several layouts is held whole)."""
    mesh, out = plan.mesh, []
    needs: dict[Value, set[Sharding]] = {}
    for v, _, need in _needs(plan):
        if is_free(v):
            needs.setdefault(v, set()).add(plan.layout.get(v, need))
    for op in plan.fn.entry.ops:
        if op.name != "builtin.constant":
            continue
        v = op.result
        layouts = needs.get(v, set())
        if len(layouts) != 1 or not next(iter(layouts)).used_axes:
            continue
        s = next(iter(layouts))
        shape = resolve_shape(v.type.shape, plan.dims)
        placements = "[" + ", ".join(map(str, s.placements(mesh))) + "]"
        out.append((v.name or "?", str(v.type), placements,
                    local_bytes(shape, v.type.dtype, s, mesh)))
    return out
