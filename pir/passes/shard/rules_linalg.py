"""SPMD rules of the contractions: dot_general and conv.

Both are linear in each operand, so one partial operand (sum or mean) carries to the result
(LINEAR).  A split contracting dim leaves each rank with part of the sum: the result is
``P(sum)``, which is how row-parallel matmuls (Megatron's second MLP layer) arise.
"""

from __future__ import annotations

from pir.passes.shard.einsum import LINEAR, Notation, spmd_notation


@spmd_notation("prim.dot_general")
def dot_general(op, L):
    """Batch dims split alike on both sides and the result; free dims carry to the result;
    contracting dims split alike on both sides give P(sum)."""
    lb, rb = op.lhs_batching_dimensions, op.rhs_batching_dimensions
    lc, rc = op.lhs_contracting_dimensions, op.rhs_contracting_dimensions
    lhs, rhs = L.fresh(op.lhs), list(L.fresh(op.rhs))
    for a, b in zip(lb + lc, rb + rc):
        rhs[b] = lhs[a]
    out = ([lhs[a] for a in lb] + [c for a, c in enumerate(lhs) if a not in lb + lc]
           + [c for b, c in enumerate(rhs) if b not in rb + rc])
    return Notation([lhs, "".join(rhs)], ["".join(out)], reduced={lhs[a]: "sum" for a in lc},
                    carry=LINEAR)


@spmd_notation("prim.conv")
def conv(op, L):
    """x [N, C, S..], kernel [O, C/G, K..] -> out [N, O, S'..]: the batch N and the output
    channels O may be split; the input channels C are contracted (P(sum)) when there is one
    group; with several groups only N may be split (a block of channels would not hold
    whole groups).  Spatial dims are whole: a window reaches over block edges."""
    x, k, out = L.fresh(op.x), list(L.fresh(op.kernel)), list(L.fresh(op.out))
    out[0], out[1] = x[0], k[0]
    fixed = set(x[2:]) | set(k[2:]) | set(out[2:])
    reduced = {}
    if op.feature_group_count == 1:
        k[1] = x[1]
        reduced[x[1]] = "sum"
    else:
        fixed |= {x[1], k[0], k[1]}
    return Notation([x, "".join(k)], ["".join(out)], reduced=reduced, fixed=fixed, carry=LINEAR)
