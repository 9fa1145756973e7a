"""The communicator a rank runs its collectives through, and the in-process one.

A :class:`Communicator` belongs to one rank of a mesh.  Its one primitive is
:meth:`~Communicator.exchange`: every rank of the calling rank's group along a mesh axis (or
of the whole mesh) hands in an array and gets the list of the group's arrays, in coordinate
order.  The collectives of the ``dist`` dialect are written on top of it with the same pure
functions the simulated-rank semantics use (``pir/runtimes/reference/rules/dist.py``), so a
run on ranks gives what the reference semantics say, bit for bit; an implementation may
override a collective with a faster one (MPI's Allreduce).

Every rank runs the same program (SPMD), so all ranks call the same collectives in the same
order; a group-level collective is still called by every rank of the mesh, each with its own
group.

:class:`ThreadComm` is the in-process implementation behind ``pir run --ranks N``: N threads,
one per rank, meet at a barrier for each exchange.  ``pir/runtimes/dist/mpi.py`` is the MPI
one.
"""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from pir.errors import PirError
from pir.ir.dialects.dist import DistTensorType, Mesh
from pir.runtimes.reference.rules.dist import reduce_arrays

__all__ = ["Communicator", "ThreadComm", "ThreadBoard", "block_of", "block_slices"]


class Communicator:
    """One rank's view of the mesh; subclasses implement :meth:`exchange`."""

    def __init__(self, mesh: Mesh, rank: int):
        if not 0 <= rank < mesh.num_ranks:
            raise PirError(f"rank {rank} is not a rank of {mesh}")
        self.mesh, self.rank = mesh, rank
        self.coords = mesh.coords(rank)

    def exchange(self, x: np.ndarray, axis: str | None) -> list[np.ndarray]:
        """The arrays the ranks of this rank's group along ``axis`` (every rank, when None)
        hand in, in coordinate (rank) order."""
        raise NotImplementedError

    def coord(self, axis: str) -> int:
        return self.coords[self.mesh.index(axis)]

    # -- the collectives (docs/shard.md, "The dist ops") ---------------------------------------

    def all_reduce(self, x: np.ndarray, axis: str, kind: str) -> np.ndarray:
        return reduce_arrays(self.exchange(x, axis), kind)

    def all_gather(self, x: np.ndarray, axis: str, dim: int) -> np.ndarray:
        return np.concatenate(self.exchange(x, axis), axis=dim)

    def reduce_scatter(self, x: np.ndarray, axis: str, dim: int, kind: str) -> np.ndarray:
        total = self.all_reduce(x, axis, kind)
        return _split(total, self.mesh.size(axis), dim, "reduce_scatter")[self.coord(axis)].copy()

    def all_to_all(self, x: np.ndarray, axis: str, src_dim: int, dim: int) -> np.ndarray:
        k = self.coord(axis)
        n = self.mesh.size(axis)
        blocks = self.exchange(x, axis)
        return np.concatenate([_split(b, n, dim, "all_to_all")[k] for b in blocks], axis=src_dim)

    def broadcast(self, x: np.ndarray, axis: str, root: int) -> np.ndarray:
        return self.exchange(x, axis)[root].copy()

    def send_recv(self, x: np.ndarray, axis: str, source: int, dest: int) -> np.ndarray:
        """What ``dist.recv`` gives for the block ``x`` its ``dist.send`` sent: the source's
        block on the dest ranks, zeros elsewhere."""
        sent = self.exchange(x, axis)[source]
        return sent.copy() if self.coord(axis) == dest else np.zeros_like(sent)

    def gather_all(self, x: np.ndarray) -> list[np.ndarray]:
        """Every rank's array, by rank (to assemble a whole value)."""
        return self.exchange(x, None)


def _split(a: np.ndarray, n: int, dim: int, what: str) -> list[np.ndarray]:
    if a.shape[dim] % n:
        raise PirError(f"{what}: dim {dim} ({a.shape[dim]}) is not divisible by {n}")
    return np.split(a, n, axis=dim)


def block_slices(t: DistTensorType, shape: Sequence[int],
                 coords: Sequence[int]) -> tuple[slice, ...]:
    """The index of the block the rank at ``coords`` holds of a value of ``shape`` laid out
    as ``t`` (the axes splitting a dim in mesh order, the first outermost)."""
    index = []
    for d, size in enumerate(shape):
        b, n = 0, 1
        for a in t.shard_axes(d):
            k = t.mesh.index(a)
            b, n = b * t.mesh.shape[k] + coords[k], n * t.mesh.shape[k]
        if size % n:
            raise PirError(f"dim {d} ({size}) of {t} is not divisible by the {n} ranks that "
                           "split it")
        index.append(slice(b * (size // n), (b + 1) * (size // n)))
    return tuple(index)


def block_of(value: np.ndarray, t, coords: Sequence[int]) -> np.ndarray:
    """The block of the whole ``value`` the rank at ``coords`` holds when laid out as ``t``
    (a plain type: the whole value).  For ``P(sum)`` axes the ranks at coordinate 0 hold the
    value and the others zeros, as ``distribute`` says."""
    value = np.asarray(value)
    if not isinstance(t, DistTensorType):
        return value
    if value.ndim != len(t.shape):
        raise PirError(f"a value of shape {list(value.shape)} cannot be laid out as {t}")
    block = value[block_slices(t, value.shape, coords)]
    if any(coords[t.mesh.index(a)] for a, k in t.partial_axes.items() if k == "sum"):
        return np.zeros_like(block)
    return block


class ThreadBoard:
    """What the N threads of one in-process run share: a slot per rank and a barrier."""

    def __init__(self, ranks: int, timeout: float | None = None):
        self.slots: list[np.ndarray | None] = [None] * ranks
        self.barrier = threading.Barrier(ranks, timeout=timeout)

    def abort(self) -> None:
        """Wake the other ranks when one fails (their wait raises BrokenBarrierError)."""
        self.barrier.abort()


class ThreadComm(Communicator):
    """Rank ``rank`` of an in-process run: every exchange is two barriers, one after the
    ranks put their arrays in their slots and one after they have read them."""

    def __init__(self, mesh: Mesh, rank: int, board: ThreadBoard):
        super().__init__(mesh, rank)
        self.board = board

    def exchange(self, x, axis):
        b = self.board
        b.slots[self.rank] = x
        b.barrier.wait()
        group = range(self.mesh.num_ranks) if axis is None else self.mesh.group(self.rank, axis)
        out = [b.slots[q] for q in group]
        b.barrier.wait()
        return out
