"""Localize: a global-view sharded program -> the one SPMD program every rank runs.

The input is what propagation and reshard insertion give (docs/shard.md): values typed
``!dist.tensor<GLOBAL shape, mesh, placements>`` (or plain tensors, whole on every rank),
collectives where layouts change, and ``dist.reshard`` where a whole value enters the
distributed program (a local slice).  The output computes the same thing on each rank's
blocks:

- every op other than the dist ops works on plain ``tensor<...>`` types of **local** shape
  (:func:`pir.ir.dialects.dist.local_type`), so it verifies and runs as any program does;
  the attributes that hold sizes of split dims get local sizes: the declared result types of
  ``reshape``, ``broadcast_in_dim`` and ``iota`` (through the local types), ``slice``'s
  ``limit_indices`` on a split dim taken whole, ``dynamic_slice``'s ``slice_sizes``;
- the collectives, ``dist.reshard``, ``send``/``recv`` keep their ``!dist.tensor`` types:
  the layout is what they mean.  ``dist.from_local`` / ``dist.to_local`` join them to the
  local values (named ``<value>.dist`` and ``<value>.local``);
- the function keeps its signature (global ``!dist.tensor`` types), so a runner knows how to
  split the inputs and assemble the outputs; arguments enter through ``dist.to_local``;
- weights: by default a constant keeps its whole value and ``dist.reshard`` takes the rank's
  block when the rank loads it ("sliced per rank at load").  With ``split_weights=DIR`` each
  sharded weight becomes ``dist.load_shard`` and rank r's blocks are written to
  ``DIR/rank<r>.npz``, so each rank reads only its own; the resources leave the program.

The module gets the attribute ``dist.per_rank = "mesh<...>"``: the mesh the program runs on.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from pir.errors import PirError
from pir.ir.attributes import ResourceRef
from pir.ir.core import Block, Operation, Value
from pir.ir.dialects.builtin import ConstantOp, ModuleOp, constant_value
from pir.ir.dialects.dist import (
    DistOp,
    DistTensorType,
    FromLocalOp,
    LoadShardOp,
    Mesh,
    ReshardOp,
    ToLocalOp,
    local_type,
)
from pir.ir.dialects.func import FuncOp, ReturnOp
from pir.ir.verifier import verify_module

__all__ = ["localize", "program_mesh", "is_per_rank", "PER_RANK_ATTR", "WEIGHTS_ATTR"]

#: The module attribute that marks a per-rank program; its value is the mesh.
PER_RANK_ATTR = "dist.per_rank"
#: The module attribute naming the directory of per-rank weight files (--split-weights).
WEIGHTS_ATTR = "dist.weights"


def is_per_rank(module: ModuleOp) -> bool:
    return PER_RANK_ATTR in module.attributes


def program_mesh(module: ModuleOp) -> Mesh | None:
    """The mesh of a program: its ``dist.per_rank`` attribute, else the one mesh its
    ``!dist.tensor`` types share (None when it has none); two meshes are an error."""
    if PER_RANK_ATTR in module.attributes:
        return Mesh.parse(str(module.attributes[PER_RANK_ATTR]))
    meshes = set()
    for op in module.walk():
        types = [v.type for v in op.operands] + [r.type for r in op.results]
        if isinstance(op, FuncOp):
            types += [a.type for a in op.args]
        meshes.update(t.mesh for t in types if isinstance(t, DistTensorType))
    if len(meshes) > 1:
        raise PirError(f"the program uses several meshes ({', '.join(sorted(map(str, meshes)))})"
                       ": a per-rank program runs on one")
    return next(iter(meshes), None)


def localize(module: ModuleOp, mesh: Mesh | None = None, *,
             split_weights: str | os.PathLike | None = None,
             weights_ref: str | None = None) -> ModuleOp:
    """Rewrite ``module`` (a global-view sharded program) in place into the per-rank
    program, and return it.

    ``mesh``: the mesh to run on (default: the one the program's types use).
    ``split_weights``: a directory; each sharded weight is written there per rank
    (``rank<r>.npz``, keyed by resource name) and loaded by ``dist.load_shard``.
    ``weights_ref``: how the program names that directory (default ``split_weights`` as
    given); a runner resolves it against the program file's directory, so give it relative
    to where the program will be written."""
    if is_per_rank(module):
        raise PirError("the program is already a per-rank program (it has dist.per_rank)")
    found = program_mesh(module)
    if mesh is None:
        if found is None:
            raise PirError("the program has no !dist.tensor values: give the mesh to run on")
        mesh = found
    elif found is not None and found != mesh:
        raise PirError(f"the program is sharded over {found}, not {mesh}")
    shards = _Shards() if split_weights is not None else None
    for fn in list(module.body.block.ops):
        if isinstance(fn, FuncOp):
            _Localizer(module, fn, shards).run()
    if shards is not None:
        _write_shards(Path(split_weights), shards.blocks, mesh.num_ranks)
        ref = weights_ref if weights_ref is not None else str(split_weights)
        module.attributes[WEIGHTS_ATTR] = ref
        _drop_unused_resources(module)
    module.attributes[PER_RANK_ATTR] = str(mesh)
    verify_module(module)
    return module


class _Localizer:
    """Builds the per-rank body of one function: ``local[v]`` is the value holding this
    rank's block of the old value ``v``, ``dist[v]`` its ``!dist.tensor`` view."""

    def __init__(self, module: ModuleOp, fn: FuncOp, shards: _Shards | None):
        self.module, self.fn, self.shards = module, fn, shards
        self.local: dict[Value, Value] = {}
        self.dist: dict[Value, Value] = {}
        self.block = Block([a.type for a in fn.args], [a.name for a in fn.args])

    def run(self) -> None:
        for old, new in zip(self.fn.args, self.block.args):
            (self.dist if isinstance(old.type, DistTensorType) else self.local)[old] = new
        for op in self.fn.entry.ops:
            if op.regions or op.name == "func.call":
                raise PirError(f"{op.describe()}: localize handles a flat function of ops "
                               "(inline calls and leave fusion for after localize)")
            if isinstance(op, ReturnOp):
                outs = [self.output(v) for v in op.operands]
                self.emit(ReturnOp(outs, (), dict(op.attributes), loc=op.loc))
            elif isinstance(op, ReshardOp):
                self.reshard(op)
            elif isinstance(op, (ToLocalOp, FromLocalOp, LoadShardOp)):
                raise PirError(f"{op.describe()} belongs to a per-rank program: the input must "
                               "be the global view")
            elif isinstance(op, DistOp):  # collectives, send, recv: layouts are their meaning
                new = self.clone(op, [self.as_dist(v) for v in op.operands],
                                 [r.type for r in op.results])
                self.dist.update(zip(op.results, new.results))
            else:
                self.compute(op)
        old = self.fn.entry
        self.fn.regions[0].blocks[0] = self.block
        self.block.parent = self.fn.regions[0]
        for op in reversed(old.ops):  # drop the old ops' uses of values still alive
            op._detach_uses()

    # -- values -----------------------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        self.block.append(op)
        return op

    def as_local(self, v: Value) -> Value:
        """This rank's block of ``v`` (made with ``dist.to_local`` on first use)."""
        if v not in self.local:
            d = self.dist[v]
            self.local[v] = self.emit(ToLocalOp([d], [local_type(d.type)], loc=_loc(v),
                                                result_names=[_suffix(v, "local")])).result
        return self.local[v]

    def as_dist(self, v: Value) -> Value:
        """``v`` as its ``!dist.tensor`` (made with ``dist.from_local`` on first use)."""
        if v not in self.dist:
            if not isinstance(v.type, DistTensorType):
                raise PirError(f"%{v.name} ({v.type}) is used by a dist op but is not a "
                               "!dist.tensor")
            self.dist[v] = self.emit(FromLocalOp([self.local[v]], [v.type], loc=_loc(v),
                                                 result_names=[_suffix(v, "dist")])).result
        return self.dist[v]

    def output(self, v: Value) -> Value:
        """``v`` as the function returns it: a ``!dist.tensor`` keeps its global type, and
        the returned value keeps ``v``'s name (the output's name), its block becoming
        ``<name>.local``."""
        if not isinstance(v.type, DistTensorType):
            return self.as_local(v)
        if v not in self.dist and v.name:
            self.local[v].name = f"{v.name}.local"
            self.dist[v] = self.emit(FromLocalOp([self.local[v]], [v.type], loc=_loc(v),
                                                 result_names=[v.name])).result
        return self.as_dist(v)

    def clone(self, op: Operation, operands, result_types, attrs=None) -> Operation:
        new = type(op)(operands, result_types, dict(op.attributes) if attrs is None else attrs,
                       loc=op.loc, result_names=[r.name for r in op.results],
                       operand_segments=op.operand_segments, result_segments=op.result_segments)
        return self.emit(new)

    # -- ops --------------------------------------------------------------------------------

    def reshard(self, op: ReshardOp) -> None:
        src, out = op.operands[0], op.results[0]
        if not isinstance(src.type, DistTensorType):
            # A whole value enters the distributed program: each rank takes its block.
            owner = src.owner if not isinstance(src.owner, Block) else None
            if self.shards is not None and isinstance(owner, ConstantOp) \
                    and isinstance(owner.value, ResourceRef):
                key = self.shards.add(owner.value.key, constant_value(owner), out.type)
                new = self.emit(LoadShardOp([], [local_type(out.type)],
                                            {"key": key, "layout": out.type},
                                            loc=op.loc, result_names=[out.name]))
                self.local[out] = new.result
                return
            new = self.clone(op, [self.as_local(src)], [out.type])
        else:
            new = self.clone(op, [self.as_dist(src)], [out.type])
        (self.dist if isinstance(out.type, DistTensorType) else self.local)[out] = new.results[0]

    def compute(self, op: Operation) -> None:
        """An op every rank runs on its blocks: local types, local sizes in attributes."""
        if isinstance(op, ConstantOp):
            new = self.clone(op, [], [r.type for r in op.results])
            self.local.update(zip(op.results, new.results))
            return
        attrs = dict(op.attributes)
        if op.name == "prim.slice":
            attrs["limit_indices"] = _local_limits(op)
        elif op.name == "prim.dynamic_slice":
            attrs["slice_sizes"] = _local_slice_sizes(op)
        new = self.clone(op, [self.as_local(v) for v in op.operands],
                         [local_type(r.type) for r in op.results], attrs)
        self.local.update(zip(op.results, new.results))


# -- attributes holding sizes -----------------------------------------------------------------

def _local_limits(op: Operation) -> tuple[int, ...]:
    """``slice``'s limits: a split dim must be taken whole, and is cut at its local size."""
    t = op.operands[0].type
    if not isinstance(t, DistTensorType):
        return op.limit_indices
    axes = op.axes or tuple(range(len(op.start_indices)))
    strides = op.strides or (1,) * len(axes)
    limits = []
    for a, lo, hi, step in zip(axes, op.start_indices, op.limit_indices, strides):
        if t.split(a) > 1:
            if (lo, hi, step) != (0, t.shape[a], 1):
                raise PirError(f"{op.describe()}: cuts dim {a}, which is split ({t}): the SPMD "
                               "rule needs it whole")
            hi = local_type(t).shape[a]
        limits.append(hi)
    return tuple(limits)


def _local_slice_sizes(op: Operation) -> tuple[int, ...]:
    """``dynamic_slice``'s sizes: a dim split in the result has its local size."""
    out = op.results[0].type
    if not isinstance(out, DistTensorType):
        return op.slice_sizes
    local = local_type(out).shape
    sizes = []
    for d, size in enumerate(op.slice_sizes):
        if out.split(d) > 1:
            if not isinstance(local[d], int):
                raise PirError(f"{op.describe()}: dim {d} of the window is split but not static")
            size = local[d]
        sizes.append(size)
    return tuple(sizes)


# -- weights ----------------------------------------------------------------------------------

class _Shards:
    """The per-rank blocks of the sharded weights: ``blocks[key][r]`` is rank r's block.  A
    weight used in one layout keeps its resource name; another layout of it gets
    ``name@2``, ``name@3``..."""

    def __init__(self):
        self.blocks: dict[str, list[np.ndarray]] = {}
        self.keys: dict[tuple[str, DistTensorType], str] = {}

    def add(self, resource: str, value: np.ndarray, layout: DistTensorType) -> str:
        from pir.runtimes.reference.rules.dist import distribute

        key = self.keys.get((resource, layout))
        if key is None:
            key, n = resource, 1
            while key in self.blocks:
                n += 1
                key = f"{resource}@{n}"
            self.keys[(resource, layout)] = key
            self.blocks[key] = [np.require(b, requirements="C") for b in distribute(value, layout)]
        return key


def _write_shards(directory: Path, shards: dict[str, list[np.ndarray]], ranks: int) -> None:
    """``directory/rank<r>.npz``: rank r's block of each weight (written atomically)."""
    directory.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        path = directory / f"rank{r}.npz"
        tmp = directory / f".rank{r}.npz.tmp"
        with open(tmp, "wb") as f:
            np.savez(f, **{key: blocks[r] for key, blocks in shards.items()})
        os.replace(tmp, path)


def _drop_unused_resources(module: ModuleOp) -> None:
    """Remove constants nothing uses any more, then resources no constant refers to."""
    for fn in module.body.block.ops:
        for op in list(reversed(fn.entry.ops)) if isinstance(fn, FuncOp) else ():
            if isinstance(op, ConstantOp) and not any(r.uses for r in op.results):
                op.erase()
    used = {op.value.key for op in module.walk()
            if isinstance(op, ConstantOp) and isinstance(op.value, ResourceRef)}
    for key in [k for k in module.resources if k not in used]:
        del module.resources[key]


def _loc(v: Value) -> str | None:
    owner = v.owner
    return owner.loc if isinstance(owner, Operation) else None


def _suffix(v: Value, what: str) -> str | None:
    return f"{v.name}.{what}" if v.name else None
