"""Shape primitives: broadcast_in_dim, reshape, transpose, slice, pad, concat.

``broadcast_in_dim`` and ``reshape`` take their result shape from the declared result type
(build them with ``result_types=[...]``), since a result dim may be a symbol (``B``) that no
attribute can hold; their type rules check the declared type against the operand.  The others
compute their result type from static integer attributes, symbolic dims included: a pad of
``H`` by 1 on each side is ``H + 2``, a concat of ``H`` and ``2*H`` is ``3*H``.
"""

from __future__ import annotations

from math import prod

from pir.errors import PirError
from pir.ir import dimexpr as de
from pir.ir.attributes import INT, INTS
from pir.ir.dialects.prim.base import (
    ANY,
    DeclaredResultOp,
    PrimOp,
    check_axes,
    check_axis,
    merge_dim,
    operand_type,
    same_dtype,
    show,
)
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.types import Dim, TensorType

__all__ = ["BroadcastInDimOp", "ReshapeOp", "TransposeOp", "SliceOp", "PadOp", "ConcatOp"]


class BroadcastInDimOp(DeclaredResultOp):
    """out = x broadcast to the declared result shape; operand dim i becomes result dim
    ``broadcast_dimensions[i]`` and must equal it or be 1 (StableHLO's broadcast_in_dim).
    The other result dims are new.  This is the only way prim ops broadcast."""

    name = "prim.broadcast_in_dim"
    traits = frozenset({Pure})
    x = operand(dtypes=ANY)
    broadcast_dimensions = attr(INTS)
    out = result()

    def infer(self):
        t, out = operand_type(self.x, "x"), self.declared()
        if t.dtype != out.dtype:
            raise PirError(f"result element type {out.dtype.value} differs from x's "
                           f"{t.dtype.value}")
        dims = check_axes(self.broadcast_dimensions, len(out.shape), "broadcast_dimensions")
        if t.shape is None:
            return [out]
        if len(dims) != len(t.shape):
            raise PirError(f"broadcast_dimensions has {len(dims)} entries for an operand of "
                           f"rank {len(t.shape)}")
        for i, (d, r) in enumerate(zip(t.shape, dims)):
            target = out.shape[r]
            if d != 1 and d is not None and target is not None and d != target:
                raise PirError(f"operand dim {i} ({d}) can not broadcast to result dim {r} "
                               f"({target}): it must be equal or 1")
        return [out]


class ReshapeOp(DeclaredResultOp):
    """out = x with the declared result shape, elements in row-major order.  The element
    counts must agree: statically checked after cancelling symbols present on both sides."""

    name = "prim.reshape"
    traits = frozenset({Pure})
    x = operand(dtypes=ANY)
    out = result()

    def infer(self):
        t, out = operand_type(self.x, "x"), self.declared()
        if t.dtype != out.dtype:
            raise PirError(f"result element type {out.dtype.value} differs from x's "
                           f"{t.dtype.value}")
        if t.shape is not None:
            _check_same_count(t.shape, out.shape)
        return [out]


def _check_same_count(src: tuple[Dim, ...], dst: tuple[Dim, ...]) -> None:
    """Raise when src and dst provably hold different numbers of elements."""
    left, right = list(src), list(dst)
    for d in list(left):  # symbols and expressions on both sides cancel
        if d is not None and not isinstance(d, int) and d in right:
            left.remove(d)
            right.remove(d)
    if all(isinstance(d, int) for d in left + right) and prod(left) != prod(right):
        raise PirError(f"cannot reshape {show(src)} to {show(dst)}: the element counts differ")


class TransposeOp(PrimOp):
    """out = x with its dims permuted: result dim i is operand dim ``permutation[i]``."""

    name = "prim.transpose"
    traits = frozenset({Pure})
    x = operand(dtypes=ANY)
    permutation = attr(INTS)
    out = result()

    def infer(self):
        t = operand_type(self.x, "x")
        perm = self.permutation
        rank = t.rank if t.rank is not None else len(perm)
        if sorted(perm) != list(range(rank)):
            raise PirError(f"permutation {list(perm)} is not a permutation of the {rank} dims")
        return [t.with_shape(None if t.shape is None else [t.shape[p] for p in perm])]


