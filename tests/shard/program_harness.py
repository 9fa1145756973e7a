"""Runs a sharded global-view function on simulated ranks, op by op, to check a plan: each
rank holds its blocks of every value (as the value's type says), prim ops run on the local
blocks (``rules_harness.local_op`` gives them local sizes), dist ops run through the
reference runtime's ``RANK_EVAL``; the function's outputs are assembled from the blocks.
This is what the per-rank program must compute, without depending on it."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from pir.ir.dialects.builtin import constant_value
from pir.ir.dialects.dist import DistTensorType, Mesh, Replicate
from pir.ir.dialects.func import FuncOp
from pir.ir.types import TensorType
from pir.runtimes.reference.interpreter import evaluate_op
from pir.runtimes.reference.rules.dist import RANK_EVAL, assemble, distribute
from rules_harness import local_op


def _as_dist(t: TensorType, mesh: Mesh) -> DistTensorType:
    if isinstance(t, DistTensorType):
        return t
    return DistTensorType(t.dtype, t.shape, mesh, tuple(Replicate() for _ in mesh.axes))


def run_on_ranks(fn: FuncOp, mesh: Mesh, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    n = mesh.num_ranks
    blocks = {}
    for a in fn.entry.args:
        t = a.type
        x = np.asarray(inputs[a.name])
        blocks[a] = distribute(x, t) if isinstance(t, DistTensorType) else [x] * n
    mailbox: dict = {}
    for op in fn.entry.ops:
        if op.name == "func.return":
            out = {}
            for v in op.operands:
                t = v.type
                out[v.name] = assemble(blocks[v], t) if isinstance(t, DistTensorType) else blocks[v][0]
            return out
        if op.name == "builtin.constant":
            blocks[op.result] = [constant_value(op)] * n
            continue
        ins = [blocks[v] for v in op.operands]
        if op.name.startswith("dist."):
            res = RANK_EVAL[op.name](op, ins, mailbox)
        else:
            local = local_op(op, [_as_dist(v.type, mesh) for v in op.operands],
                             [_as_dist(r.type, mesh) for r in op.results])
            per_rank = [evaluate_op(local, [b[r] for b in ins]) for r in range(n)]
            res = [[pr[k] for pr in per_rank] for k in range(len(op.results))]
        for r, b in zip(op.results, res):
            blocks[r] = b
    raise AssertionError("no func.return")
