"""The ``fusion`` dialect: groups of prim ops that a code generator compiles into one kernel.

``fusion.group`` holds one single-block region.  Its operands are the values the region
uses from outside, passed in as the block's arguments (the group is isolated from above, so
everything a kernel reads is listed on its line); its results are what the region's
``fusion.yield`` passes out.  The ``fuse`` pass builds groups; the reference runtime runs a
group by running its block, and ``codegen`` turns each group into a kernel::

    %y = fusion.group(%x) ({
    ^bb0(%x_1: tensor<2x8xf32>):
      %m = prim.reduce_max(%x_1) {axes = [1], keepdims = true} : ...
      ...
      fusion.yield(%y_1) : (tensor<2x8xf32>) -> ()
    }) {kind = "reduction"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import STR
from pir.ir.core import Operation, Value
from pir.ir.opdef import IsolatedFromAbove, Pure, Terminator, attr, operand, region, result

__all__ = ["RegionGroup", "GroupOp", "YieldOp", "GROUP_KINDS"]

#: What a group holds, from the most to the least constrained schedule: only elementwise
#: ops and broadcasts; also data movement (reshape, transpose, slice, ...); reductions; a
#: matmul, a convolution or a depthwise convolution by constant weights with its epilogue
#: (codegen forms these, see pir.codegen.tvm.gemm, conv and depthwise).
GROUP_KINDS = ("elementwise", "injective", "reduction", "matmul", "conv", "dwconv")


class RegionGroup(Operation):
    """What fusion.group and the kernels made from it share: operands passed in as the
    arguments of one isolated block, results what its ``fusion.yield`` passes out."""

    traits = frozenset({Pure, IsolatedFromAbove})
    inputs = operand(variadic=True)
    body = region()
    outputs = result(variadic=True)

    def yielded(self) -> list[Value]:
        if len(self.body.blocks) != 1:
            raise PirError("the body must have exactly one block")
        term = self.body.block.terminator
        if not isinstance(term, YieldOp):
            raise PirError("the body must end with fusion.yield")
        return list(term.operands)

    def infer(self):
        return [v.type for v in self.yielded()]

    def check_body(self) -> None:
        """The block's arguments match the operands, and the body is one block that yields."""
        args = self.body.block.args
        if len(args) != len(self.inputs):
            raise PirError(f"the body takes {len(args)} arguments for {len(self.inputs)} inputs")
        for i, (a, v) in enumerate(zip(args, self.inputs)):
            if a.type != v.type:
                raise PirError(f"body argument {i} is {a.type}, but input {i} is {v.type}")
        self.yielded()


class GroupOp(RegionGroup):
    """A fusion group: prim ops compiled as one kernel; its results are what it yields.

    ``kind`` is ``elementwise``, ``injective`` or ``reduction`` (the most demanding op
    inside). ``epilogue_of`` names the matmul or convolution result that the group consumes
    as an epilogue (bias add, activation): a backend may fuse it into that library call.
    The group is Pure: the fuse pass never puts an op with side effects (random draws) in one,
    and the verifier checks it.
    """

    name = "fusion.group"
    kind = attr(STR)
    epilogue_of = attr(STR, None)

    def verify_(self) -> None:
        if self.kind not in GROUP_KINDS:
            raise PirError(f"kind must be one of {', '.join(GROUP_KINDS)}, got '{self.kind}'")
        self.check_body()
        for op in self.body.block.ops:
            if Pure not in op.traits and Terminator not in op.traits:
                raise PirError(f"{op.name} has side effects and cannot be in a fusion group")


class YieldOp(Operation):
    """Ends the body of a fusion.group, passing its results out."""

    name = "fusion.yield"
    traits = frozenset({Terminator})
    values = operand(variadic=True)

    def infer(self):
        return []
