"""Running a sharded program on ranks: N threads in one process (``pir run --ranks N``), or
this process as one rank of an MPI job (``mpiexec -n N pir run --dist mpi``).

Both take whole inputs (every rank is given, or reads, the same feeds and keeps its block of
each, as the function's signature lays it out) and give whole outputs: each output's blocks
are assembled as its type says (partial values reduced, shards put in place; a plain output
is rank 0's).  A global-view program (``pir shard`` without localizing) is localized first.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Mapping, TypeVar

import numpy as np

from pir.errors import PirError
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.dist import DistTensorType, Mesh
from pir.ir.dialects.func import FuncOp
from pir.passes.shard.localize import WEIGHTS_ATTR, is_per_rank, localize, program_mesh
from pir.runtimes.dist.comm import Communicator, ThreadBoard, ThreadComm, block_of
from pir.runtimes.dist.interpreter import RankInterpreter
from pir.runtimes.reference.interpreter import output_names
from pir.runtimes.reference.rules.dist import assemble

__all__ = ["prepare", "run_ranks", "run_rank", "RankedRun"]

T = TypeVar("T")


def prepare(module: ModuleOp, ranks: int | None = None, func: str = "main") -> tuple[FuncOp, Mesh]:
    """Localize ``module`` if it is still the global view; check that its mesh has ``ranks``
    ranks; return the function to run and the mesh."""
    mesh = program_mesh(module)
    if mesh is None:
        raise PirError("the program is not sharded: it has no !dist.tensor values and no "
                       "dist.per_rank mesh (shard it with `pir shard`)")
    if ranks is not None and mesh.num_ranks != ranks:
        raise PirError(f"the program's mesh {mesh} has {mesh.num_ranks} ranks, but it was "
                       f"asked to run on {ranks}")
    if not is_per_rank(module):
        localize(module, mesh)
    fn = module.lookup(func)
    if not isinstance(fn, FuncOp):
        raise PirError(f"the program has no function @{func}")
    return fn, mesh


def weights_dir(module: ModuleOp, program_path: str | None) -> str | None:
    """The program's ``dist.weights`` directory, relative to the program's file."""
    ref = module.attributes.get(WEIGHTS_ATTR)
    if ref is None:
        return None
    base = os.path.dirname(os.path.abspath(program_path)) if program_path and program_path != "-" \
        else os.getcwd()
    return os.path.join(base, str(ref))


def _local_feeds(fn: FuncOp, feeds: Mapping[str, np.ndarray], coords) -> dict[str, np.ndarray]:
    out = {}
    for a in fn.args:
        if a.name in feeds:
            out[a.name] = np.require(block_of(feeds[a.name], a.type, coords), requirements="C")
    for k in feeds:  # unknown names: the interpreter says which
        out.setdefault(k, feeds[k])
    return out


def _assemble_outputs(fn: FuncOp, per_rank: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    names = output_names(fn)
    out = {}
    for name, t in zip(names, fn.function_type.outputs):
        blocks = [r[name] for r in per_rank]
        out[name] = assemble(blocks, t) if isinstance(t, DistTensorType) else blocks[0]
    return out


class RankedRun:
    """A program prepared to run on all ranks of its mesh in this process, one thread per
    rank; :meth:`run` can be called again (weights are sliced once)."""

    def __init__(self, module: ModuleOp, ranks: int | None = None, func: str = "main",
                 program_path: str | None = None, timeout: float | None = 3600.0):
        self.fn, self.mesh = prepare(module, ranks, func)
        self.timeout = timeout
        self.board = ThreadBoard(self.mesh.num_ranks, timeout)
        wdir = weights_dir(module, program_path)
        self.interps = [RankInterpreter(module, ThreadComm(self.mesh, r, self.board), wdir)
                        for r in range(self.mesh.num_ranks)]
        for interp in self.interps:
            interp.load(self.fn)

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The whole outputs of one run on whole ``feeds``."""
        results = self.each(lambda interp: interp.run(
            self.fn, _local_feeds(self.fn, feeds, interp.comm.coords)))
        return _assemble_outputs(self.fn, results)

    def each(self, task: Callable[[RankInterpreter], T]) -> list[T]:
        """``task(interp)`` on every rank at once, one thread each (its collectives meet
        the other ranks'); the results by rank.  A rank that fails wakes the others, and
        its error is raised, naming the rank."""
        n = self.mesh.num_ranks
        results: list = [None] * n
        errors: list = [None] * n
        self.board.barrier.reset()

        def work(r: int) -> None:
            try:
                results[r] = task(self.interps[r])
            except threading.BrokenBarrierError as e:
                errors[r] = e
            except BaseException as e:  # noqa: BLE001 - reported below, by rank
                errors[r] = e
                self.board.abort()

        threads = [threading.Thread(target=work, args=(r,), name=f"pir-rank{r}", daemon=True)
                   for r in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failed = [(r, e) for r, e in enumerate(errors)
                  if e is not None and not isinstance(e, threading.BrokenBarrierError)]
        if failed:
            r, e = failed[0]
            if isinstance(e, PirError):
                raise PirError(f"rank {r}: {e.message}") from None
            raise e
        if any(e is not None for e in errors):
            raise PirError(f"the ranks did not meet at a collective within {self.timeout} s")
        return results

    def rank_values(self, rank: int) -> dict:
        return self.interps[rank].values


def run_ranks(module: ModuleOp, feeds: Mapping[str, np.ndarray], ranks: int | None = None,
              func: str = "main", program_path: str | None = None) -> dict[str, np.ndarray]:
    """Run ``module`` on the ranks of its mesh in this process (``ranks``, when given, must
    be their number) and return the whole outputs."""
    return RankedRun(module, ranks, func, program_path).run(feeds)


def run_rank(module: ModuleOp, feeds: Mapping[str, np.ndarray], comm: Communicator,
             func: str = "main", program_path: str | None = None,
             repeat: int = 0) -> tuple[dict[str, np.ndarray], list[float]]:
    """Run ``module`` as rank ``comm.rank`` (the other ranks run it in their own processes)
    and return the whole outputs (every rank assembles them) and, with ``repeat``, the
    seconds each of ``repeat`` further runs took (ranks synchronised before each)."""
    import time

    fn, mesh = prepare(module, comm.mesh.num_ranks, func)
    if mesh != comm.mesh:
        raise PirError(f"the program's mesh {mesh} is not the communicator's {comm.mesh}")
    interp = RankInterpreter(module, comm, weights_dir(module, program_path))
    interp.load(fn, release=True)
    local = _local_feeds(fn, feeds, comm.coords)
    outs = interp.run(fn, local)
    times = []
    for _ in range(repeat):
        comm.exchange(np.zeros(1, np.int8), None)  # a barrier
        t0 = time.perf_counter()
        interp.run(fn, local)
        comm.exchange(np.zeros(1, np.int8), None)
        times.append(time.perf_counter() - t0)
    names = output_names(fn)
    per_rank = [dict() for _ in range(mesh.num_ranks)]
    for name in names:
        for r, block in enumerate(comm.gather_all(outs[name])):
            per_rank[r][name] = block
    return _assemble_outputs(fn, per_rank), times
