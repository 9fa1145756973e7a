"""SPMD rules of the reductions: reduce_sum/prod/max/min, argmax/argmin, cumsum.

A reduced dim that is split leaves each rank with the reduction of its block: the result is
then partial, of the reduction's kind (sum -> P(sum), max -> P(max), min -> P(min); prim has
no mean: a mean is reduce_sum then a division, which keeps the P(sum)).  A product has no
partial kind, and an arg-reduction or a scan needs the whole dim, so those dims are whole.
"""

from __future__ import annotations

from pir.passes.shard.einsum import ADDITIVE, Carry, Notation, spmd_notation

#: The partial kind a split reduced dim gives, and how a partial operand carries.
REDUCTIONS: dict[str, tuple[str | None, Carry | None]] = {
    "prim.reduce_sum": ("sum", ADDITIVE),
    "prim.reduce_max": ("max", Carry("all", frozenset({"max"}))),
    "prim.reduce_min": ("min", Carry("all", frozenset({"min"}))),
    "prim.reduce_prod": (None, None),
}


def _drop(x: str, axes, keepdims: bool, L) -> str:
    """x's letters without ``axes`` (new size-1 letters in their place with keepdims)."""
    return "".join((L.new() if keepdims else "") if a in axes else c for a, c in enumerate(x))


@spmd_notation(*REDUCTIONS)
def reduce(op, L):
    kind, carry = REDUCTIONS[op.name]
    x = L.fresh(op.x)
    reduced = {x[a]: kind for a in op.axes} if kind else {}
    return Notation([x], [_drop(x, op.axes, op.keepdims, L)], reduced=reduced, carry=carry)


@spmd_notation("prim.argmax", "prim.argmin")
def arg_reduce(op, L):
    """The reduced dim is whole (an index of a block is not an index of the whole)."""
    x = L.fresh(op.x)
    return Notation([x], [_drop(x, (op.axis,), op.keepdims, L)])


@spmd_notation("prim.cumsum")
def cumsum(op, L):
    """The scanned dim is whole; a partial sum stays one (a scan is linear)."""
    x = L.fresh(op.x)
    return Notation([x], [x], fixed={x[op.axis]}, carry=ADDITIVE)
