"""How the fuse pass sees each op: its fusion kind, read from the op's traits and a small
table for the ops whose traits do not say enough (shape and data-movement ops).

Kinds, in the order CINN uses them:

- ``elementwise``: each output element depends on the same-index input elements (trait
  Elementwise: unary and binary math, compare, select, cast);
- ``broadcast``: ``prim.broadcast_in_dim``, which repeats its input (every reduction's
  result is broadcast back this way after decomposition);
- ``injective``: each output element reads one input element at a computed index (reshape,
  transpose, slice, pad, concat, gather, iota);
- ``reduction``: trait Reduction (reduce_sum/max/min/prod, argmax/argmin): these anchor groups;
- ``library``: ``prim.dot_general`` and ``prim.conv``, left to BLAS/cuBLAS/cuDNN: never in
  a group, but an elementwise consumer may be recorded as their epilogue;
- ``constant``: ``builtin.constant``, never in a group (a group takes it as an operand);
- ``opaque``: everything else (ops with side effects, sort, cumsum, scatter, non-prim ops,
  ops with regions): never in a group.
"""

from __future__ import annotations

from pir.ir.core import Operation
from pir.ir.dialects.builtin import ConstantOp
from pir.ir.opdef import Elementwise, Pure, Reduction

__all__ = ["kind_of", "FUSABLE", "LIBRARY_OPS", "reduction_signature", "why_not_fusable"]

ELEMENTWISE, BROADCAST, INJECTIVE, REDUCTION = "elementwise", "broadcast", "injective", "reduction"
LIBRARY, CONSTANT, OPAQUE = "library", "constant", "opaque"

#: The kinds an op may have to be put in a group.
FUSABLE = frozenset({ELEMENTWISE, BROADCAST, INJECTIVE, REDUCTION})

#: Heavy ops that libraries do best (DESIGN §6): they stay outside groups.
LIBRARY_OPS = frozenset({"prim.dot_general", "prim.conv"})

#: Shape and data-movement ops, which the traits do not classify.
_SHAPE_KINDS = {
    "prim.broadcast_in_dim": BROADCAST,
    "prim.reshape": INJECTIVE,
    "prim.transpose": INJECTIVE,
    "prim.slice": INJECTIVE,
    "prim.pad": INJECTIVE,
    "prim.concat": INJECTIVE,
    "prim.gather": INJECTIVE,
    "prim.dynamic_slice": INJECTIVE,
    "prim.iota": INJECTIVE,
}

#: Pure prim ops that are still kept out of groups, with the reason (explain shows it).
_OPAQUE_PRIMS = {
    "prim.sort": "a sort is not a loop nest over its output",
    "prim.cumsum": "a scan is not fused (yet)",
    "prim.scatter_add": "a scatter writes at data-dependent places",
    "prim.dynamic_update_slice": "an in-place update is not fused (yet)",
}


def kind_of(op: Operation) -> str:
    """The op's fusion kind (one of the constants above)."""
    if isinstance(op, ConstantOp):
        return CONSTANT
    name = op.name
    if not name.startswith("prim.") or op.regions or Pure not in op.traits:
        return OPAQUE
    if name in LIBRARY_OPS:
        return LIBRARY
    if name in _OPAQUE_PRIMS:
        return OPAQUE
    kind = _SHAPE_KINDS.get(name)
    if kind is not None:
        return kind
    if Reduction in op.traits:
        return REDUCTION
    if Elementwise in op.traits:
        return ELEMENTWISE
    return OPAQUE


def why_not_fusable(op: Operation, kind: str) -> str:
    """Why an op of a non-fusable kind stays outside groups (for explain)."""
    if kind == CONSTANT:
        return "constants stay outside groups (a group takes them as operands)"
    if kind == LIBRARY:
        return f"{op.name} is a library call and stays outside groups"
    if op.name in _OPAQUE_PRIMS:
        return f"{op.name} is opaque: {_OPAQUE_PRIMS[op.name]}"
    if not op.name.startswith("prim."):
        return f"{op.name} is not a prim op"
    if Pure not in op.traits:
        return f"{op.name} has side effects"
    if op.regions:
        return f"{op.name} holds regions"
    return f"{op.name} is not a fusable prim op"


def reduction_signature(op: Operation) -> tuple:
    """What must agree between the reductions of one group: the reduced input's shape and
    the reduced axes (a group is one loop nest over that input, CINN's reduce fusion)."""
    axes = tuple(op.axes) if hasattr(op, "axes") and op.axes is not None else (op.axis,)
    return (op.operands[0].type.shape, tuple(sorted(axes)))
