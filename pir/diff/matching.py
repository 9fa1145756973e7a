"""Which op of function B each op of function A became.

The evidence, strongest first:

- *unchanged*: the same location, op name, attributes, result types and (matched) operands;
- *name*: a result of the same name (``%fc1`` in A is ``%fc1`` in B, whatever op defines it
  now; printed names are ONNX names and survive passes).  Names the printer made up
  (``%0``, ``%17``) are numbering, not names, and never match;
- *same-loc*, *loc*: the same location, op name and operands, with or without the same
  attributes;
- *structure*: the same op name, attributes and operands anywhere (a renamed value;
  constants compare by content);
- *loose*: the same location and op name alone, so that an op whose operand changed is
  reported as changed rather than as removed and added;
- *replaced*: another op at the same location, on the same operands, with the same result
  types (``nn.tanh`` became ``nn.sigmoid``, or ``prim.tanh``).

Arguments pair by name, then by position, and each matched block's terminator with its
twin.  Each sweep goes over A's ops in program order, so an op's operands are paired before
it is looked at; the first sweep uses only the strongest evidence, each later one adds the
next, so weak evidence never takes a twin that strong evidence would have found.  Operands
are compared through the value pairing, so a renamed operand is never a difference.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from pir.diff.content import Contents
from pir.diff.naming import FunctionNames
from pir.ir.core import Block, Operation, Value
from pir.ir.dialects.func import FuncOp
from pir.ir.opdef import Terminator

__all__ = ["FunctionMatch", "match_functions"]

_NUMBERED = re.compile(r"%\d+\Z")


@dataclass
class FunctionMatch:
    """The pairing of two functions' ops and values (A -> B), and how each pair was found."""

    a: FuncOp
    b: FuncOp
    names_a: FunctionNames
    names_b: FunctionNames
    a_ops: list[Operation] = field(init=False)  # program order, nested ops included
    b_ops: list[Operation] = field(init=False)
    ops: dict[Operation, Operation] = field(init=False, default_factory=dict)
    values: dict[Value, Value] = field(init=False, default_factory=dict)
    how: dict[Operation, str] = field(init=False, default_factory=dict)  # evidence per A op

    def __post_init__(self) -> None:
        self.a_ops = [op for op in self.a.walk() if op is not self.a]
        self.b_ops = [op for op in self.b.walk() if op is not self.b]
        self._b_matched: set[Operation] = set()
        self._b_values: set[Value] = set()

    def b_matched(self, op: Operation) -> bool:
        return op in self._b_matched

    # -- pairing -----------------------------------------------------------------------------

    def pair_values(self, va: Value, vb: Value) -> None:
        if va not in self.values and vb not in self._b_values:
            self.values[va] = vb
            self._b_values.add(vb)

    def pair_ops(self, a: Operation, b: Operation, how: str) -> None:
        self.ops[a] = b
        self._b_matched.add(b)
        self.how[a] = how
        if len(a.results) == len(b.results):
            for ra, rb in zip(a.results, b.results):
                self.pair_values(ra, rb)
        else:  # a different result count: only same-named results correspond
            by_name = {self.names_b(r): r for r in b.results}
            for ra in a.results:
                rb = by_name.get(self.names_a(ra))
                if rb is not None:
                    self.pair_values(ra, rb)
        for region_a, region_b in zip(a.regions, b.regions):
            for block_a, block_b in zip(region_a.blocks, region_b.blocks):
                self.pair_blocks(block_a, block_b)

    def pair_blocks(self, ba: Block, bb: Block) -> None:
        """Arguments by name, the rest by position; the terminators with each other."""
        b_by_name = {self.names_b(v): v for v in bb.args}
        for va in ba.args:
            vb = b_by_name.get(self.names_a(va))
            if vb is not None and not _NUMBERED.match(self.names_a(va)):
                self.pair_values(va, vb)
        for va, vb in zip(ba.args, bb.args):
            self.pair_values(va, vb)
        ta, tb = _terminator(ba), _terminator(bb)
        if ta is not None and tb is not None and ta.name == tb.name and ta not in self.ops:
            self.pair_ops(ta, tb, "terminator")


def _terminator(block: Block) -> Operation | None:
    op = block.terminator
    return op if op is not None and Terminator in op.traits else None


def match_functions(a: FuncOp, b: FuncOp, contents_a: Contents, contents_b: Contents,
                    names_a: FunctionNames | None = None,
                    names_b: FunctionNames | None = None) -> FunctionMatch:
    m = FunctionMatch(a, b, names_a or FunctionNames(a), names_b or FunctionNames(b))
    m.pair_blocks(a.entry, b.entry)
    finder = _Finder(m, contents_a, contents_b)
    for level in range(len(_LEVELS)):  # strong evidence everywhere before weaker evidence
        for op in m.a_ops:
            if op not in m.ops:
                finder.match(op, level)
    return m


#: The keys each sweep tries, in order.  A key holds the op's matched operands, so an op
#: whose operand has no twin has no structural twin either (only "name" and "loose").
_LEVELS = (
    ("unchanged", "name"),
    ("unchanged", "name", "same-loc", "loc", "structure"),
    ("unchanged", "name", "same-loc", "loc", "structure", "loose", "replaced"),
)


class _Finder:
    """Indexes B's ops by name and under each structural key; finds A's ops' twins there."""

    def __init__(self, m: FunctionMatch, contents_a: Contents, contents_b: Contents):
        self.m = m
        self.contents_a = contents_a
        self.by_name: dict[str, Operation] = {}
        self.index: dict[tuple, list[Operation]] = defaultdict(list)
        for op in m.b_ops:
            for r in op.results:
                self.by_name.setdefault(m.names_b(r), op)
            for key in self.keys(op, contents_b, lambda v: v).values():
                self.index[key].append(op)

    @staticmethod
    def keys(op: Operation, contents: Contents,
             operand: Callable[[Value], Value | None]) -> dict[str, tuple]:
        operands = tuple(operand(v) for v in op.operands)
        attrs = contents.attr_key(op)
        out = {}
        types = tuple(str(r.type) for r in op.results)
        if None not in operands:
            if op.loc is not None:
                out["unchanged"] = ("unchanged", op.loc, op.name, operands, attrs, types)
                out["same-loc"] = ("same-loc", op.loc, op.name, operands, attrs)
                out["loc"] = ("loc", op.loc, op.name, operands)
                out["replaced"] = ("replaced", op.loc, operands, types)
            out["structure"] = ("structure", op.name, attrs, operands)
        if op.loc is not None:
            out["loose"] = ("loose", op.loc, op.name)
        return out

    def match(self, op: Operation, level: int) -> None:
        keys = self.keys(op, self.contents_a, self.m.values.get)
        for kind in _LEVELS[level]:
            if kind == "name":
                twin = self._by_name(op)
                if twin is not None:
                    self.m.pair_ops(op, twin, "name")
                    return
                continue
            candidates = self.index.get(keys[kind]) if kind in keys else None
            while candidates:
                twin = candidates.pop(0)
                if not self.m.b_matched(twin):
                    self.m.pair_ops(op, twin, kind)
                    return

    def _by_name(self, op: Operation) -> Operation | None:
        for r in op.results:
            name = self.m.names_a(r)
            twin = self.by_name.get(name)
            if twin is not None and not _NUMBERED.match(name) and not self.m.b_matched(twin):
                return twin
        return None
