"""SPMD rules of the generators and sort: iota, sort, and the random draws (replicated)."""

from __future__ import annotations

from pir.passes.shard.einsum import Notation, spmd_notation
from pir.passes.shard.registry import replicate


@spmd_notation("prim.iota")
def iota(op, L):
    """The counted dim is whole (a block would count from 0); the others may be split
    when a consumer wants them so: the values do not depend on them."""
    out = L.fresh(op.out)
    return Notation([], [out], fixed={out[op.dimension]})


@spmd_notation("prim.sort")
def sort(op, L):
    """The sorted dim is whole; the others are split alike on x, values and indices."""
    x = L.fresh(op.x)
    return Notation([x], [x, x], fixed={x[op.axis]})


_RANDOM = ("the seed fixes the values of the whole tensor: a rank drawing only its block "
           "would draw other numbers than one device does")
replicate("prim.random_uniform", _RANDOM)
replicate("prim.random_normal", _RANDOM)
