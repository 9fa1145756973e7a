"""What SPMD rules compute with: a tensor's sharding as a dims mapping, and a rule's decision.

A :class:`Sharding` is the mesh-free form of a layout that rules reason with (Paddle's
``dims_mapping`` plus ``partial_status``): for each tensor dim, the mesh axes that split it
(outermost first, ``()`` when the dim is whole), and the mesh axes over which the tensor is a
partial value with their reduce kind.  ``Sharding(["dp", None])`` is a matrix split by rows
over ``dp``; ``Sharding([None, None], {"tp": "sum"})`` one that holds partial sums over
``tp``.  :meth:`Sharding.of_type` and :meth:`Sharding.to_type` convert to and from the
placements of a ``!dist.tensor`` on a given mesh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from pir.errors import PirError
from pir.ir.dialects.dist import (
    REDUCE_KINDS,
    DistTensorType,
    Mesh,
    Partial,
    Placement,
    Replicate,
    Shard,
)
from pir.ir.types import TensorType

__all__ = ["Axes", "Sharding", "SpmdDecision"]

#: The mesh axes that split one tensor dim, outermost first.
Axes = tuple[str, ...]


def _axes(entry) -> Axes:
    if entry is None:
        return ()
    if isinstance(entry, str):
        return (entry,)
    return tuple(entry)


@dataclass(frozen=True)
class Sharding:
    """A dims mapping (``dims[d]``: the mesh axes splitting dim ``d``) and the partial mesh
    axes (``(axis, kind)`` pairs, sorted by axis).  Built from lists, names or None per dim
    and a dict of partials; a mesh axis may appear only once in all of them."""

    dims: tuple[Axes, ...]
    partial: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        dims = tuple(_axes(e) for e in self.dims)
        partial = self.partial
        if isinstance(partial, Mapping):
            partial = partial.items()
        partial = tuple(sorted((str(a), str(k)) for a, k in partial))
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "partial", partial)
        seen: set[str] = set()
        for a in [a for d in dims for a in d] + [a for a, _ in partial]:
            if a in seen:
                raise PirError(f"mesh axis '{a}' is used twice in the sharding {self}")
            seen.add(a)
        for a, k in partial:
            if k not in REDUCE_KINDS:
                raise PirError(f"partial kind '{k}' of mesh axis '{a}' is not one of "
                               f"{', '.join(REDUCE_KINDS)}")

    @staticmethod
    def replicated(rank: int) -> Sharding:
        return Sharding(((),) * rank)

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def partial_axes(self) -> dict[str, str]:
        return dict(self.partial)

    @property
    def used_axes(self) -> set[str]:
        return {a for d in self.dims for a in d} | {a for a, _ in self.partial}

    @property
    def is_replicated(self) -> bool:
        return not self.used_axes

    def with_partial(self, partial: Mapping[str, str] | Iterable[tuple[str, str]]) -> Sharding:
        return Sharding(self.dims, partial)

    def without_partial(self) -> Sharding:
        return Sharding(self.dims)

    # -- placements --------------------------------------------------------------------------

    @staticmethod
    def of_type(t: TensorType) -> Sharding:
        """The sharding of a value's type: a plain tensor is whole on every rank."""
        if t.shape is None:
            raise PirError(f"a sharding needs a ranked tensor, got {t}")
        if not isinstance(t, DistTensorType):
            return Sharding.replicated(len(t.shape))
        return Sharding.of_placements(t.placements, t.mesh, len(t.shape))

    @staticmethod
    def of_placements(placements: Iterable[Placement], mesh: Mesh, rank: int) -> Sharding:
        dims: list[list[str]] = [[] for _ in range(rank)]
        partial = {}
        for (axis, _), p in zip(mesh.axes, placements):
            if isinstance(p, Shard):
                dims[p.dim].append(axis)
            elif isinstance(p, Partial):
                partial[axis] = p.reduce
        return Sharding(tuple(tuple(d) for d in dims), partial)

    def placements(self, mesh: Mesh) -> tuple[Placement, ...]:
        """One placement per mesh axis; the axes of a dim must be in mesh order (the
        placements cannot say another nesting)."""
        out: list[Placement] = [Replicate() for _ in mesh.axes]
        try:
            for d, axes in enumerate(self.dims):
                order = [mesh.index(a) for a in axes]
                if order != sorted(order):
                    raise PirError(f"dim {d} is split by {', '.join(axes)}, not in the order "
                                   f"of {mesh}: placements split a dim by axes in mesh order")
                for i in order:
                    out[i] = Shard(d)
            for a, k in self.partial:
                out[mesh.index(a)] = Partial(k)
        except ValueError as e:
            raise PirError(str(e)) from None
        return tuple(out)

    def to_type(self, t: TensorType, mesh: Mesh) -> DistTensorType:
        """``t``'s global shape and element type laid out by this sharding on ``mesh``."""
        if t.shape is None or len(t.shape) != self.rank:
            raise PirError(f"the sharding {self} has rank {self.rank}, the tensor is {t}")
        try:
            return DistTensorType(t.dtype, t.shape, mesh, self.placements(mesh))
        except ValueError as e:
            raise PirError(f"cannot lay out {t.tensor if isinstance(t, DistTensorType) else t} "
                           f"as {self}: {e}") from None

    def __str__(self) -> str:
        def dim(axes: Axes) -> str:
            if not axes:
                return "_"
            return axes[0] if len(axes) == 1 else "(" + ",".join(axes) + ")"

        text = "[" + ", ".join(dim(a) for a in self.dims) + "]"
        if self.partial:
            text += " partial{" + ", ".join(f"{a}={k}" for a, k in self.partial) + "}"
        return text


@dataclass(frozen=True)
class SpmdDecision:
    """What a rule decides for one op: the sharding each operand must have (the propagation
    inserts a reshard where it has another) and the sharding of each result."""

    inputs: tuple[Sharding, ...]
    outputs: tuple[Sharding, ...]

    def __str__(self) -> str:
        return (", ".join(map(str, self.inputs)) + " -> " + ", ".join(map(str, self.outputs)))
