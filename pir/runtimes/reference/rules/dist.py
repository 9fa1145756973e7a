"""The dist ops in the reference runtime: in one process (the global view), and on simulated
ranks.

**Global view** (the ``EVAL`` rules, what ``pir run`` does with one process): every value
holds its global (logical) tensor, so a collective, which changes how a value is laid out
over the ranks and never the value, is the identity; a program that is sharded but not yet
split per rank therefore runs and must give the unsharded program's results.  ``dist.send``
does nothing, and ``dist.recv`` fails: its value exists only on some ranks.

**Simulated ranks** (:data:`RANK_EVAL` and the functions below): a value is the list of the
blocks the ranks hold, indexed by rank (ranks are numbered row-major over the mesh axes).
Each collective is a pure function from the operand's per-rank arrays to the result's, which
is what a runner of N ranks in one process calls, and what tests compare MPI runs with.
:func:`distribute` and :func:`assemble` convert between a global array and its per-rank
blocks for a given ``!dist.tensor`` type (see docs/shard.md for the layout).

Reductions are done in rank (coordinate) order, the same on every rank, so every rank of a
group gets bitwise the same result; ``avg`` divides the sum by the group size (floats are
summed in at least f32; integers divide with truncation).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from pir.errors import PirError
from pir.ir.core import Operation
from pir.ir.dialects.dist import DistTensorType, Mesh, Replicate
from pir.ir.types import TensorType
from pir.runtimes.reference.registry import evaluates
from pir.runtimes.reference.rules.prim_common import compute_dtype

__all__ = ["RANK_EVAL", "on_ranks", "reduce_arrays", "all_reduce", "all_gather",
           "reduce_scatter", "all_to_all", "broadcast", "send_recv", "distribute", "assemble",
           "reshard"]

Arrays = list[np.ndarray]


# -- global view ----------------------------------------------------------------------------

@evaluates("dist.all_reduce", "dist.all_gather", "dist.reduce_scatter", "dist.all_to_all",
           "dist.broadcast", "dist.reshard")
def _same_value(op, x):
    return x


@evaluates("dist.send")
def _send(op, x):
    return ()


@evaluates("dist.recv")
def _recv(op):
    raise PirError("dist.recv receives a block from another rank: run the program on ranks "
                   "(a single process holds global values only)")


# -- per-rank semantics ---------------------------------------------------------------------

def reduce_arrays(arrays: Sequence[np.ndarray], kind: str) -> np.ndarray:
    """The ``kind`` (sum, avg, max, min) of ``arrays``, combined in order."""
    dtype = arrays[0].dtype
    if kind in ("max", "min"):
        f = np.maximum if kind == "max" else np.minimum
        out = arrays[0]
        for a in arrays[1:]:
            out = f(out, a)
        return np.array(out, dtype=dtype)
    work = compute_dtype(dtype)
    out = arrays[0].astype(work, copy=True)
    for a in arrays[1:]:
        out += a.astype(work, copy=False)
    if kind == "avg":
        out = out / len(arrays) if out.dtype.kind in "fc" else out // len(arrays)
    elif kind != "sum":
        raise PirError(f"unknown reduction '{kind}'")
    return out.astype(dtype, copy=False)


def _groups(mesh: Mesh, axis: str) -> list[list[int]]:
    """``groups[r]``: the ranks of rank r's group along ``axis``, in coordinate order."""
    return [mesh.group(r, axis) for r in range(mesh.num_ranks)]


def _check(values: Sequence[np.ndarray], mesh: Mesh) -> None:
    if len(values) != mesh.num_ranks:
        raise PirError(f"{len(values)} per-rank values for the {mesh.num_ranks} ranks of {mesh}")


def _split(a: np.ndarray, n: int, dim: int, what: str) -> list[np.ndarray]:
    if a.shape[dim] % n:
        raise PirError(f"{what}: dim {dim} ({a.shape[dim]}) is not divisible by {n}")
    return np.split(a, n, axis=dim)


def all_reduce(values: Sequence[np.ndarray], mesh: Mesh, axis: str, kind: str) -> Arrays:
    """Every rank gets the ``kind`` reduction of its group's values."""
    _check(values, mesh)
    return [reduce_arrays([values[q] for q in g], kind) for g in _groups(mesh, axis)]


def all_gather(values: Sequence[np.ndarray], mesh: Mesh, axis: str, dim: int) -> Arrays:
    """Every rank gets its group's values joined along ``dim`` in coordinate order."""
    _check(values, mesh)
    return [np.concatenate([values[q] for q in g], axis=dim) for g in _groups(mesh, axis)]


