"""Dead code elimination."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pir.ir.attributes import ResourceRef
from pir.ir.core import Block
from pir.ir.dialects.builtin import ConstantOp, ModuleOp
from pir.passes.base import Pass, function_blocks
from pir.passes.rewriter import is_trivially_dead

__all__ = ["DeadCodeElimination", "erase_dead_ops", "drop_unused_resources"]


def erase_dead_ops(block: Block) -> int:
    """Erase side-effect-free ops whose results are unused, nested regions first; walking
    backwards removes a whole dead chain in one sweep.  Returns how many were erased."""
    erased = 0
    for op in reversed(list(block.ops)):
        for region in op.regions:
            for inner in region.blocks:
                erased += erase_dead_ops(inner)
        if is_trivially_dead(op):
            op.erase()
            erased += 1
    return erased


def drop_unused_resources(module: ModuleOp) -> int:
    used = {op.value.key for fn in module.funcs for op in fn.walk()
            if isinstance(op, ConstantOp) and isinstance(op.value, ResourceRef)}
    unused = [k for k in module.resources if k not in used]
    for key in unused:
        del module.resources[key]
    return len(unused)


@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Remove ops without side effects whose results are unused, and unused resources.

    An op is removable when it has the Pure trait (random ops, for instance, do not).
    """

    name: ClassVar[str] = "dce"

    def apply(self, module: ModuleOp) -> bool:
        erased = sum(erase_dead_ops(block) for block in function_blocks(module))
        return bool(erased + drop_unused_resources(module))
