"""Common subexpression elimination."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pir.ir.core import Block, Operation, Value
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.opdef import Commutative, Pure
from pir.passes.base import Pass, function_blocks
from pir.passes.rewriter import Rewriter, keeps_output_names

__all__ = ["CommonSubexpressionElimination"]


def _key(op: Operation, number: dict[Value, int]) -> tuple | None:
    """What makes two ops interchangeable: name, operands, attributes, result types."""
    if Pure not in op.traits or op.regions:
        return None
    operands = [number.get(v, id(v)) for v in op.operands]
    if Commutative in op.traits:
        operands.sort()  # a + b and b + a compute the same value
    try:
        attrs = tuple(sorted(op.attributes.items()))
        hash(attrs)
    except TypeError:
        return None
    return (op.name, tuple(operands), attrs, tuple(r.type for r in op.results),
            op.operand_segments, op.result_segments)


def _cse_block(block: Block, scope: dict[tuple, Operation], number: dict[Value, int]) -> int:
    removed = 0
    for op in list(block.ops):
        for region in op.regions:  # nested regions see the enclosing scope, not vice versa
            for inner in region.blocks:
                removed += _cse_block(inner, dict(scope), number)
        key = _key(op, number)
        if key is None:
            continue
        first = scope.get(key)
        if first is None:
            scope[key] = op
            for r in op.results:
                number[r] = len(number)
            continue
        if not all(keeps_output_names(old, new) for old, new in zip(op.results, first.results)):
            continue  # both are function outputs: merging would lose an output name
        Rewriter().replace_op(op, first.results)
        removed += 1
    return removed


@dataclass(frozen=True)
class CommonSubexpressionElimination(Pass):
    """Merge side-effect-free ops that compute the same thing from the same operands.

    Two ops are the same when they have one name, the same operands (in any order for
    commutative ops), equal attributes and equal result types; constants with equal values
    merge too.  The first op, and so its value's name, survives (unless the other one is a
    function output: the output's name wins, and two outputs are not merged).
    """

    name: ClassVar[str] = "cse"

    def apply(self, module: ModuleOp) -> bool:
        return bool(sum(_cse_block(block, {}, {}) for block in function_blocks(module)))
