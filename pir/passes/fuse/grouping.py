"""Grouping: which ops of one block go together, decided on a graph of *units*.

Every op of the block but constants is a unit; fusable ops start as one-op groups, the
others (library calls, opaque ops) are units that never merge.  Merging follows CINN's
reduce-centric scheme: for each op, in program order, try to merge the groups of its
producers into its own (vertical fusion); then try to merge groups that read the same
value and have the same loop domain (horizontal fusion).

No merge may create a cycle: merging A and B is refused when a path A -> X -> B leads
through a unit X outside both (the group would have to run both before and after X).  To
find such a path cheaply, the units are kept in a topological order (``pos``), updated after
each merge: a path from A to B only visits units placed between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pir.ir.core import Block, Operation, Value
from pir.passes.fuse.classify import (
    FUSABLE, INJECTIVE, LIBRARY, REDUCTION, kind_of, reduction_signature, why_not_fusable,
)

__all__ = ["Unit", "Grouper", "Decision"]


@dataclass(eq=False)
class Unit:
    """A group of ops being formed, or one op that stays alone (``fusable`` False)."""

    ops: list[Operation]
    fusable: bool
    kinds: set[str] = field(default_factory=set)
    reductions: set[tuple] = field(default_factory=set)  # reduction_signature of each
    epilogue_of: Value | None = None  # a library result the group consumes directly
    alive: bool = True

    @property
    def kind(self) -> str:
        """The group's kind attribute: its most demanding op."""
        if REDUCTION in self.kinds:
            return "reduction"
        if INJECTIVE in self.kinds:
            return "injective"
        return "elementwise"


@dataclass
class Decision:
    """The outcome of one merge attempt, for explain."""

    producer: Operation
    consumer: Operation
    fused: bool
    reason: str
    horizontal: Value | None = None  # the shared value, for horizontal attempts


def ancestor_in(block: Block, op: Operation) -> Operation | None:
    """The op of ``block`` that is or holds ``op`` (None when ``op`` is elsewhere)."""
    while op is not None and op.parent is not block:
        op = op.parent_op
    return op


def _symbols(t) -> set[str]:
    shape = getattr(t, "shape", None) or ()
    return {d for d in shape if isinstance(d, str)}


def symbol_edges(block: Block) -> list[tuple[Operation, Operation]]:
    """Hidden dependencies through symbolic dims.  A symbol the block's arguments do not
    show (``unk__7``, the size of a flattened batch x seq) is known only once the first op
    that produces a value with it has run; a later op whose result has that dim but whose
    operands do not (a broadcast to ``tensor<unk__7xi64>``) depends on that first op, though
    no value links them.  Returns (first op, later op) pairs, in program order."""
    bound = set().union(*(_symbols(a.type) for a in block.args)) if block.args else set()
    if block.parent is not None and block.parent.parent is not None and \
            block.parent.parent.name != "func.func":
        return []  # nested bodies: their symbols are bound by the enclosing block
    first: dict[str, Operation] = {}
    edges = []
    for op in block.ops:
        for r in op.results:
            for s in sorted(_symbols(r.type) - bound):
                binder = first.setdefault(s, op)
                if binder is not op:
                    edges.append((binder, op))
    return edges


def _used_values(op: Operation):
    """Every value ``op`` reads, including the values its regions capture from outside."""
    for nested in op.walk():
        yield from nested.operands