def reduce_scatter(values: Sequence[np.ndarray], mesh: Mesh, axis: str, dim: int,
                   kind: str) -> Arrays:
    """The rank at coordinate k gets block k (along ``dim``) of its group's reduction."""
    _check(values, mesh)
    i, n = mesh.index(axis), mesh.size(axis)
    out = []
    for r, g in enumerate(_groups(mesh, axis)):
        total = reduce_arrays([values[q] for q in g], kind)
        out.append(_split(total, n, dim, "reduce_scatter")[mesh.coords(r)[i]].copy())
    return out


def all_to_all(values: Sequence[np.ndarray], mesh: Mesh, axis: str, src_dim: int,
               dim: int) -> Arrays:
    """Each rank splits its value into axis-size chunks along ``dim``; the rank at
    coordinate k joins chunk k of every group member along ``src_dim``, in their order."""
    _check(values, mesh)
    i, n = mesh.index(axis), mesh.size(axis)
    out = []
    for r, g in enumerate(_groups(mesh, axis)):
        k = mesh.coords(r)[i]
        out.append(np.concatenate([_split(values[q], n, dim, "all_to_all")[k] for q in g],
                                  axis=src_dim))
    return out


def broadcast(values: Sequence[np.ndarray], mesh: Mesh, axis: str, root: int) -> Arrays:
    """Every rank gets the value of its group's rank at coordinate ``root``."""
    _check(values, mesh)
    return [values[g[root]].copy() for g in _groups(mesh, axis)]


def send_recv(values: Sequence[np.ndarray], mesh: Mesh, axis: str, source: int,
              dest: int) -> Arrays:
    """What ``dist.recv`` gives each rank for the values its ``dist.send`` sent: on ranks at
    coordinate ``dest`` the value of the group's rank at ``source``, zeros elsewhere."""
    _check(values, mesh)
    i = mesh.index(axis)
    out = []
    for r, g in enumerate(_groups(mesh, axis)):
        sent = values[g[source]]
        out.append(sent.copy() if mesh.coords(r)[i] == dest else np.zeros_like(sent))
    return out


def _block(t: DistTensorType, coords: Sequence[int], dim: int) -> tuple[int, int]:
    """(index, count): which of the ``count`` blocks of ``dim`` the rank at ``coords`` holds
    (the splitting axes in mesh order, the first outermost)."""
    index, count = 0, 1
    for a in t.shard_axes(dim):
        k = t.mesh.index(a)
        index = index * t.mesh.shape[k] + coords[k]
        count *= t.mesh.shape[k]
    return index, count


