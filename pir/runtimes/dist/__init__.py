"""Running sharded programs on ranks: in one process, one thread per rank
(``pir run --ranks N``), or one process per rank under MPI (``mpiexec -n N pir run --dist
mpi``).  ``comm.py``: the communicator interface and its in-process implementation;
``mpi.py``: the MPI one (mpi4py); ``interpreter.py``: the per-rank interpreter;
``runner.py``: inputs in, outputs assembled; ``cli.py``: what ``pir run`` calls.
docs/shard.md, "Running on ranks"."""

from pir.runtimes.dist.comm import Communicator, ThreadComm, block_of
from pir.runtimes.dist.runner import RankedRun, prepare, run_rank, run_ranks

__all__ = ["Communicator", "ThreadComm", "block_of", "RankedRun", "prepare", "run_rank",
           "run_ranks"]