class Grouper:
    """Forms the groups of one block; ``decisions`` records every attempt, in order."""

    def __init__(self, block: Block, max_ops: int, disable: frozenset[str]):
        self.block = block
        self.max_ops = max_ops
        self.disable = disable
        self.decisions: list[Decision] = []
        self.kind: dict[Operation, str] = {}
        self.unit: dict[Operation, Unit] = {}
        self.order: list[Unit] = []
        ops = list(block.ops)
        self.index = {op: i for i, op in enumerate(ops)}
        for op in ops:
            k = self.kind[op] = kind_of(op)
            if k == "constant":
                continue
            u = Unit([op], k in FUSABLE, {k} if k in FUSABLE else set())
            if k == REDUCTION:
                u.reductions.add(reduction_signature(op))
            self.unit[op] = u
            self.order.append(u)
        self.pos = {u: i for i, u in enumerate(self.order)}
        self.users: dict[Operation, list[Operation]] = {op: [] for op in self.unit}
        for op in ops:
            for v in _used_values(op):
                p = self._producer(v)
                if p is not None and p in self.users and op not in self.users[p]:
                    self.users[p].append(op)
        self.symbol_edges = symbol_edges(block)
        for binder, op in self.symbol_edges:
            if binder in self.users and op in self.unit and op not in self.users[binder]:
                self.users[binder].append(op)
        if "epilogue" not in disable:
            for op in ops:
                u = self.unit.get(op)
                if u is not None and u.fusable:
                    u.epilogue_of = next((v for v in op.operands
                                          if self.kind.get(self._producer(v)) == LIBRARY), None)

    def _producer(self, v: Value) -> Operation | None:
        owner = getattr(v, "op", None)
        return ancestor_in(self.block, owner) if owner is not None else None

    # -- the two phases ----------------------------------------------------------------------

    def run(self) -> list[Unit]:
        self.vertical()
        if "horizontal" not in self.disable:
            self.horizontal()
        return [u for u in self.order if u.alive and u.fusable]

    def vertical(self) -> None:
        """Merge each op's producers into its group, in program order (producers first)."""
        for op in list(self.block.ops):
            if op not in self.unit or op is self.block.terminator:
                continue
            seen: list[Operation] = []
            for v in op.operands:
                p = self._producer(v)
                if p is None or p in seen:
                    continue
                seen.append(p)
                fused, reason = self.try_merge(p, op)
                self.decisions.append(Decision(p, op, fused, reason))

    def horizontal(self) -> None:
        """Merge groups that read the same (non-constant) value and share a loop domain."""
        values = list(self.block.args) + [r for op in self.block.ops for r in op.results]
        for v in values:
            if self.kind.get(self._producer(v)) == "constant":
                continue
            readers: list[Operation] = []
            for use in v.uses:
                r = ancestor_in(self.block, use.op)
                u = self.unit.get(r)
                if u is not None and u.fusable and all(self.unit[x] is not u for x in readers):
                    readers.append(r)
            for other in readers[1:]:
                first = readers[0]
                if self.unit[first] is self.unit[other]:
                    continue
                fused, reason = self.try_merge(first, other, horizontal=True)
                self.decisions.append(Decision(first, other, fused, reason, horizontal=v))

    # -- legality ----------------------------------------------------------------------------

    def try_merge(self, producer: Operation, consumer: Operation,
                  horizontal: bool = False) -> tuple[bool, str]:
        """Merge the units of the two ops if that is legal; return whether they are now in
        one group, and why (or why not)."""
        for op in (producer, consumer):
            u = self.unit.get(op)
            if u is None or not u.fusable:
                return False, why_not_fusable(op, self.kind[op])
        a, b = self.unit[producer], self.unit[consumer]
        if a is b:
            return True, "already in one group"
        reason = self.refuse(a, b, horizontal)
        if reason is not None:
            return False, reason
        first, second = sorted((a, b), key=self.pos.__getitem__)
        between, witness = self.reachable_between(first, second)
        if witness is not None:
            return False, f"fusing would create a cycle through {_show(witness.ops[0])}"
        self.merge(first, second, between)
        if horizontal:
            return True, "same loop domain"
        return True, f"{self.kind[producer]} -> {self.kind[consumer]}"

    def refuse(self, a: Unit, b: Unit, horizontal: bool) -> str | None:
        n = len(a.ops) + len(b.ops)
        if n > self.max_ops:
            return f"the group would hold {n} ops (max-group-ops={self.max_ops})"
        if "reduce" in self.disable and (a.reductions or b.reductions):
            return "reduction fusion is disabled"
        if a.reductions and b.reductions and a.reductions != b.reductions:
            return "reductions over different shapes or axes"
        for x, y in ((a, b), (b, a)):
            if x.epilogue_of is not None and y.reductions:
                return (f"the epilogue of {_show_value(x.epilogue_of)} stays apart "
                        "from reductions")
        if horizontal and _domain(a) != _domain(b):
            return "different loop domains"
        return None

    def successors(self, u: Unit):
        for op in u.ops:
            for user in self.users[op]:
                s = self.unit.get(user)
                if s is not None and s is not u:
                    yield s

    def reachable_between(self, first: Unit, second: Unit) -> tuple[list[Unit], Unit | None]:
        """The units reachable from ``first`` that lie before ``second`` in the order, and a
        unit on a path from ``first`` to ``second`` through others (a cycle witness)."""
        limit = self.pos[second]
        seen: set[Unit] = set()
        stack = [s for s in self.successors(first) if s is not second]
        while stack:
            u = stack.pop()
            if u in seen or self.pos[u] > limit:
                continue
            seen.add(u)
            for s in self.successors(u):
                if s is second:
                    return [], u
                stack.append(s)
        return sorted(seen, key=self.pos.__getitem__), None

    def merge(self, first: Unit, second: Unit, between: list[Unit]) -> None:
        """Fold ``first`` into ``second``.  The merged unit takes ``second``'s place; the
        units reachable from ``first`` that were placed before it move just after it, which
        keeps the order topological (none of them reaches ``second``)."""
        second.ops = sorted(first.ops + second.ops, key=self._index)
        second.kinds |= first.kinds
        second.reductions |= first.reductions
        second.epilogue_of = min((v for v in (first.epilogue_of, second.epilogue_of) if v),
                                 key=lambda v: self._index(self._producer(v)), default=None)
        for op in first.ops:
            self.unit[op] = second
        first.alive = False  # its slot in the order stays, dead: no successor leads to it
        if between:
            moved = set(between)
            cut = self.pos[second] + 1
            head = [u for u in self.order[:cut] if u not in moved and u.alive]
            self.order = head + between + [u for u in self.order[cut:] if u.alive]
            self.pos = {u: i for i, u in enumerate(self.order)}

    def _index(self, op: Operation) -> int:
        return self.index[op]


def _domain(u: Unit):
    """The loop nest a group runs: its reductions' input, else its last op's result shape."""
    if u.reductions:
        return ("reduce", tuple(sorted(u.reductions, key=repr)))
    return ("map", u.ops[-1].results[0].type.shape if u.ops[-1].results else None)


def _show_value(v: Value) -> str:
    return f"%{v.name}" if v.name else "%?"


def _show(op: Operation) -> str:
    name = _show_value(op.results[0]) if op.results else "(no result)"
    return f"{name} ({op.name})"