class SliceOp(PrimOp):
    """out = x[start:limit:stride] along ``axes`` (default: every axis, in order); other axes
    are kept whole, so they may be symbolic.  Needs 0 <= start <= limit <= dim and stride >= 1
    (no negative or clamped indices: a primitive is exact).  Result dim: ceil((limit - start)
    / stride)."""

    name = "prim.slice"
    traits = frozenset({Pure})
    x = operand(dtypes=ANY)
    start_indices = attr(INTS)
    limit_indices = attr(INTS)
    strides = attr(INTS, ())
    axes = attr(INTS, ())
    out = result()

    def infer(self):
        t = operand_type(self.x, "x")
        starts, limits = self.start_indices, self.limit_indices
        axes = self.axes or tuple(range(len(starts)))
        strides = self.strides or (1,) * len(starts)
        if not len(starts) == len(limits) == len(strides) == len(axes):
            raise PirError(f"start_indices, limit_indices, strides and axes have different "
                           f"lengths ({len(starts)}, {len(limits)}, {len(strides)}, {len(axes)})")
        if not self.axes and t.rank is not None and len(starts) != t.rank:
            raise PirError(f"without axes, start_indices needs one entry per dim ({t.rank}), "
                           f"has {len(starts)}")
        check_axes(axes, t.rank)
        if t.shape is None:
            return [t]
        shape = list(t.shape)
        for a, lo, hi, step in zip(axes, starts, limits, strides):
            if step < 1 or not 0 <= lo <= hi:
                raise PirError(f"axis {a}: slice {lo}:{hi}:{step} needs 0 <= start <= limit "
                               "and stride >= 1")
            if isinstance(shape[a], int) and hi > shape[a]:
                raise PirError(f"axis {a}: limit {hi} is past the dim ({shape[a]})")
            shape[a] = -(-(hi - lo) // step)
        return [t.with_shape(shape)]


class PadOp(PrimOp):
    """out = x padded with the scalar ``padding_value``: ``edge_padding_low``/``_high`` elements
    before/after each dim (negative values crop) and ``interior_padding`` (default 0) between
    neighbouring elements, as StableHLO's pad.  Result dim: low + d + (d - 1) * interior + high."""

    name = "prim.pad"
    traits = frozenset({Pure})
    x = operand(dtypes=ANY)
    padding_value = operand(dtypes=ANY)
    edge_padding_low = attr(INTS)
    edge_padding_high = attr(INTS)
    interior_padding = attr(INTS, ())
    out = result()

    def infer(self):
        dtype = same_dtype([("x", self.x), ("padding_value", self.padding_value)])
        t, v = self.x.type, self.padding_value.type
        if v.shape is not None and v.shape != ():
            raise PirError(f"padding_value must be a scalar (rank 0), got {v}")
        low, high = self.edge_padding_low, self.edge_padding_high
        interior = self.interior_padding or (0,) * len(low)
        if not len(low) == len(high) == len(interior):
            raise PirError("edge_padding_low, edge_padding_high and interior_padding have "
                           f"different lengths ({len(low)}, {len(high)}, {len(interior)})")
        if any(i < 0 for i in interior):
            raise PirError(f"interior_padding {list(interior)} must not be negative")
        if t.shape is None:
            return [TensorType(dtype, None)]
        if len(low) != len(t.shape):
            raise PirError(f"the padding has {len(low)} entries for an operand of rank "
                           f"{len(t.shape)}")
        shape: list[Dim] = []
        for a, (d, lo, hi, mid) in enumerate(zip(t.shape, low, high, interior)):
            if not isinstance(d, int):  # lo + d + (d - 1) * mid + hi, d - 1 clamped at 0
                gaps = de.mul(de.maximum(de.sub(d, 1), 0), mid) if mid else 0
                shape.append(de.add(de.add(d, lo + hi), gaps))
                continue
            n = lo + hi + d + max(d - 1, 0) * mid
            if n < 0:
                raise PirError(f"axis {a}: the padding crops more than the dim holds ({d})")
            shape.append(n)
        return [TensorType(dtype, tuple(shape))]


class ConcatOp(PrimOp):
    """out = the operands joined along ``dimension``; the other dims must agree."""

    name = "prim.concat"
    traits = frozenset({Pure})
    inputs = operand(variadic=True, dtypes=ANY)
    dimension = attr(INT)
    out = result()

    def infer(self):
        if not self.inputs:
            raise PirError("needs at least one operand")
        dtype = same_dtype([(f"operand {i}", v) for i, v in enumerate(self.inputs)])
        if len(self.inputs) == 1:
            check_axis(self.dimension, self.inputs[0].type.rank, "dimension")
            return [self.inputs[0].type]
        ranked = [(i, v.type.shape) for i, v in enumerate(self.inputs) if v.type.shape is not None]
        if not ranked:
            return [TensorType(dtype, None)]
        rank = len(ranked[0][1])
        axis = check_axis(self.dimension, rank, "dimension")
        shape: list[Dim] = list(ranked[0][1])
        total: Dim = 0
        for i, s in ranked:
            if len(s) != rank:
                raise PirError(f"operand {i} has rank {len(s)}, operand {ranked[0][0]} rank {rank}")
            for k, d in enumerate(s):
                if k == axis:
                    continue
                try:
                    shape[k] = merge_dim(shape[k], d)
                except PirError:
                    raise PirError(f"operand {i} has dim {k} = {d}, operand {ranked[0][0]} "
                                   f"{shape[k]}: only dim {axis} may differ") from None
            total = de.add(total, s[axis])
        if len(ranked) != len(self.inputs):
            total = None
        shape[axis] = total
        return [TensorType(dtype, tuple(shape))]
