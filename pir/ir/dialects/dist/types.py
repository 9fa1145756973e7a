"""Meshes, placements and the distributed tensor type of the ``dist`` dialect.

A **mesh** names the axes of a grid of ranks with their sizes (``mesh<dp=2,tp=2>``); ranks are
numbered row-major over the axes, the last axis fastest, so rank 1 of ``dp=2,tp=2`` has the
coordinates ``(dp=0, tp=1)``.

A **placement** says how a tensor is laid out along one mesh axis:

- ``R``: replicated; every rank along the axis holds the same data;
- ``S(d)``: sharded; tensor dim ``d`` is split into equal contiguous blocks, one per rank
  along the axis, in coordinate order;
- ``P(sum)``, ``P(avg)``, ``P(max)``, ``P(min)``: partial; every rank along the axis holds a
  tensor of the full (local) shape, and the value is the sum, mean, maximum or minimum of
  them.  ``P`` alone reads as ``P(sum)``.

A **distributed tensor type** is a tensor type with a mesh and one placement per mesh axis,
printed on every use of the value::

    !dist.tensor<8x16xf32, mesh<dp=2,tp=2>, [S(0), R]>

Its shape is the *global* (logical) shape; :meth:`DistTensorType.local_shape` gives the
block one rank holds.  A dim split by several mesh axis is split by the axes in mesh order,
the first the outermost: with ``[S(0), S(0)]`` on ``dp=2,tp=2`` rank ``(dp=i, tp=j)`` holds
block ``2*i + j`` of dim 0.  A static dim must be divisible by the product of the sizes of
the axes that split it (there is no padding: an uneven split is an error); a symbolic dim is
checked when the program runs.  Partial placements of one tensor are all ``sum``/``avg``, or
all ``max``, or all ``min``: a mix of kinds that do not commute (a sum of maxima) would make
the value depend on the order the axes are reduced in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import prod

from pir.ir.types import Dim, TensorType, parse_tensor_body, register_dialect_type

__all__ = ["Mesh", "Placement", "Replicate", "Shard", "Partial", "REDUCE_KINDS",
           "DistTensorType", "parse_placement", "parse_placements"]

#: How a Partial placement combines the ranks' values.
REDUCE_KINDS = ("sum", "avg", "max", "min")

_AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Mesh:
    """Named axes with sizes: ``Mesh((("dp", 2), ("tp", 2)))``, printed ``mesh<dp=2,tp=2>``."""

    axes: tuple[tuple[str, int], ...]

    def __post_init__(self) -> None:
        axes = tuple((str(n), s) for n, s in self.axes)
        object.__setattr__(self, "axes", axes)
        if not axes:
            raise ValueError("a mesh needs at least one axis")
        seen = set()
        for name, size in axes:
            if not _AXIS_NAME.match(name):
                raise ValueError(f"mesh axis name '{name}' is not an identifier")
            if name in seen:
                raise ValueError(f"mesh axis '{name}' appears twice")
            seen.add(name)
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ValueError(f"mesh axis '{name}' has size {size!r}; sizes are positive "
                                 "integers")

    @staticmethod
    def parse(text: str) -> Mesh:
        """``dp=2,tp=2`` (the command line's ``--mesh``), or ``mesh<dp=2,tp=2>``."""
        body = text.strip()
        if body.startswith("mesh<") and body.endswith(">"):
            body = body[len("mesh<"):-1]
        axes = []
        for part in body.split(","):
            name, eq, size = part.partition("=")
            if not eq or not size.strip().isdigit():
                raise ValueError(f"bad mesh '{text}': expected axes like dp=2,tp=2")
            axes.append((name.strip(), int(size)))
        return Mesh(tuple(axes))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(s for _, s in self.axes)

    @property
    def num_ranks(self) -> int:
        return prod(self.shape)

    def index(self, axis: str) -> int:
        """The position of ``axis`` in the mesh; ValueError names the known axes."""
        for i, (n, _) in enumerate(self.axes):
            if n == axis:
                return i
        raise ValueError(f"the mesh {self} has no axis '{axis}'")

    def size(self, axis: str) -> int:
        return self.axes[self.index(axis)][1]

    def coords(self, rank: int) -> tuple[int, ...]:
        """The coordinates of ``rank`` (row-major, the last axis fastest)."""
        out = []
        for s in reversed(self.shape):
            out.append(rank % s)
            rank //= s
        return tuple(reversed(out))

    def rank(self, coords) -> int:
        r = 0
        for c, s in zip(coords, self.shape):
            r = r * s + c
        return r

    def group(self, rank: int, axis: str) -> list[int]:
        """The ranks that differ from ``rank`` only along ``axis``, in coordinate order."""
        i = self.index(axis)
        c = list(self.coords(rank))
        out = []
        for k in range(self.shape[i]):
            c[i] = k
            out.append(self.rank(c))
        return out

    def __str__(self) -> str:
        return "mesh<" + ",".join(f"{n}={s}" for n, s in self.axes) + ">"


class Placement:
    """How a tensor is laid out along one mesh axis: Replicate, Shard or Partial."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Replicate(Placement):
    def __str__(self) -> str:
        return "R"


@dataclass(frozen=True, slots=True)
class Shard(Placement):
    dim: int

    def __post_init__(self) -> None:
        if isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim < 0:
            raise ValueError(f"a shard dim is a non-negative integer, got {self.dim!r}")

    def __str__(self) -> str:
        return f"S({self.dim})"


@dataclass(frozen=True, slots=True)
class Partial(Placement):
    reduce: str = "sum"

    def __post_init__(self) -> None:
        if self.reduce not in REDUCE_KINDS:
            raise ValueError(f"a partial reduces with one of {', '.join(REDUCE_KINDS)}, got "
                             f"'{self.reduce}'")

    def __str__(self) -> str:
        return f"P({self.reduce})"


_PLACEMENT = re.compile(r"\s*(?:(R)|S\(\s*(\d+)\s*\)|(P)(?:\(\s*([a-z]+)\s*\))?)\s*\Z")


def parse_placement(text: str) -> Placement:
    """``R``, ``S(1)``, ``P(sum)`` (``P`` alone is ``P(sum)``)."""
    m = _PLACEMENT.match(text)
    if m is None:
        raise ValueError(f"bad placement '{text.strip()}': expected R, S(dim) or "
                         "P(sum|avg|max|min)")
    if m.group(1):
        return Replicate()
    if m.group(2) is not None:
        return Shard(int(m.group(2)))
    return Partial(m.group(4) or "sum")


def parse_placements(text: str) -> tuple[Placement, ...]:
    """``[R, S(1)]``: one placement per mesh axis."""
    body = text.strip()
    if not (body.startswith("[") and body.endswith("]")):
        raise ValueError(f"placements are a list like [R, S(1)], got '{text.strip()}'")
    body = body[1:-1].strip()
    return tuple(parse_placement(p) for p in body.split(",")) if body else ()


def _commuting_kinds(kinds: set[str]) -> bool:
    return len(kinds) <= 1 or kinds <= {"sum", "avg"}


@dataclass(frozen=True, slots=True)
class DistTensorType(TensorType):
    """A tensor of the global shape ``shape``, laid out over ``mesh`` by ``placements`` (one
    per mesh axis).  A TensorType, so shape-based code reads the global shape; it compares
    unequal to the plain tensor type of the same shape.  ``with_shape``/``with_dtype`` (what
    type rules call) give plain tensor types: a result's layout is the SPMD rules' business."""

    mesh: Mesh
    placements: tuple[Placement, ...]

    def __post_init__(self) -> None:
        TensorType.__post_init__(self)
        if self.shape is None:
            raise ValueError("a distributed tensor must be ranked")
        if not isinstance(self.mesh, Mesh):
            raise TypeError(f"mesh must be a Mesh, got {self.mesh!r}")
        if not isinstance(self.placements, tuple):
            object.__setattr__(self, "placements", tuple(self.placements))
        if len(self.placements) != len(self.mesh.axes):
            raise ValueError(f"{len(self.placements)} placements for the "
                             f"{len(self.mesh.axes)} axes of {self.mesh}: give one per axis")
        kinds = set()
        for (axis, _), p in zip(self.mesh.axes, self.placements):
            if not isinstance(p, Placement):
                raise TypeError(f"placement must be R, S(d) or P(kind), got {p!r}")
            if isinstance(p, Shard) and p.dim >= len(self.shape):
                raise ValueError(f"S({p.dim}) on mesh axis '{axis}': the tensor has rank "
                                 f"{len(self.shape)}")
            if isinstance(p, Partial):
                kinds.add(p.reduce)
        if not _commuting_kinds(kinds):
            raise ValueError(f"partial placements {', '.join(sorted(kinds))} do not commute: "
                             "mix only sum and avg")
        for d, size in enumerate(self.shape):
            n = self.split(d)
            if isinstance(size, int) and size % n:
                axes = ", ".join(self.shard_axes(d))
                raise ValueError(f"dim {d} ({size}) is not divisible by {n}, the ranks of "
                                 f"mesh axes {axes} that shard it")

    def shard_axes(self, dim: int) -> tuple[str, ...]:
        """The mesh axes that split ``dim``, outermost first (mesh order)."""
        return tuple(a for (a, _), p in zip(self.mesh.axes, self.placements)
                     if isinstance(p, Shard) and p.dim == dim)

    def split(self, dim: int) -> int:
        """Into how many blocks ``dim`` is split."""
        return prod(self.mesh.size(a) for a in self.shard_axes(dim))

    @property
    def partial_axes(self) -> dict[str, str]:
        """``{mesh axis: reduce kind}`` of the Partial placements."""
        return {a: p.reduce for (a, _), p in zip(self.mesh.axes, self.placements)
                if isinstance(p, Partial)}

    def local_shape(self) -> tuple[Dim, ...]:
        """The shape of the block one rank holds (a split symbolic dim becomes ``None``)."""
        out: list[Dim] = []
        for d, size in enumerate(self.shape):
            n = self.split(d)
            out.append(size if n == 1 else (size // n if isinstance(size, int) else None))
        return tuple(out)

    @property
    def tensor(self) -> TensorType:
        """The plain tensor type of the global value."""
        return TensorType(self.dtype, self.shape)

    def placement(self, axis: str) -> Placement:
        return self.placements[self.mesh.index(axis)]

    def with_placement(self, axis: str, placement: Placement) -> DistTensorType:
        ps = list(self.placements)
        ps[self.mesh.index(axis)] = placement
        return DistTensorType(self.dtype, self.shape, self.mesh, tuple(ps))

    def __str__(self) -> str:
        inner = TensorType.__str__(self)[len("tensor<"):-1]
        ps = ", ".join(map(str, self.placements))
        return f"!dist.tensor<{inner}, {self.mesh}, [{ps}]>"


def _parse_dist_tensor(body: str) -> DistTensorType:
    """The body of ``!dist.tensor<8x16xf32, mesh<dp=2,tp=2>, [S(0), R]>``."""
    m = re.fullmatch(r"\s*([^,<>]+?)\s*,\s*(mesh<[^<>]*>)\s*,\s*(\[.*\])\s*", body)
    if m is None:
        raise ValueError("expected SHAPExDTYPE, mesh<axis=size,...>, [placements]")
    t = parse_tensor_body(m.group(1))
    return DistTensorType(t.dtype, t.shape, Mesh.parse(m.group(2)), parse_placements(m.group(3)))


register_dialect_type("dist.tensor", _parse_dist_tensor)
