"""How a value moves between two layouts: the cheapest collective sequence, and its bytes.

:func:`reshard_steps` plans the change from one :class:`Sharding` to another on a mesh, the
way Paddle's reshard functions do, one mesh axis at a time from the innermost axis out
(docs/shard.md: a collective that gathers or creates a split of a dim must act on the
innermost axis splitting it):

=================  =====================  ==========================================
on one axis        step                    communication
=================  =====================  ==========================================
``P(k) -> R``      ``dist.all_reduce``     the local block
``P(k) -> S(d)``   ``dist.reduce_scatter`` the local block (before)
``S(d) -> R``      ``dist.all_gather``     the local block (after)
``S(d) -> S(e)``   ``dist.all_to_all``     the local block
``R -> S(d)``      local slice             none
``R -> P(k)``      local (zeros or copy)   none
=================  =====================  ==========================================

Steps that need no communication are gathered into one last ``local`` step, which the
program keeps as a ``dist.reshard``.  Where the direct step would break the innermost-axis
rule (an outer axis's split of a dim whose inner split stays), the plan falls back to
gathering and reducing every axis that changes, innermost first, then slicing locally.

Bytes are counted per rank: the size of the larger of the local blocks a rank passes to and
gets from the collective (what an MPI call moves through its buffers).  Symbolic dims take
their sizes from ``dims`` (default 1, see docs/shard.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import prod
from typing import Mapping

from pir.ir.dialects.dist import Mesh
from pir.ir.types import Dim, DType
from pir.passes.shard.sharding import Sharding

__all__ = ["Step", "reshard_steps", "local_bytes", "reshard_bytes", "resolve_shape",
           "COLLECTIVES"]

#: The kinds of step that communicate (the others are "local").
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


@dataclass(frozen=True)
class Step:
    """One step of a reshard: ``kind`` (a collective's short name, or ``local``) along
    ``axis`` (None for local), the new split ``dim`` (reduce_scatter, all_to_all), the layout
    after the step, and the bytes each rank communicates."""

    kind: str
    axis: str | None
    dim: int | None
    after: Sharding
    bytes: int


def resolve_shape(shape: tuple[Dim, ...], dims: Mapping[str, int] | None = None) -> tuple[int, ...]:
    """Static sizes for ``shape``: a symbol takes its size from ``dims`` (1 if not given)."""
    dims = dims or {}
    return tuple(d if isinstance(d, int) else int(dims.get(d, 1)) if d is not None else 1
                 for d in shape)


def local_bytes(shape: tuple[int, ...], dtype: DType, s: Sharding, mesh: Mesh) -> int:
    """The bytes of one rank's block of a tensor of global ``shape`` laid out as ``s``."""
    n = 1
    for size, axes in zip(shape, s.dims):
        split = prod(mesh.size(a) for a in axes)
        n *= -(-size // split)
    return n * dtype.itemsize


def _placement(s: Sharding, axis: str) -> tuple[str, object]:
    """("R", None), ("S", dim) or ("P", kind) of ``s`` on ``axis``."""
    for d, axes in enumerate(s.dims):
        if axis in axes:
            return ("S", d)
    kind = s.partial_axes.get(axis)
    return ("P", kind) if kind else ("R", None)


def _without(s: Sharding, axis: str) -> Sharding:
    """``s`` replicated on ``axis``."""
    return Sharding(tuple(tuple(a for a in axes if a != axis) for axes in s.dims),
                    {a: k for a, k in s.partial if a != axis})


def _with_split(s: Sharding, axis: str, dim: int, mesh: Mesh) -> Sharding | None:
    """``s`` (replicated on ``axis``) split on ``dim`` by ``axis`` as the innermost axis, or
    None when an axis already splitting ``dim`` is inner to it (the step would be invalid)."""
    if any(mesh.index(a) > mesh.index(axis) for a in s.dims[dim]):
        return None
    dims = list(s.dims)
    dims[dim] = dims[dim] + (axis,)
    return Sharding(tuple(dims), s.partial)


def _innermost(s: Sharding, axis: str, dim: int) -> bool:
    return bool(s.dims[dim]) and s.dims[dim][-1] == axis


def reshard_steps(shape: tuple[int, ...], dtype: DType, src: Sharding, dst: Sharding,
                  mesh: Mesh) -> tuple[Step, ...]:
    """The steps from ``src`` to ``dst`` (empty when equal); see the module docstring."""
    return _plan(tuple(shape), dtype, src, dst, mesh)


@lru_cache(maxsize=65536)
def _plan(shape, dtype, src, dst, mesh) -> tuple[Step, ...]:
    if src == dst:
        return ()
    steps = _direct(shape, dtype, src, dst, mesh)
    if steps is None:
        steps = _gather_all(shape, dtype, src, dst, mesh)
    return tuple(steps)


def _step(kind, axis, dim, before, after, shape, dtype, mesh) -> Step:
    n = max(local_bytes(shape, dtype, before, mesh), local_bytes(shape, dtype, after, mesh))
    return Step(kind, axis, dim, after, n)


def _direct(shape, dtype, src: Sharding, dst: Sharding, mesh: Mesh) -> list[Step] | None:
    cur, steps = src, []
    for axis in reversed(mesh.names):
        (p, pv), (q, qv) = _placement(cur, axis), _placement(dst, axis)
        if (p, pv) == (q, qv) or p == "R":
            continue  # R -> S / P: local, at the end
        if p == "S" and not _innermost(cur, axis, pv):
            return None
        if p == "P":
            if q == "S":
                after = _with_split(_without(cur, axis), axis, qv, mesh)
                if after is not None:
                    steps.append(_step("reduce_scatter", axis, qv, cur, after, shape, dtype, mesh))
                    cur = after
                    continue
            after = _without(cur, axis)
            steps.append(_step("all_reduce", axis, None, cur, after, shape, dtype, mesh))
        else:  # S(pv)
            if q == "S":
                after = _with_split(_without(cur, axis), axis, qv, mesh)
                if after is not None:
                    steps.append(_step("all_to_all", axis, qv, cur, after, shape, dtype, mesh))
                    cur = after
                    continue
            after = _without(cur, axis)
            steps.append(_step("all_gather", axis, None, cur, after, shape, dtype, mesh))
        cur = after
    return _finish(cur, dst, steps, shape, dtype, mesh)


def _gather_all(shape, dtype, src: Sharding, dst: Sharding, mesh: Mesh) -> list[Step] | None:
    """The safe plan: every axis that changes is gathered or reduced (innermost first, so
    each gather acts on the innermost split left), then the rest is a local slice."""
    changes = {a for a in mesh.names if _placement(src, a) != _placement(dst, a)}
    # an axis inner to a changing split of the same dim must be gathered first as well
    cur, steps = src, []
    for axis in reversed(mesh.names):
        p, pv = _placement(cur, axis)
        if p == "R":
            continue
        needed = axis in changes or (p == "S" and any(
            b in changes for b in cur.dims[pv] if mesh.index(b) < mesh.index(axis)))
        if not needed:
            continue
        after = _without(cur, axis)
        kind = "all_reduce" if p == "P" else "all_gather"
        steps.append(_step(kind, axis, None, cur, after, shape, dtype, mesh))
        cur = after
    return _finish(cur, dst, steps, shape, dtype, mesh)


def _finish(cur: Sharding, dst: Sharding, steps: list[Step], shape, dtype, mesh) -> list[Step]:
    """Append the local step from ``cur`` to ``dst``: it may only split or make partials."""
    if cur != dst:
        for axis in mesh.names:
            p, q = _placement(cur, axis), _placement(dst, axis)
            if p != q and p[0] != "R":
                raise AssertionError(f"reshard plan left {cur} on {axis}, wanted {dst}")
        steps.append(Step("local", None, None, dst, 0))
    return steps


def reshard_bytes(shape: tuple[int, ...], dtype: DType, src: Sharding, dst: Sharding,
                  mesh: Mesh) -> int:
    """The bytes per rank of the plan from ``src`` to ``dst``."""
    return sum(s.bytes for s in _plan(tuple(shape), dtype, src, dst, mesh))
