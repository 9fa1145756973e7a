"""The per-rank interpreter: the reference interpreter running one rank of a per-rank
program (``pir.passes.shard.localize``), its collectives through a :class:`Communicator`.

Values are the rank's blocks.  Ops other than the dist ops run as in the reference runtime,
on local shapes; a value typed ``!dist.tensor`` is checked against its local type.  The dist
ops run by the table :data:`RANK_RULES` below.

Weights ("sliced per rank at load"): before the first run, :meth:`RankInterpreter.load`
takes the rank's block of every constant that enters the distributed program through
``dist.reshard``, and with ``release=True`` (one process per rank) drops the whole array, so
a rank keeps only its blocks.  ``dist.load_shard`` reads the rank's block from its own file
(``<dist.weights>/rank<r>.npz``), and nothing else.
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np

from pir.errors import PirError
from pir.ir.attributes import ResourceRef
from pir.ir.core import Operation
from pir.ir.dialects.builtin import ConstantOp, constant_value
from pir.ir.dialects.dist import DistTensorType, ReshardOp, local_type
from pir.ir.dialects.func import FuncOp
from pir.ir.types import TensorType
from pir.runtimes.dist.comm import Communicator, block_of
from pir.runtimes.reference.interpreter import Interpreter
from pir.runtimes.reference.rules.dist import assemble

__all__ = ["RankInterpreter", "RANK_RULES"]


class _Typed:
    """Stands for a value with another type in :meth:`Interpreter.check`."""

    __slots__ = ("type",)

    def __init__(self, t):
        self.type = t


class RankInterpreter(Interpreter):
    """Runs functions of a per-rank program as rank ``comm.rank``.  ``weights_dir``: where
    ``dist.load_shard`` finds ``rank<r>.npz`` (the program's ``dist.weights`` resolved)."""

    def __init__(self, module, comm: Communicator, weights_dir: str | None = None,
                 profile: dict | None = None):
        super().__init__(module, profile=profile)
        self.comm = comm
        self.weights_dir = weights_dir
        self.ready: dict[Operation, np.ndarray] = {}  # blocks of weights, made once
        self.skip: set[Operation] = set()  # constants whose blocks are all in ``ready``
        self._shards = None
        self._local_symbols: dict[str, tuple[str, int] | None] = {}
        self.mailbox: dict = {}  # dist.send leaves its blocks here for dist.recv

    def load(self, fn: FuncOp, release: bool = False) -> None:
        """Take this rank's blocks of the constants that enter through ``dist.reshard``;
        ``release``: drop the whole arrays from the module afterwards (only when no other
        rank shares the module)."""
        for op in fn.entry.ops:
            if not isinstance(op, ConstantOp) or op in self.skip:
                continue
            users = op.results[0].users
            if not users or not all(isinstance(u, ReshardOp) for u in users):
                continue
            whole = constant_value(op)
            for u in users:
                self.ready[u] = np.array(block_of(whole, u.results[0].type, self.comm.coords),
                                         order="C")  # a copy: the whole array may go
            self.skip.add(op)
        if release:
            keep = {op.value.key for op in self.module.walk()
                    if isinstance(op, ConstantOp) and isinstance(op.value, ResourceRef)
                    and op not in self.skip}
            for key in [k for k in self.module.resources if k not in keep]:
                del self.module.resources[key]

    def check(self, v, arr, what):
        t = v.type
        if isinstance(t, DistTensorType):
            # A split symbolic dim binds its local symbol (B_dp) and the global one (B):
            # whole values of the program (replicas) still have the global size.
            if t.shape is not None and arr.ndim == len(t.shape):
                for d, size in enumerate(t.shape):
                    if isinstance(size, str) and t.split(d) > 1:
                        whole = arr.shape[d] * t.split(d)
                        if self.symbols.setdefault(size, whole) != whole:
                            raise PirError(f"{what} has {arr.shape[d]} in dim {d}, the block "
                                           f"of {size} = {self.symbols[size]} split "
                                           f"{t.split(d)} ways")
            v = _Typed(local_type(t))
        super().check(v, arr, what)
        shape = v.type.shape if isinstance(v.type, TensorType) else None
        for d, size in enumerate(shape or ()):
            if isinstance(size, str):
                split = self._local_symbol(size)
                if split is not None:  # B_dp bound: B is known too
                    self.symbols.setdefault(split[0], arr.shape[d] * split[1])

    def _local_symbol(self, name: str) -> tuple[str, int] | None:
        """``B_dp_tp`` -> ("B", dp * tp): the global symbol and the number of blocks of a
        local symbol (``local_type`` names them so), None for another symbol."""
        if name not in self._local_symbols:
            mesh, found, base, factor = self.comm.mesh, None, name, 1
            for axis in reversed(mesh.names):
                if base.endswith("_" + axis) and len(base) > len(axis) + 1:
                    base, factor = base[:-len(axis) - 1], factor * mesh.size(axis)
                    found = (base, factor)
            self._local_symbols[name] = found
        return self._local_symbols[name]

    def exec(self, op: Operation) -> None:
        if op in self.skip:
            return
        rule = RANK_RULES.get(op.name)
        if rule is None:
            super().exec(op)
            return
        out = self.ready.get(op)
        if out is not None:
            out = [out]
        else:
            try:
                out = rule(self, op, [self.values[v] for v in op.operands])
            except PirError as e:
                if e.message.startswith(op.describe()):
                    raise
                raise PirError(f"{op.describe()} (rank {self.comm.rank}): {e.message}") from None
        for r, arr in zip(op.results, out):
            self.check(r, arr, f"result %{r.name} of {op.describe()} on rank {self.comm.rank}")
            self.values[r] = arr

    def shard_file(self):
        """The rank's weight file, opened once (np.load reads an entry when it is asked)."""
        if self._shards is None:
            if self.weights_dir is None:
                raise PirError("dist.load_shard needs the program's weight directory "
                               "(module attribute dist.weights)")
            path = os.path.join(self.weights_dir, f"rank{self.comm.rank}.npz")
            try:
                self._shards = np.load(path, allow_pickle=False)
            except OSError as e:
                raise PirError(f"cannot read rank {self.comm.rank}'s weights: {e}") from None
        return self._shards


# -- the dist ops on one rank -------------------------------------------------------------------

RankRule = Callable[[RankInterpreter, Operation, list], list]
RANK_RULES: dict[str, RankRule] = {}


def _rule(*names: str):
    def register(fn: RankRule) -> RankRule:
        for n in names:
            RANK_RULES[n] = fn
        return fn

    return register


def _operand_type(op: Operation) -> DistTensorType:
    return op.operands[0].type


@_rule("dist.to_local", "dist.from_local")
def _identity(interp, op, arrays):
    return arrays


@_rule("dist.load_shard")
def _load_shard(interp, op, arrays):
    shards = interp.shard_file()
    if op.key not in shards.files:
        raise PirError(f"rank {interp.comm.rank}'s weight file has no '{op.key}'")
    block = shards[op.key]
    interp.ready[op] = block
    return [block]


@_rule("dist.reshard")
def _reshard(interp, op, arrays):
    src, dst = op.operands[0].type, op.results[0].type
    if isinstance(src, DistTensorType):
        local = _local_reshard(arrays[0], src, dst, interp.comm.coords)
        if local is not None:
            return [local]
        # not lowered to collectives: the general way, every rank's block to every rank
        whole = assemble(interp.comm.gather_all(arrays[0]), src)
    else:  # a whole value enters: each rank takes its block
        whole = arrays[0]
    return [np.require(block_of(whole, dst, interp.comm.coords), requirements="C")]


def _local_reshard(x, src: DistTensorType, dst, coords) -> np.ndarray | None:
    """The block of ``dst`` made from this rank's block ``x`` of ``src`` without
    communication, when every axis that changes is ``R`` in ``src`` and becomes a shard of
    a dim no other axis splits, or a partial value; None otherwise."""
    from pir.ir.dialects.dist import Partial, Replicate, Shard

    if not isinstance(dst, DistTensorType):
        return None
    for k, (axis, n) in enumerate(src.mesh.axes):
        p, q = src.placements[k], dst.placements[k]
        if p == q:
            continue
        if not isinstance(p, Replicate):
            return None
        if isinstance(q, Shard):
            if len(src.shard_axes(q.dim)) or len(dst.shard_axes(q.dim)) != 1:
                return None
            x = np.split(x, n, axis=q.dim)[coords[k]]
        elif isinstance(q, Partial) and q.reduce == "sum" and coords[k]:
            x = np.zeros_like(x)
    return np.require(x, requirements="C")


@_rule("dist.all_reduce")
def _all_reduce(interp, op, arrays):
    kind = _operand_type(op).placement(op.mesh_axis).reduce
    return [interp.comm.all_reduce(arrays[0], op.mesh_axis, kind)]


@_rule("dist.all_gather")
def _all_gather(interp, op, arrays):
    dim = _operand_type(op).placement(op.mesh_axis).dim
    return [interp.comm.all_gather(arrays[0], op.mesh_axis, dim)]


@_rule("dist.reduce_scatter")
def _reduce_scatter(interp, op, arrays):
    kind = _operand_type(op).placement(op.mesh_axis).reduce
    return [interp.comm.reduce_scatter(arrays[0], op.mesh_axis, op.dim, kind)]


@_rule("dist.all_to_all")
def _all_to_all(interp, op, arrays):
    src = _operand_type(op).placement(op.mesh_axis).dim
    return [interp.comm.all_to_all(arrays[0], op.mesh_axis, src, op.dim)]


@_rule("dist.broadcast")
def _broadcast(interp, op, arrays):
    return [interp.comm.broadcast(arrays[0], op.mesh_axis, op.root)]


def _channel(op) -> tuple:
    return (op.mesh_axis, op.source, op.dest, op.tag)


@_rule("dist.send")
def _send(interp, op, arrays):
    interp.mailbox.setdefault(_channel(op), []).append(arrays[0])
    return []


@_rule("dist.recv")
def _recv(interp, op, arrays):
    queue = interp.mailbox.get(_channel(op))
    if not queue:
        raise PirError(f"no dist.send with mesh_axis '{op.mesh_axis}', source {op.source}, "
                       f"dest {op.dest} and tag {op.tag} ran before it")
    return [interp.comm.send_recv(queue.pop(0), op.mesh_axis, op.source, op.dest)]