def distribute(value: np.ndarray, t: DistTensorType) -> Arrays:
    """The blocks each rank holds of the global ``value`` laid out as ``t``: its shard of
    every split dim; for ``P(sum)`` axes the value on the ranks at coordinate 0 and zeros on
    the others, for the other partial kinds the value on every rank."""
    value = np.asarray(value)
    if value.ndim != len(t.shape):
        raise PirError(f"a value of shape {list(value.shape)} cannot be laid out as {t}")
    sums = [t.mesh.index(a) for a, k in t.partial_axes.items() if k == "sum"]
    out = []
    for r in range(t.mesh.num_ranks):
        c = t.mesh.coords(r)
        index = []
        for d, size in enumerate(value.shape):
            b, n = _block(t, c, d)
            if size % n:
                raise PirError(f"dim {d} ({size}) of {t} is not divisible by {n}")
            index.append(slice(b * (size // n), (b + 1) * (size // n)))
        block = value[tuple(index)]
        out.append(np.zeros_like(block) if any(c[k] for k in sums) else block.copy())
    return out


def assemble(values: Sequence[np.ndarray], t: DistTensorType) -> np.ndarray:
    """The global value of the per-rank ``values`` laid out as ``t``: partial axes reduced,
    then the blocks put in place (of replicas, the lowest rank's)."""
    mesh = t.mesh
    _check(values, mesh)
    values = list(values)
    for axis, kind in t.partial_axes.items():
        values = all_reduce(values, mesh, axis, kind)
    local = values[0].shape
    shape = [s * _block(t, mesh.coords(0), d)[1] for d, s in enumerate(local)]
    out = np.empty(shape, values[0].dtype)
    done = set()
    for r, v in enumerate(values):
        c = mesh.coords(r)
        blocks = tuple(_block(t, c, d)[0] for d in range(len(local)))
        if blocks in done:
            continue
        if v.shape != local:
            raise PirError(f"rank {r} holds shape {list(v.shape)}, rank 0 {list(local)}")
        out[tuple(slice(b * s, (b + 1) * s) for b, s in zip(blocks, local))] = v
        done.add(blocks)
    return out


def _layout(t: TensorType, mesh: Mesh) -> DistTensorType:
    """A plain tensor type stands for the value every rank holds whole: all R."""
    if isinstance(t, DistTensorType):
        return t
    return DistTensorType(t.dtype, t.shape, mesh, tuple(Replicate() for _ in mesh.axes))


def reshard(values: Sequence[np.ndarray], src: TensorType, dst: TensorType) -> Arrays:
    """The blocks of layout ``dst`` of the value whose blocks of layout ``src`` are
    ``values`` (a plain tensor type on either side is the whole value on every rank)."""
    mesh = (src if isinstance(src, DistTensorType) else dst).mesh
    src, dst = _layout(src, mesh), _layout(dst, mesh)
    return distribute(assemble(values, src), dst)


# -- the per-rank table ---------------------------------------------------------------------

#: ``RANK_EVAL[op name](op, values, mailbox)``: ``values[i]`` is the list of per-rank arrays
#: of operand ``i``; returns, per result, the list of per-rank arrays.  ``mailbox`` is a dict
#: the runner keeps for one run: ``dist.send`` leaves its blocks there for ``dist.recv``.
RankRule = Callable[[Operation, list[Arrays], dict], list[Arrays]]
RANK_EVAL: dict[str, RankRule] = {}


def on_ranks(name: str) -> Callable[[RankRule], RankRule]:
    def register(fn: RankRule) -> RankRule:
        if name in RANK_EVAL:
            raise ValueError(f"two per-rank rules for {name}")
        RANK_EVAL[name] = fn
        return fn

    return register


def _operand(op: Operation) -> DistTensorType:
    return op.operands[0].type


@on_ranks("dist.all_reduce")
def _all_reduce(op, values, mailbox):
    t = _operand(op)
    return [all_reduce(values[0], t.mesh, op.mesh_axis, t.placement(op.mesh_axis).reduce)]


@on_ranks("dist.all_gather")
def _all_gather(op, values, mailbox):
    t = _operand(op)
    return [all_gather(values[0], t.mesh, op.mesh_axis, t.placement(op.mesh_axis).dim)]


@on_ranks("dist.reduce_scatter")
def _reduce_scatter(op, values, mailbox):
    t = _operand(op)
    kind = t.placement(op.mesh_axis).reduce
    return [reduce_scatter(values[0], t.mesh, op.mesh_axis, op.dim, kind)]


@on_ranks("dist.all_to_all")
def _all_to_all(op, values, mailbox):
    t = _operand(op)
    src = t.placement(op.mesh_axis).dim
    return [all_to_all(values[0], t.mesh, op.mesh_axis, src, op.dim)]


@on_ranks("dist.broadcast")
def _broadcast(op, values, mailbox):
    return [broadcast(values[0], _operand(op).mesh, op.mesh_axis, op.root)]


def _channel(op) -> tuple:
    return (op.mesh_axis, op.source, op.dest, op.tag)


@on_ranks("dist.send")
def _send_ranks(op, values, mailbox):
    mailbox.setdefault(_channel(op), []).append((_operand(op).mesh, values[0]))
    return []


@on_ranks("dist.recv")
def _recv_ranks(op, values, mailbox):
    queue = mailbox.get(_channel(op))
    if not queue:
        raise PirError(f"{op.describe()}: no dist.send with mesh_axis '{op.mesh_axis}', "
                       f"source {op.source}, dest {op.dest} and tag {op.tag} ran before it")
    mesh, sent = queue.pop(0)
    return [send_recv(sent, mesh, op.mesh_axis, op.source, op.dest)]


@on_ranks("dist.reshard")
def _reshard(op, values, mailbox):
    return [reshard(values[0], op.operands[0].type, op.results[0].type)]


# The ops that join a per-rank program's local values to its distributed ones
# (pir/ir/dialects/dist/local.py): identities on each rank's block.
@on_ranks("dist.to_local")
@on_ranks("dist.from_local")
def _local_view(op, values, mailbox):
    return [values[0]]


@on_ranks("dist.load_shard")
def _load_shard(op, values, mailbox):
    raise PirError("dist.load_shard reads each rank's own weight file: run the per-rank "
                   "program with `pir run --ranks N` or under MPI (pir.runtimes.dist)")


@evaluates("dist.to_local", "dist.from_local", "dist.load_shard")
def _per_rank_only(op, *x):
    raise PirError(f"{op.name} belongs to a per-rank program, whose values are the blocks of "
                   "one rank: run it on ranks (`pir run --ranks N`, or under MPI)")
