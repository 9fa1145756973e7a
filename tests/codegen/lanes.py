"""How TVM's own lowering vectorises a kernel: the stores of each buffer after its passes up
to VectorizeLoop (LoopPartition included), counted as vector or one-lane stores."""

from __future__ import annotations

import re

import tvm
from tvm import s_tir, tirx


def _lowered(mod: tvm.IRModule) -> tvm.IRModule:
    # the front of tvm.s_tir.pipeline's default pipeline, through VectorizeLoop
    passes = [s_tir.transform.CanonicalizeLoop(), s_tir.transform.LowerInitBlock(),
              s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
              s_tir.transform.ConvertBlocksToOpaque(), s_tir.transform.CompactBufferAllocation(),
              s_tir.transform.LowerMatchBuffer(), s_tir.transform.StmtSimplify(),
              s_tir.transform.LowerOpaqueBlock(), tirx.transform.FlattenBuffer(),
              tirx.transform.NarrowDataType(32), s_tir.transform.LoopPartition(),
              tirx.transform.VectorizeLoop(True)]
    with tvm.transform.PassContext(config={"tirx.disable_assert": True}):
        return tvm.transform.Sequential(passes)(mod)


def store_lanes(mod, buffer: str) -> tuple[int, int]:
    """(vector stores, one-lane stores) into the buffers whose name starts with ``buffer``
    in the scheduled ``mod`` (an IRModule or its TVMScript source), once lowered: a vector
    store prints as a slice, ``y[i:i + 16] = ...``."""
    if isinstance(mod, str):
        mod = tvm.script.from_source(mod)
    vector = scalar = 0
    for line in _lowered(mod).script().splitlines():
        m = re.match(rf"\s*({re.escape(buffer)}\w*)\[(.*?)\] = ", line)
        if m:
            vector, scalar = (vector + 1, scalar) if ":" in m.group(2) else (vector, scalar + 1)
    return vector, scalar
