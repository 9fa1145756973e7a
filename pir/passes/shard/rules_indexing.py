"""SPMD rules of the indexing prims: gather, scatter_add, dynamic_slice, dynamic_update_slice.

The dim that indices (or run-time starts) address must be whole, since a rank cannot tell
which of its elements an index hits without knowing its block; the other dims of the data,
and every dim of the indices, may be split.  Index operands are never partial.
"""

from __future__ import annotations

from pir.passes.shard.einsum import (
    ADDITIVE,
    COPY,
    Letters,
    Notation,
    shape_of,
    solve,
    spmd_notation,
)
from pir.passes.shard.registry import spmd_rule
from pir.passes.shard.sharding import SpmdDecision


@spmd_notation("prim.gather")
def gather(op, L):
    """out[a.., i.., b..] = x[a.., indices[i..], b..]: x's other dims and the indices' dims
    carry to the result; x's indexed dim is whole."""
    x, i, axis = L.fresh(op.x), L.fresh(op.indices), op.axis
    return Notation([x, i], [x[:axis] + i + x[axis + 1:]], carry=COPY.on(0))


def _scatter_notation(op, L: Letters) -> Notation:
    x, i, axis = L.fresh(op.x), L.fresh(op.indices), op.axis
    updates = x[:axis] + i + x[axis + 1:]
    return Notation([x, i, updates], [x], reduced={c: "sum" for c in i}, fixed={x[axis]},
                    carry=ADDITIVE.on(0, 2))


@spmd_rule("prim.scatter_add")
def scatter_add(op, ins, outs, mesh) -> SpmdDecision:
    """out = x + updates scattered at indices: x's indexed dim is whole; when the indices
    (and updates) are split, each rank scatters its part, so the result is a partial sum,
    and x must be one too (else each rank would add it once)."""
    d = solve(op, _scatter_notation(op, Letters()), ins, outs, mesh)
    split = {a for axes in d.inputs[1].dims for a in axes}
    if not split:
        return d
    x = d.inputs[0].with_partial({**d.inputs[0].partial_axes, **{a: "sum" for a in split}})
    return SpmdDecision((x, *d.inputs[1:]), d.outputs)


scatter_add.notation = _scatter_notation  # type: ignore[attr-defined]


@spmd_notation("prim.dynamic_slice")
def dynamic_slice(op, L):
    """A dim the window takes whole may stay split; the others (and the starts) are whole."""
    x = L.fresh(op.x)
    out = "".join(c if size == d else L.new()
                  for c, size, d in zip(x, op.slice_sizes, shape_of(op.x)))
    fresh = {c for c in out if c not in x}
    return Notation([x, L.new()], [out], fixed=fresh, carry=COPY.on(0))


@spmd_notation("prim.dynamic_update_slice")
def dynamic_update_slice(op, L):
    """A dim the update covers whole may stay split, alike on x, the update and the result;
    a dim it covers in part is whole."""
    x, xs, us = L.fresh(op.x), shape_of(op.x), shape_of(op.update)
    update = "".join(c if u == d and d is not None else L.new() for c, u, d in zip(x, us, xs))
    fixed = {c for c, u in zip(x, update) if c != u}
    return Notation([x, update, L.new()], [x], fixed=fixed, carry=COPY.on(0, 1))




__all__ = ["gather", "scatter_add", "dynamic_slice", "dynamic_update_slice"]
