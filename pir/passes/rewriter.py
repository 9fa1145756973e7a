"""The pattern rewriter: patterns, the rewriter they mutate the IR through, and the greedy
worklist driver (MLIR's ``applyPatternsGreedily``).

Every mutation a pattern makes goes through :class:`Rewriter`, which tells the driver what
changed, so the driver revisits exactly the ops a rewrite may have made matchable: new ops,
users of replaced values, and producers of operands that lost a use.  The driver stops at a
fixed point, or fails with a clear error when a rewrite budget is exhausted (two patterns
undoing each other, say).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar, Iterable, Sequence

from pir.errors import PirError
from pir.ir.core import Block, BlockArgument, Operation, Value
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import FuncOp
from pir.ir.opdef import Pure, Terminator

__all__ = ["RewritePattern", "Rewriter", "apply_patterns", "is_trivially_dead",
           "is_function_output", "keeps_output_names"]


class RewritePattern:
    """A rewrite rooted at ops named ``root`` (any op when None).

    ``match_and_rewrite`` returns True when it changed the IR, which it may only do through
    the rewriter.  ``name`` is kebab-case; ``canonicalize{disable=NAME}`` switches it off.
    """

    name: ClassVar[str] = ""
    root: ClassVar[str | None] = None

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:
        raise NotImplementedError


def is_trivially_dead(op: Operation) -> bool:
    for r in op.results:  # most ops have uses: the cheapest test first
        if r.uses:
            return False
    return Pure in op.traits and Terminator not in op.traits


def is_function_output(v: Value) -> bool:
    """Whether ``v`` is returned by its function: its name is then an output name, which
    `pir run` writes and `--check` compares, so passes must not change it."""
    return any(u.op.name == "func.return" for u in v.uses)


def keeps_output_names(old: Value, new: Value) -> bool:
    """Whether ``new`` can take the place of ``old`` without renaming a function output: not
    when ``old`` is returned and ``new`` is a function input or another output (neither can
    take ``old``'s name)."""
    if not is_function_output(old) or old.name is None or new.name == old.name:
        return True
    return not (isinstance(new, BlockArgument) or is_function_output(new))


class Rewriter:
    """The only way patterns change the IR.  ``notify`` is the driver's hook."""

    def __init__(self, driver: _Driver | None = None):
        self.driver = driver

    def _added(self, op: Operation) -> None:
        if self.driver is not None:
            self.driver.push(op)

    def _touched_value(self, v: Value) -> None:
        if self.driver is None:
            return
        owner = getattr(v, "op", None)
        if owner is not None:
            self.driver.push(owner)
        for use in v.uses:
            self.driver.push(use.op)

    def create(self, cls: type[Operation], *operands: Any, before: Operation,
               result_types=None, name: str | None = None, loc: str | None = None,
               **attrs: Any) -> Operation:
        """Build ``cls`` and insert it before ``before`` (with its location by default)."""
        op = cls.build(*operands, result_types=result_types, loc=loc or before.loc,
                       result_names=[name] if name else None, **attrs)
        return self.insert(op, before)

    def value(self, cls: type[Operation], *operands: Any, before: Operation, **kwargs) -> Value:
        return self.create(cls, *operands, before=before, **kwargs).results[0]

    def insert(self, op: Operation, before: Operation) -> Operation:
        block = before.parent
        if op.loc is None:
            op.loc = before.loc
        block.insert(block.index(before), op)
        self._added(op)
        return op

    def replace_all_uses(self, old: Value, new: Value) -> None:
        users = [u.op for u in old.uses]
        # The value that takes over keeps the name diffs track; an output's name wins over
        # the name of an intermediate value (see keeps_output_names for the other cases).
        rename = new.name is None or (keeps_output_names(old, new) and is_function_output(old)
                                      and old.name is not None)
        old.replace_all_uses_with(new)
        if rename:
            new.name = old.name
        if self.driver is not None:
            for u in users:
                self.driver.push(u)
            self._touched_value(new)

    def replace_op(self, op: Operation, new_values: Sequence[Value]) -> None:
        """Replace every result of ``op`` by ``new_values`` and erase ``op``."""
        if len(new_values) != len(op.results):
            raise PirError(f"replacing {op.name}: {len(new_values)} values for "
                           f"{len(op.results)} results")
        for old, new in zip(op.results, new_values):
            if old is not new:
                self.replace_all_uses(old, new)
        self.erase_op(op)

    def erase_op(self, op: Operation) -> None:
        operands = list(op.operands)
        op.erase()
        if self.driver is not None:
            self.driver.erased(op)
            for v in operands:  # a producer that lost its last use may now be dead
                owner = getattr(v, "op", None)
                if owner is not None:
                    self.driver.push(owner)

    def set_operand(self, op: Operation, index: int, value: Value) -> None:
        old = op.operands[index]
        op.set_operand(index, value)
        if self.driver is not None:
            self.driver.push(op)
            owner = getattr(old, "op", None)
            if owner is not None:
                self.driver.push(owner)


class _Driver:
    def __init__(self, patterns: Sequence[RewritePattern], max_rewrites: int):
        self.by_root: dict[str | None, list[RewritePattern]] = {}
        for p in patterns:
            self.by_root.setdefault(p.root, []).append(p)
        self.generic = self.by_root.get(None, [])
        self.worklist: list[Operation] = []
        self.queued: set[Operation] = set()
        self.max_rewrites = max_rewrites
        self.rewrites = 0
        self.recent: list[str] = []
        self.applied: Counter = Counter()
        self.candidates: dict[str, list[RewritePattern]] = {}

    def patterns_for(self, name: str) -> list[RewritePattern]:
        """The patterns rooted at ``name`` followed by those for any op (built once)."""
        found = self.candidates.get(name)
        if found is None:
            found = self.candidates[name] = self.by_root.get(name, []) + self.generic
        return found

    def push(self, op: Operation) -> None:
        if op not in self.queued and not isinstance(op, (FuncOp, ModuleOp)):
            self.queued.add(op)
            self.worklist.append(op)

    def erased(self, op: Operation) -> None:
        self.queued.discard(op)
        for inner in op.walk():
            self.queued.discard(inner)

    def run(self, roots: Iterable[Block]) -> int:
        ops = [op for block in roots for top in block.ops for op in top.walk()]
        for op in reversed(ops):  # popped from the end: program order
            self.push(op)
        rewriter = Rewriter(self)
        while self.worklist:
            op = self.worklist.pop()
            if op not in self.queued:
                continue
            self.queued.discard(op)
            if op.parent is None:
                continue
            if is_trivially_dead(op):
                rewriter.erase_op(op)  # cannot make the IR invalid: callers may skip verifying
                continue
            for pattern in self.patterns_for(op.name):
                if pattern.match_and_rewrite(op, rewriter):
                    self.rewrites += 1
                    self.applied[pattern.name] += 1
                    self.recent = (self.recent + [pattern.name])[-5:]
                    if self.rewrites > self.max_rewrites:
                        raise PirError(
                            f"pattern rewriting did not converge after {self.max_rewrites} "
                            f"rewrites; the last patterns applied: {', '.join(self.recent)} "
                            "(two patterns may be undoing each other)")
                    break
        return self.rewrites


def apply_patterns(module: ModuleOp, patterns: Sequence[RewritePattern],
                   max_rewrites: int | None = None) -> Counter:
    """Apply ``patterns`` to every function of ``module`` until none matches; return how
    often each pattern fired."""
    blocks = [fn.entry for fn in module.funcs if isinstance(fn, FuncOp)]
    if max_rewrites is None:
        n = sum(len(b.ops) for b in blocks)
        max_rewrites = 10 * n + 1000
    driver = _Driver(patterns, max_rewrites)
    driver.run(blocks)
    return driver.applied
