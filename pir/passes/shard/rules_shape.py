"""SPMD rules of the shape prims: broadcast_in_dim, reshape, transpose, slice, pad, concat.

These ops move elements without combining them, so every partial kind carries (COPY).  A
dim stays split when each rank can compute its block alone: kept by transpose, reshape
(the outermost dim of each group of merged or split dims), the broadcast dims of
broadcast_in_dim; a sliced, padded or concatenated dim must be whole.
"""

from __future__ import annotations

from pir.ir.core import Operation
from pir.ir.dialects.dist import Mesh
from pir.ir.types import Dim
from pir.passes.shard.einsum import (
    COPY,
    Notation,
    carry_partials,
    fit_axes,
    shape_of,
    spmd_notation,
)
from pir.passes.shard.registry import Known, spmd_rule
from pir.passes.shard.sharding import Axes, Sharding, SpmdDecision

__all__ = ["reshape_groups"]


@spmd_notation("prim.broadcast_in_dim")
def broadcast_in_dim(op, L):
    """Operand dim i is result dim broadcast_dimensions[i], unless it is 1 and repeated;
    new and repeated result dims may be split (each rank repeats what it needs)."""
    xs, outs = shape_of(op.x), shape_of(op.out)
    out = L.fresh(op.out)
    x = "".join(L.new() if xs[i] == 1 and outs[r] != 1 else out[r]
                for i, r in enumerate(op.broadcast_dimensions))
    return Notation([x], [out], carry=COPY)


@spmd_notation("prim.transpose")
def transpose(op, L):
    x = L.fresh(op.x)
    return Notation([x], ["".join(x[p] for p in op.permutation)], carry=COPY)


def _whole(lo: int, hi: int, step: int, dim: Dim) -> bool:
    return lo == 0 and step == 1 and hi == dim


@spmd_notation("prim.slice")
def slice_(op, L):
    """A dim the slice cuts must be whole; a dim it keeps whole may stay split."""
    x = L.fresh(op.x)
    out = list(x)
    starts, limits = op.start_indices, op.limit_indices
    axes = op.axes or tuple(range(len(starts)))
    strides = op.strides or (1,) * len(starts)
    shape = shape_of(op.x)
    for a, lo, hi, step in zip(axes, starts, limits, strides):
        if not _whole(lo, hi, step, shape[a]):
            out[a] = L.new()
    fresh = {c for c in out if c not in x}
    return Notation([x], ["".join(out)], fixed=fresh, carry=COPY)


@spmd_notation("prim.pad")
def pad(op, L):
    """A padded dim must be whole; the padding value is a partial like x, when x is."""
    x = L.fresh(op.x)
    out = list(x)
    interior = op.interior_padding or (0,) * len(x)
    for a, pads in enumerate(zip(op.edge_padding_low, op.edge_padding_high, interior)):
        if any(pads):
            out[a] = L.new()
    fresh = {c for c in out if c not in x}
    return Notation([x, ""], ["".join(out)], fixed=fresh, carry=COPY)


@spmd_notation("prim.concat")
def concat(op, L):
    """The joined dim is whole; the others are split alike on every operand."""
    out = L.fresh(op.out)
    d = op.dimension
    ins = [out[:d] + L.new() + out[d + 1:] for _ in op.inputs]
    return Notation(ins, [out], fixed={out[d]}, carry=COPY)


# -- reshape ---------------------------------------------------------------------------------

def reshape_groups(src: tuple[Dim, ...], dst: tuple[Dim, ...]) -> list[tuple[list[int], list[int]]]:
    """Pairs (source dims, result dims) of the smallest runs with one element count: a dim
    kept (``[i], [j]``), merged (``[i, i+1], [j]``) or split (``[i], [j, j+1]``).  Runs of
    sizes that are not static and equal end the matching: the rest is one last pair (its
    element counts are still equal, so its outermost dims may still be split).  Each run's
    outermost dim split in n blocks is the run's elements in n contiguous blocks, on both
    sides: that is why the split may pass through."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) and j < len(dst):
        if src[i] == dst[j] and src[i] is not None:  # the same size or the same symbol
            groups.append(([i], [j]))
            i, j = i + 1, j + 1
            continue
        gi, gj, pi, pj = [i], [j], src[i], dst[j]
        i, j = i + 1, j + 1
        while isinstance(pi, int) and isinstance(pj, int) and pi != pj and pi and pj:
            if pi < pj and i < len(src):
                pi *= src[i] if isinstance(src[i], int) else 0
                gi.append(i)
                i += 1
            elif pj < pi and j < len(dst):
                pj *= dst[j] if isinstance(dst[j], int) else 0
                gj.append(j)
                j += 1
            else:
                break
        if not (isinstance(pi, int) and pi == pj and pi):
            groups.append((list(range(gi[0], len(src))), list(range(gj[0], len(dst)))))
            return groups
        groups.append((gi, gj))
    if i < len(src) or j < len(dst):  # trailing size-1 dims
        groups.append((list(range(i, len(src))), list(range(j, len(dst)))))
    return groups


def _lead(dims: list[int], shape: tuple[Dim, ...]) -> int | None:
    """The outermost dim of a run that is not 1: the only one that may stay split."""
    return next((d for d in dims if shape[d] != 1), None)


@spmd_rule("prim.reshape")
def reshape(op: Operation, ins: Known, outs: Known, mesh: Mesh) -> SpmdDecision:
    """Each run of merged or split dims keeps the split of its outermost dim, when the
    outermost dims on both sides divide by it (as Paddle's reshape rule); the other dims of
    the run are whole (their blocks would not be contiguous)."""
    src, dst = shape_of(op.x), shape_of(op.out)
    x_dims: list[Axes] = [()] * len(src)
    o_dims: list[Axes] = [()] * len(dst)
    taken: set[str] = set()
    for gi, gj in reshape_groups(src, dst):
        a, b = _lead(gi, src), _lead(gj, dst)
        if a is None or b is None:
            continue
        axes: Axes = ins[0].dims[a] if ins[0] is not None else ()
        if not axes and outs[0] is not None:
            axes = outs[0].dims[b]
        axes = tuple(x for x in axes if x not in taken)
        axes = fit_axes(fit_axes(axes, src[a], mesh), dst[b], mesh)
        x_dims[a], o_dims[b] = axes, axes
        taken.update(axes)
    need: list[dict[str, str]] = [{}]
    carried = carry_partials(COPY, ins, taken, need, mesh)
    return SpmdDecision((Sharding(tuple(x_dims), need[0]),), (Sharding(tuple(o_dims), carried),))
