"""Reference rule for fusion.group: the interpreter runs the group's block, op by op, so a
fused program computes exactly what the unfused one did (the fuse pass's oracle)."""

from __future__ import annotations

from pir.runtimes.reference.registry import evaluates


@evaluates("fusion.group", regions=True)
def group(interp, op, *inputs):
    return tuple(interp.run_block(op.body.block, list(inputs)))
