"""Helpers for op type rules: broadcasting with symbolic dims, reductions, constants.

Type rules return the most precise type they can; a dim they cannot know is ``None``, and a
shape they cannot know at all makes an unranked tensor.  The verifier accepts declared types
that refine the inferred ones (see ``types_compatible``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from pir.errors import PirError
from pir.ir import dimexpr
from pir.ir.core import Value
from pir.ir.types import Dim, DType, TensorType

__all__ = [
    "tensor",
    "broadcast_dims",
    "broadcast_shapes",
    "normalize_axis",
    "reduce_shape",
    "const_value",
    "shape_of",
    "MAX_RANK",
]

#: The most dims a tensor may have.  numpy (the reference runtime, and folding at import)
#: holds at most 64 (NPY_MAXDIMS in numpy 2), so a tensor of more cannot be made, and no model
#: comes near it; a rank read from a file (a shape operand's length, a type's dim count) is
#: checked against this before anything is built from it.
MAX_RANK = 64


def tensor(v: Value) -> TensorType:
    """The operand's type, which must be a tensor."""
    if v is None:  # an absent operand the rule needs (a required input left out, or "")
        raise PirError("expected a tensor, got a missing operand")
    t = v.type
    if not isinstance(t, TensorType):
        raise PirError(f"expected a tensor, got {t}")
    return t


def shape_of(v: Value) -> tuple[Dim, ...] | None:
    return tensor(v).shape


def broadcast_dims(a: Dim, b: Dim) -> Dim:
    """numpy broadcasting of two dims, where dims may be symbols or unknown."""
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        raise PirError(f"dims {a} and {b} do not broadcast")
    # a dim that can never be 1 (a size other than 1, an even expression such as
    # 2*((H + 31) floordiv 32)) cannot be the stretched side: the other must equal it
    if dimexpr.never_one(a):
        return a
    if dimexpr.never_one(b):
        return b
    return None  # two different symbols, or unknown


def broadcast_shapes(*shapes: tuple[Dim, ...] | None) -> tuple[Dim, ...] | None:
    if any(s is None for s in shapes):
        return None
    first = shapes[0]
    if all(s == first for s in shapes):  # the common case: nothing to broadcast
        return tuple(first)
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = [1] * rank
    for s in shapes:
        padded = (1,) * (rank - len(s)) + tuple(s)
        out = [broadcast_dims(a, b) for a, b in zip(out, padded)]
    return tuple(out)


def normalize_axis(axis: int, rank: int) -> int:
    if not isinstance(axis, (int, np.integer)):  # an attribute the model left untyped
        raise PirError(f"axis must be an integer, got {axis!r}")
    if not -rank <= axis < max(rank, 1):
        raise PirError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def reduce_shape(shape: tuple[Dim, ...] | None, axes: Sequence[int] | None,
                 keepdims: bool) -> tuple[Dim, ...] | None:
    """The shape after reducing ``axes`` (all axes when ``axes`` is None or empty)."""
    if shape is None:
        return None
    rank = len(shape)
    axes_set = set(range(rank)) if not axes else {normalize_axis(a, rank) for a in axes}
    if keepdims:
        return tuple(1 if i in axes_set else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes_set)


def const_value(v: Value | None) -> np.ndarray | None:
    """The value of ``v`` when it is produced by a ``builtin.constant``, else None."""
    if v is None:
        return None
    from pir.ir.dialects.builtin import ConstantOp, constant_value

    owner = getattr(v, "op", None)
    if isinstance(owner, ConstantOp):
        try:
            return constant_value(owner)
        except PirError:
            return None
    return None


def same_type(v: Value) -> list[TensorType]:
    return [tensor(v)]


def with_dtype(v: Value, dtype: DType) -> list[TensorType]:
    return [tensor(v).with_dtype(dtype)]
