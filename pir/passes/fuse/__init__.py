"""The fuse pass: reduce-centric operator fusion of prim ops into ``fusion.group`` ops.

Run it after ``decompose`` (it fuses prim ops only).  See docs/fuse.md for the rules; the
grouping lives in ``grouping`` (with the op classification in ``classify``), the rewriting
of each group into a ``fusion.group`` in ``outline``, and the ``explain`` report in
``explain``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import ClassVar

from pir.errors import PirError
from pir.ir.core import Block
from pir.ir.dialects.builtin import ConstantOp, ModuleOp
from pir.ir.dialects.fusion import GroupOp
from pir.passes.base import Pass
from pir.passes.fuse.classify import FUSABLE, kind_of
from pir.passes.fuse.explain import explain_lines
from pir.passes.fuse.grouping import Grouper
from pir.passes.fuse.outline import outline_groups

__all__ = ["Fuse", "DISABLE_CHOICES"]

#: What ``disable`` may name.
DISABLE_CHOICES = ("horizontal", "reduce", "epilogue")


@dataclass(frozen=True)
class Fuse(Pass):
    """Group prim ops into fusion.group ops, reduce-centric as in CINN.

    Elementwise, broadcast and injective chains merge with their producers and consumers;
    reductions anchor groups (softmax, layer_norm and rms_norm each become one group, with
    every reduction of a group over the same axes of the same shape); groups that read the
    same value and run the same loop nest merge horizontally; no group creates a cycle.
    Matmul and convolution (prim.dot_general, prim.conv) stay outside as library calls; an
    elementwise group that consumes one directly is its epilogue (``epilogue_of``) and stays
    apart from reductions.  Constants stay outside (they become group operands).
    """

    name: ClassVar[str] = "fuse"
    max_group_ops: int = field(default=64, metadata={"doc": "the most ops one group may hold",
                                                     "min": 1})
    disable: tuple = field(default=(), metadata={
        "doc": "kinds of fusion to turn off: horizontal, reduce, epilogue"})
    explain: bool = field(default=False, metadata={
        "doc": "print, for each producer -> consumer pair, why it was or was not fused (stderr)"})

    def apply(self, module: ModuleOp) -> bool:
        unknown = [d for d in self.disable if d not in DISABLE_CHOICES]
        if unknown:
            raise PirError(f"option 'disable': unknown kind '{unknown[0]}' "
                           f"(choices: {', '.join(DISABLE_CHOICES)})")
        if self.max_group_ops < 1:
            raise PirError("option 'max-group-ops' must be at least 1")
        made = 0
        for fn in module.funcs:
            for region in fn.regions:
                for block in region.blocks:
                    made += self._fuse_block(block, fn.attributes.get("sym_name", "?"))
        return made > 0

    def _fuse_block(self, block: Block, where: str) -> int:
        made = 0
        # Blocks nested in ops that stay (control flow bodies) are fused on their own.
        for op in block.ops:
            if not isinstance(op, GroupOp):
                for region in op.regions:
                    for inner in region.blocks:
                        made += self._fuse_block(inner, where)
        _split_constant_broadcasts(block)
        grouper = Grouper(block, self.max_group_ops, frozenset(self.disable))
        units = grouper.run()
        if self.explain:
            sys.stderr.write("\n".join(explain_lines(where, grouper.decisions, len(units))) + "\n")
        return made + len(outline_groups(block, units, grouper.symbol_edges))


def _split_constant_broadcasts(block: Block) -> None:
    """Give each fusable user of a broadcast of a constant its own copy of the broadcast.

    ``cse`` shares one broadcast of ``1e-05`` or ``64.0`` among every norm of a model; shared,
    it would join the first group and be written to memory for all the others.  Recomputing
    it inside each group costs nothing (CINN does the same with cheap producers)."""
    for op in list(block.ops):
        if op.name != "prim.broadcast_in_dim" or not isinstance(
                getattr(op.operands[0], "op", None), ConstantOp):
            continue
        result = op.results[0]
        users = []
        for use in result.uses:
            if use.op.parent is block and use.op not in users and kind_of(use.op) in FUSABLE:
                users.append(use.op)
        for user in users[1:]:
            copy = type(op)(list(op.operands), [result.type], dict(op.attributes), loc=op.loc,
                            result_names=[result.name])
            block.insert(block.index(user), copy)
            for use in list(result.uses):
                if use.op is user:
                    user.set_operand(use.index, copy.results[0])
