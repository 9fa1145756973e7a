"""The MPI communicator: this process is one rank of ``mpiexec -n N pir run S.pir --dist
mpi``; collectives go through mpi4py (``pip install 'pir[dist]'`` installs mpi4py and the
Open MPI wheel, whose ``mpiexec`` lands next to ``pir``).

MPI rank r is mesh rank r (row-major over the mesh axes).  Each mesh axis gets its own
sub-communicator per group (``Split`` by the coordinates on the other axes, ordered by the
coordinate on the axis), so a group-level collective is one MPI collective on it.
Exchanges use the buffer interface (``Allgather`` of same-shaped numpy arrays); sums,
means, maxima and minima of floats use ``Allreduce``.  Everything else is derived from the
exchange, as in :class:`~pir.runtimes.dist.comm.Communicator`.
"""

from __future__ import annotations

import numpy as np

from pir.errors import PirError
from pir.ir.dialects.dist import Mesh
from pir.runtimes.dist.comm import Communicator

__all__ = ["MpiComm", "mpi_world"]


def mpi_world():
    """``MPI.COMM_WORLD``; a clear error when mpi4py (the ``dist`` extra) is missing."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise PirError(f"--dist mpi needs mpi4py and an MPI library (pip install 'pir[dist]'): "
                       f"{e}") from None
    return MPI.COMM_WORLD


class MpiComm(Communicator):
    """This MPI process as its rank of ``mesh``; the world must have ``mesh.num_ranks``
    processes."""

    def __init__(self, mesh: Mesh, world=None):
        from mpi4py import MPI

        self.MPI = MPI
        world = world if world is not None else mpi_world()
        if world.Get_size() != mesh.num_ranks:
            raise PirError(f"the program's mesh {mesh} has {mesh.num_ranks} ranks, but mpiexec "
                           f"started {world.Get_size()} processes (mpiexec -n "
                           f"{mesh.num_ranks} ...)")
        super().__init__(mesh, world.Get_rank())
        self.world = world
        self.groups = {}
        for i, axis in enumerate(mesh.names):
            others = list(self.coords)
            others[i] = 0
            self.groups[axis] = world.Split(mesh.rank(others), self.coords[i])

    def _comm(self, axis: str | None):
        return self.world if axis is None else self.groups[axis]

    def exchange(self, x, axis):
        comm = self._comm(axis)
        x = np.require(x, requirements="C")
        if x.dtype.kind not in "biuf":
            return comm.allgather(x)  # pickled: any dtype
        # Every rank's block has the same shape: splits are even (docs/shard.md).
        out = np.empty((comm.Get_size(),) + x.shape, x.dtype)
        comm.Allgather(x, out)
        return list(out)

    def all_reduce(self, x, axis, kind):
        if x.dtype not in (np.float32, np.float64) or kind not in ("sum", "avg", "max", "min"):
            return super().all_reduce(x, axis, kind)
        MPI = self.MPI
        comm = self._comm(axis)
        buf = np.array(x, order="C")
        comm.Allreduce(MPI.IN_PLACE, buf, {"sum": MPI.SUM, "avg": MPI.SUM, "max": MPI.MAX,
                                           "min": MPI.MIN}[kind])
        if kind == "avg":
            buf = (buf / comm.Get_size()).astype(x.dtype)
        return buf
