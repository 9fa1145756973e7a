"""One SPMD rule for every elementwise prim op (unary, binary, compares, select, cast).

Prim ops do not broadcast implicitly, so every operand and result of an elementwise op has
one shape and shares one letter per dim: a dim split on one operand is split the same way on
all of them and on the result (``prim.broadcast_in_dim``, in ``rules_shape.py``, is where
broadcasting happens).  What differs between the ops is only how partial operands carry
(:data:`CARRY`): sums and means through the ops linear in their operands, maxima and minima
through the monotone non-decreasing ones; every other op needs whole operands.
"""

from __future__ import annotations

from pir.ir.core import OPS
from pir.ir.dialects import load_dialects
from pir.ir.opdef import Elementwise
from pir.ir.types import DType
from pir.passes.shard.einsum import (
    ADDITIVE,
    COPY,
    LINEAR,
    MONOTONE,
    Carry,
    Notation,
    spmd_notation,
)

load_dialects()  # declares the ops listed below
#: The elementwise prim ops (every op with the Elementwise trait).
ELEMENTWISE = sorted(n for n, c in OPS.items() if n.startswith("prim.") and Elementwise in c.traits)

#: How partial operands carry through an elementwise op (others: not at all).
CARRY: dict[str, Carry] = {
    "prim.add": ADDITIVE,  # sum(a_r) + sum(b_r) = sum(a_r + b_r)
    "prim.sub": ADDITIVE,
    "prim.neg": ADDITIVE,
    "prim.mul": LINEAR,  # sum(a_r) * b = sum(a_r * b)
    "prim.div": LINEAR.on(0),  # linear in the dividend only
    "prim.max": Carry("all", frozenset({"max"})),  # max(max a_r, max b_r) = max(max(a_r, b_r))
    "prim.min": Carry("all", frozenset({"min"})),
    "prim.select": COPY.on(1, 2),  # picks elements of on_true/on_false; pred stays whole
}
#: Monotone non-decreasing functions: f(max a_r) = max f(a_r), likewise min.
for _name in ("exp", "log", "log1p", "expm1", "sqrt", "tanh", "sinh", "asinh", "asin", "atan",
              "acosh", "atanh", "erf", "logistic", "sign", "floor", "ceil", "round"):
    CARRY[f"prim.{_name}"] = MONOTONE


def carry_of(op) -> Carry | None:
    if op.name == "prim.cast":  # monotone, except x != 0 (the cast to i1)
        return None if op.dtype is DType.BOOL else MONOTONE
    return CARRY.get(op.name)


@spmd_notation(*ELEMENTWISE)
def elementwise(op, L):
    """All operands and results share one letter per dim."""
    word = L.fresh(op.results[0])
    return Notation([word] * len(op.operands), [word] * len(op.results), carry=carry_of(op))
