"""Indexing primitives: gather / scatter_add along one axis, dynamic_slice / dynamic_update_slice.

The gather form is "take along one axis with an index tensor" (numpy's ``take``, ONNX's
Gather), not StableHLO's general dimension numbers: it is the form decompositions and the
autodiff rules need most, and the general cases reduce to it (GatherElements and GatherND
flatten the indexed dims with reshape and compute linear indices with iota, mul and add).
``scatter_add`` is its transpose: the VJP of ``gather(x, i, axis)`` is
``scatter_add(zeros, i, g, axis)``.  Likewise ``dynamic_update_slice`` writes back what
``dynamic_slice`` reads.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import INT, INTS
from pir.ir.dialects.prim.base import (
    ANY,
    INT as INT_TYPES,
    NUMERIC,
    PrimOp,
    check_axis,
    check_shape_fits,
    operand_type,
    same_dtype,
)
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.types import Dim, TensorType

__all__ = ["GatherOp", "ScatterAddOp", "DynamicSliceOp", "DynamicUpdateSliceOp"]


def _gathered_shape(x: TensorType, indices: TensorType, axis: int) -> tuple[Dim, ...] | None:
    """x.shape[:axis] + indices.shape + x.shape[axis + 1:]."""
    check_axis(axis, x.rank)
    if x.shape is None or indices.shape is None:
        return None
    return x.shape[:axis] + indices.shape + x.shape[axis + 1:]


class GatherOp(PrimOp):
    """out = take(x, indices, axis): out[a..., i..., b...] = x[a..., indices[i...], b...].
    Result shape: x.shape[:axis] + indices.shape + x.shape[axis+1:].  Indices must lie in
    [0, x.shape[axis]) (no negative indices; out-of-range ones are an error in the reference
    runtime and unspecified elsewhere)."""

    name = "prim.gather"
    traits = frozenset({Pure})
    x = operand(dtypes=ANY)
    indices = operand(dtypes=INT_TYPES)
    axis = attr(INT)
    out = result()

    def infer(self):
        x, idx = operand_type(self.x, "x"), operand_type(self.indices, "indices")
        return [TensorType(x.dtype, _gathered_shape(x, idx, self.axis))]


class ScatterAddOp(PrimOp):
    """out = x, then out[a..., indices[i...], b...] += updates[a..., i..., b...] for every
    index (repeated indices accumulate).  ``updates`` has the shape ``gather(x, indices,
    axis)`` would have; out has x's type."""

    name = "prim.scatter_add"
    traits = frozenset({Pure})
    x = operand(dtypes=NUMERIC)
    indices = operand(dtypes=INT_TYPES)
    updates = operand(dtypes=NUMERIC)
    axis = attr(INT)
    out = result()

    def infer(self):
        same_dtype([("x", self.x), ("updates", self.updates)])
        x, idx = operand_type(self.x, "x"), operand_type(self.indices, "indices")
        want = _gathered_shape(x, idx, self.axis)
        got = self.updates.type.shape
        if want is not None and got is not None:
            check_shape_fits(got, want, "updates must have the gathered shape "
                                        "x.shape[:axis] + indices.shape + x.shape[axis+1:]")
        return [x]


def _check_starts(starts: TensorType, rank: int | None) -> None:
    if starts.shape is None:
        return
    if len(starts.shape) != 1:
        raise PirError(f"start_indices must be a 1-D tensor, got {starts}")
    if rank is not None and isinstance(starts.shape[0], int) and starts.shape[0] != rank:
        raise PirError(f"start_indices has {starts.shape[0]} entries for an operand of rank "
                       f"{rank}")


class DynamicSliceOp(PrimOp):
    """out = x[s0:s0+n0, s1:s1+n1, ...] with sizes ``slice_sizes`` and run-time starts
    ``start_indices`` (a 1-D integer tensor, one entry per dim), each start clamped into
    [0, dim - size] as in StableHLO's dynamic_slice."""

    name = "prim.dynamic_slice"
    traits = frozenset({Pure})
    x = operand(dtypes=ANY)
    start_indices = operand(dtypes=INT_TYPES)
    slice_sizes = attr(INTS)
    out = result()

    def infer(self):
        x = operand_type(self.x, "x")
        _check_starts(operand_type(self.start_indices, "start_indices"), x.rank)
        sizes = self.slice_sizes
        if x.rank is not None and len(sizes) != x.rank:
            raise PirError(f"slice_sizes has {len(sizes)} entries for an operand of rank {x.rank}")
        for a, n in enumerate(sizes):
            dim = x.shape[a] if x.shape is not None else None
            if n < 0 or (isinstance(dim, int) and n > dim):
                raise PirError(f"axis {a}: slice size {n} is not in [0, {dim}]")
        return [x.with_shape(sizes)]


class DynamicUpdateSliceOp(PrimOp):
    """out = x with ``update`` written at run-time offsets ``start_indices`` (a 1-D integer
    tensor, one entry per dim, each clamped into [0, dim - update dim])."""

    name = "prim.dynamic_update_slice"
    traits = frozenset({Pure})
    x = operand(dtypes=ANY)
    update = operand(dtypes=ANY)
    start_indices = operand(dtypes=INT_TYPES)
    out = result()

    def infer(self):
        same_dtype([("x", self.x), ("update", self.update)])
        x, u = self.x.type, self.update.type
        _check_starts(operand_type(self.start_indices, "start_indices"), x.rank)
        if x.shape is not None and u.shape is not None:
            if len(u.shape) != len(x.shape):
                raise PirError(f"update has rank {len(u.shape)}, x rank {len(x.shape)}")
            for a, (d, n) in enumerate(zip(x.shape, u.shape)):
                if isinstance(d, int) and isinstance(n, int) and n > d:
                    raise PirError(f"axis {a}: the update ({n}) is larger than x ({d})")
        return [x]
