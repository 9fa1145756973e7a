"""The SPMD rule table: one rule per prim op, from operand shardings to a decision.

A rule is a small pure function ``rule(op, ins, outs, mesh) -> SpmdDecision``: ``ins`` and
``outs`` hold the known sharding of each operand and result (``None`` where unknown), and the
decision says the sharding each operand must have and each result then has.  Forward
propagation passes only ``ins`` (:func:`forward`), backward only ``outs``
(:func:`backward`); where both are given, operands win conflicts.  Most rules are einsum
notations (:mod:`pir.passes.shard.einsum`) registered with :func:`spmd_notation`::

    @spmd_notation("prim.transpose")
    def transpose(op, L):
        x = L.fresh(op.x)
        return Notation([x], ["".join(x[p] for p in op.permutation)], carry=COPY)

Ops with no sensible rule are declared with :func:`replicate` and a reason: their rule
replicates every operand and result, so the table still covers them, and docs/shard.md lists
them.  Rule modules live next to this file (``rules_*.py``), one per op family, and are
imported by :func:`load_rules`.
"""

from __future__ import annotations

from typing import Callable, Sequence

from pir.errors import PirError
from pir.ir.core import Operation
from pir.ir.dialects.dist import Mesh
from pir.ir.types import TensorType
from pir.passes.shard.sharding import Sharding, SpmdDecision
from pir.plugins import import_submodules

__all__ = ["SPMD", "REPLICATED", "Rule", "spmd_rule", "replicate", "rule_for", "infer",
           "forward", "backward", "replicate_all", "ops_without_rule", "load_rules"]

Known = Sequence[Sharding | None]
Rule = Callable[[Operation, Known, Known, Mesh], SpmdDecision]
SPMD: dict[str, Rule] = {}
#: Ops whose rule is the declared fallback (every operand and result replicated), with why.
REPLICATED: dict[str, str] = {}


def spmd_rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for n in names:
            if n in SPMD or n in REPLICATED:
                raise ValueError(f"two SPMD rules for {n}")
            SPMD[n] = fn
        return fn

    return register


def replicate(name: str, why: str) -> None:
    """Declare that ``name`` runs replicated: no rule can shard it (``why`` says so)."""
    if name in SPMD or name in REPLICATED:
        raise ValueError(f"two SPMD rules for {name}")
    REPLICATED[name] = why


def _rank(v, what: str) -> int:
    t = v.type
    if not isinstance(t, TensorType) or t.shape is None:
        raise PirError(f"{what} must be a ranked tensor to be sharded, got {t}")
    return len(t.shape)


def replicate_all(op: Operation, ins: Known, outs: Known, mesh: Mesh) -> SpmdDecision:
    """The fallback: every operand whole on every rank, every result too."""
    return SpmdDecision(
        tuple(Sharding.replicated(_rank(v, f"operand {i}")) for i, v in enumerate(op.operands)),
        tuple(Sharding.replicated(_rank(r, f"result {i}")) for i, r in enumerate(op.results)))


def rule_for(name: str) -> Rule:
    """The rule of op ``name``; a PirError naming the op and the transformation if none."""
    load_rules()
    rule = SPMD.get(name)
    if rule is not None:
        return rule
    if name in REPLICATED:
        return replicate_all
    raise PirError(f"{name} has no SPMD rule (shard): add one in pir/passes/shard, or "
                   "declare it replicated")


def infer(op: Operation, ins: Known | None = None, outs: Known | None = None,
          mesh: Mesh | None = None) -> SpmdDecision:
    """Run ``op``'s rule on the known shardings (None: unknown) and check the decision has
    one sharding of the right rank per operand and result."""
    if mesh is None:
        raise PirError("an SPMD rule needs the mesh")
    ins = list(ins) if ins is not None else [None] * len(op.operands)
    outs = list(outs) if outs is not None else [None] * len(op.results)
    if len(ins) != len(op.operands) or len(outs) != len(op.results):
        raise PirError(f"{op.describe()}: {len(ins)} operand and {len(outs)} result shardings "
                       f"for {len(op.operands)} operands and {len(op.results)} results")
    for what, values, known in (("operand", op.operands, ins), ("result", op.results, outs)):
        for i, (v, s) in enumerate(zip(values, known)):
            if s is None:
                continue
            if s.rank != _rank(v, f"{what} {i}"):
                raise PirError(f"{op.describe()}: {what} {i} has rank {_rank(v, what)}, its "
                               f"sharding {s} rank {s.rank}")
            unknown = sorted(s.used_axes - set(mesh.names))
            if unknown:
                raise PirError(f"{op.describe()}: the sharding {s} of {what} {i} uses "
                               f"{', '.join(unknown)}, not axes of {mesh}")
    try:
        decision = rule_for(op.name)(op, ins, outs, mesh)
    except PirError as e:
        if e.message.startswith(op.name):
            raise
        raise PirError(f"{op.describe()}: {e.message}") from None
    for what, values, got in (("operand", op.operands, decision.inputs),
                              ("result", op.results, decision.outputs)):
        if len(got) != len(values) or any(s.rank != _rank(v, what) for v, s in zip(values, got)):
            raise PirError(f"{op.describe()}: the SPMD rule gave {what} shardings "
                           f"{', '.join(map(str, got))} that do not fit the op")
    return decision


def forward(op: Operation, ins: Known, mesh: Mesh) -> SpmdDecision:
    """The decision from the operands' shardings alone."""
    return infer(op, ins, None, mesh)


def backward(op: Operation, outs: Known, mesh: Mesh) -> SpmdDecision:
    """The decision from the results' wanted shardings alone (their partials are ignored:
    a rule decides where partial values arise)."""
    return infer(op, None, outs, mesh)


def ops_without_rule(ops: Sequence[Operation]) -> list[str]:
    """The names of the ops among ``ops`` that have no rule, sorted, each once: what
    ``pir shard`` lists, all at once, before it propagates anything."""
    load_rules()
    return sorted({op.name for op in ops if op.name not in SPMD and op.name not in REPLICATED})


def load_rules() -> None:
    """Import every ``rules_*`` module next to this file (once)."""
    import_submodules("pir.passes.shard", "rules_")
