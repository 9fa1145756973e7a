"""The decompose pass: nn ops into prim ops, through the rule table in ``registry``."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import ClassVar

from pir.errors import PirError
from pir.ir.core import Operation, Value
from pir.ir.types import TensorType
from pir.ir.verifier import types_compatible
from pir.ir.dialects.builtin import ModuleOp
from pir.passes.base import Pass
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.conv_bn import FoldBatchNormIntoConv
from pir.passes.decompose.qdq import IntegerProductOfDequantized
from pir.passes.decompose.registry import DECOMPOSE, KEPT, Keep, load_rules
from pir.passes.shape_branches import ShapeBranches
from pir.passes.rewriter import RewritePattern, Rewriter, apply_patterns, is_function_output

__all__ = ["Decompose", "kept_reasons"]


class _RulePattern(RewritePattern):
    """Applies the table's rule to any nn op the pass was asked to decompose."""

    name = "decompose"

    def __init__(self, ops: frozenset[str] | None, explain: bool):
        self.ops = ops
        self.explain = explain
        self.kept: dict[str, str] = {}

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:
        if not op.name.startswith("nn.") or op.name == "nn.yield":
            return False
        short = op.name[3:]
        if self.ops is not None and short not in self.ops and op.name not in self.ops:
            return False
        rule = DECOMPOSE.get(op.name)
        if rule is None:
            self.kept.setdefault(op.name, KEPT.get(op.name, "no decomposition rule"))
            return False
        b = PrimBuilder(rewriter, op)
        start = len(op.parent.ops)
        try:
            values = rule(b, op)
        except Keep as k:
            self._undo(op, rewriter, start)
            self.kept.setdefault(op.name, str(k))
            return False
        if len(values) != len(op.results):
            raise PirError(f"the decomposition of {op.name} gave {len(values)} values for "
                           f"{len(op.results)} results")
        values = [_own_output(b, old, _as_declared(b, op, old, new))
                  for old, new in zip(op.results, values)]
        _keep_names(b, op, values)
        rewriter.replace_op(op, values)
        return True

    @staticmethod
    def _undo(op: Operation, rewriter: Rewriter, start: int) -> None:
        """Erase what a rule built before it gave up (all of it sits before ``op``)."""
        block = op.parent
        index = block.ops.index(op)
        made = block.ops[index - (len(block.ops) - start):index]
        for created in reversed(made):
            if not any(r.uses for r in created.results):
                rewriter.erase_op(created)


def _as_declared(b: PrimBuilder, op: Operation, old: Value, new: Value) -> Value:
    """The rule's value with exactly the declared result type.  A declared type may be more
    precise than what the rule computes from its operands (the importer recorded ONNX's
    inference: ``batch`` where the operand still says ``unk__3``); a reshape to the
    declared type then records that refinement.  Anything else is a bug in the rule."""
    if new.type == old.type:
        return new
    if isinstance(new.type, TensorType) and isinstance(old.type, TensorType) and \
            types_compatible(old.type, new.type) and old.type.shape is not None and \
            all(d is not None for d in old.type.shape):
        return b.op("reshape", new, result_type=old.type)
    raise PirError(f"the decomposition of {op.describe()} changed result type "
                   f"{old.type} into {new.type}")


def _own_output(b: PrimBuilder, old: Value, new: Value) -> Value:
    """A function's output names are its returned values' names, so a result that is
    returned cannot be replaced by a value the rule did not make (an operand passed
    through, named otherwise): a same-type reshape, free at run time, carries the name."""
    if getattr(new, "op", None) in b.made or not is_function_output(old):
        return new
    shape = new.type.shape if isinstance(new.type, TensorType) else None
    if shape is None or sum(d is None for d in shape) > 1:
        raise Keep(f"gives the function output %{old.name} its own name, and a reshape "
                   "cannot size its type")
    return b.op("reshape", new, result_type=new.type)


def _keep_names(b: PrimBuilder, op: Operation, values) -> None:
    """A value the rule made takes over the name of the result it replaces, so names (and a
    function's output names) survive the pass; operands a rule passes through keep theirs."""
    made = {f"{b.base}.{k}" for k in range(1, b.count + 1)}
    for old, new in zip(op.results, values):
        if new is not old and old.name and new.name in made:
            new.name = old.name


@dataclass(frozen=True)
class Decompose(Pass):
    """Rewrite composite nn ops into prim ops (matmul and convolution become prims too).

    The rules live in one table keyed by op (pir/passes/decompose/rules_*.py).  An inference
    batch_norm of a convolution by constant weights is first folded into those weights
    (conv_bn.py), as ONNX Runtime and TVM do.  Ops declared kept (control flow, random numbers, data-dependent shapes ...; see docs/passes.md) stay,
    and so does an op whose rule needs a dim nobody knows; `explain` lists them.  Rules
    need ranks: an nn.if that tests a fact of the shapes first takes the rest of its block
    into its branches, where the fact gives them (the shape-branches pass; `branches=false`
    leaves such an if as it is).
    """

    name: ClassVar[str] = "decompose"
    ops: tuple[str, ...] = field(default=(), metadata={"doc": "decompose only these ops (default: all)"})
    explain: bool = field(default=False, metadata={"doc": "print the ops that stay, and why"})
    branches: bool = field(default=True, metadata={
        "doc": "first version what follows an nn.if on a fact of the shapes (shape-branches)"})

    def _decomposes(self, short: str) -> bool:
        return not self.ops or short in self.ops or f"nn.{short}" in self.ops

    def __post_init__(self) -> None:
        from pir.ir.core import OPS
        from pir.ir.dialects import load_dialects

        load_dialects()
        unknown = [o for o in self.ops if o not in OPS and f"nn.{o}" not in OPS]
        if unknown:
            raise PirError(f"decompose: ops= names no nn op: {', '.join(unknown)} "
                           "(docs/nn.md lists them)")

    def apply(self, module: ModuleOp) -> bool:
        load_rules()
        versioned = bool(self.branches and not self.ops and ShapeBranches().apply(module))
        pattern = _RulePattern(frozenset(self.ops) if self.ops else None, self.explain)
        patterns = [pattern]
        if self._decomposes("matmul") and self._decomposes("dequantize_linear"):
            patterns.insert(0, IntegerProductOfDequantized())  # (before the DQs decompose)
        if self._decomposes("conv") and self._decomposes("batch_norm"):
            # first: the conv is decomposed as soon as the driver reaches it
            patterns.insert(0, FoldBatchNormIntoConv())
        fired = apply_patterns(module, patterns)
        if self.explain:
            for name, why in sorted(pattern.kept.items()):
                print(f"decompose: {name} stays: {why}", file=sys.stderr)
        return bool(fired) or versioned


def kept_reasons(module: ModuleOp) -> dict[str, str]:
    """nn op name -> why decompose keeps it (the first reason its rule gives), from a run on
    ``module``, which is rewritten: pass a copy."""
    load_rules()
    pattern = _RulePattern(None, explain=False)
    apply_patterns(module, [pattern])
    return dict(pattern.kept)
