"""Training steps on ranks: ``pir run S.pir --func main_train --steps N --ranks R`` (R
threads in one process) or ``mpiexec -n R pir run S.pir ... --steps N --dist mpi``.

The loop of :mod:`pir.runtimes.train_loop`, run by every rank on its blocks: each rank
starts from its blocks of the whole inputs (``feeds`` completed by ``@<step>_init``, which
every rank runs itself), and after each step feeds its own block of ``new_X`` back as its
block of ``X``.  So the parameters never leave the ranks between steps: a data-parallel
step's only communication is the program's own (its gradient all-reduces).  Where the
step returns ``new_X`` in another layout than ``X`` takes, the rank takes its block of
the new layout locally when ``new_X`` is whole on every rank, and otherwise assembles it
from every rank's block first.

The loss and the metrics (one-element outputs) are assembled after every step, by every
rank (they are tiny), so that all ranks see the same loss and stop together on a bad one;
rank 0 alone reports them.  At the end every rank assembles the final values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from pir.ir.dialects.dist import DistTensorType
from pir.ir.dialects.func import FuncOp
from pir.runtimes.dist.comm import block_of
from pir.runtimes.dist.interpreter import RankInterpreter
from pir.runtimes.dist.runner import RankedRun, _local_feeds
from pir.runtimes.reference.interpreter import output_names
from pir.runtimes.reference.rules.dist import assemble
from pir.runtimes.train_loop import check_loss, start

__all__ = ["RankTraining", "train_rank", "train_ranks"]

OnStep = Callable[[int, dict[str, float]], None]


@dataclass
class RankTraining:
    """What one rank ends a training run with: the whole final values of the inputs fed
    back (by input name), and its own blocks of them."""

    final: dict[str, np.ndarray]
    local: dict[str, np.ndarray]


def _whole_everywhere(t) -> bool:
    """Every rank holds the whole value: a plain type, or only ``R`` placements."""
    if not isinstance(t, DistTensorType):
        return True
    return not t.partial_axes and all(not t.shard_axes(d) for d in range(len(t.shape)))


def _one_element(block: np.ndarray, t) -> bool:
    """The whole value has one element (a metric): a one-element block of a dim no rank
    splits (the same answer on every rank, whose blocks have one shape)."""
    split = isinstance(t, DistTensorType) and any(t.shard_axes(d) for d in range(len(t.shape)))
    return np.size(block) == 1 and not split


def _whole(block: np.ndarray, t, interp: RankInterpreter) -> np.ndarray:
    """The whole value of which ``block`` is this rank's block laid out as ``t`` (a
    collective over the whole mesh, unless every rank holds it whole)."""
    if _whole_everywhere(t):
        return block
    return assemble(interp.comm.gather_all(np.require(block, requirements="C")), t)


def _carry(block: np.ndarray, src, dst, interp: RankInterpreter) -> np.ndarray:
    """This rank's block, laid out as ``dst``, of the value whose block laid out as ``src``
    is ``block``: ``block`` itself when the layouts agree."""
    if src == dst:
        return block
    whole = _whole(block, src, interp)
    return np.require(block_of(whole, dst, interp.comm.coords), requirements="C")


def train_rank(module, fn: FuncOp, interp: RankInterpreter, feeds: Mapping[str, np.ndarray],
               steps: int, on_step: OnStep | None = None) -> RankTraining:
    """Run ``steps`` steps of ``fn`` as rank ``interp.comm.rank`` (every other rank runs this
    too, with its own interpreter); ``feeds`` are whole.  ``on_step`` is called on rank 0
    only, as :func:`pir.runtimes.train_loop.train` calls it."""
    back, outs, state = start(module, fn, feeds, interp)
    arg_types = {a.name: a.type for a in fn.args}
    out_types = dict(zip(output_names(fn), fn.function_type.outputs))
    local = _local_feeds(fn, state, interp.comm.coords)
    for i in range(1, steps + 1):
        result = interp.run(fn, local)

        def first(o: str) -> float:
            return float(np.asarray(_whole(result[o], out_types[o], interp)).reshape(-1)[0])

        values = {o: first(o) for o in outs
                  if o not in back and _one_element(result[o], out_types[o])}
        # every rank sees the same loss, so a bad one stops all ranks at the same step
        check_loss(i, values[outs[0]] if outs[0] in values else first(outs[0]))
        for o, name in back.items():
            local[name] = _carry(result[o], out_types[o], arg_types[name], interp)
        if on_step is not None and interp.comm.rank == 0:
            on_step(i, values)
    mine = {name: local[name] for name in back.values()}
    final = {name: _whole(block, arg_types[name], interp) for name, block in mine.items()}
    return RankTraining(final, mine)


def train_ranks(module, feeds: Mapping[str, np.ndarray], steps: int, ranks: int | None = None,
                func: str = "main_train", program_path: str | None = None,
                on_step: OnStep | None = None) -> list[RankTraining]:
    """Train the sharded step ``func`` of ``module`` on the ranks of its mesh in this
    process (``ranks``, when given, must be their number): what every rank ends with, by
    rank (``[0].final`` holds the trained values)."""
    run = RankedRun(module, ranks, func, program_path)
    return run.each(lambda interp: train_rank(module, run.fn, interp, feeds, steps, on_step))
