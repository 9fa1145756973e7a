"""Derivatives of the shape prims: all linear, so each is the op itself forward and its
transpose backward.

- ``broadcast_in_dim`` transposes to :func:`unbroadcast`: a sum over the dims broadcasting
  created, then a transpose and reshape back to the operand (the broadcasting helper that
  every explicit broadcast of a decomposed ``nn`` op goes through).
- ``slice`` transposes to ``pad`` with zeros (interior padding for strides), ``pad`` to a
  ``pad`` that crops followed by a strided ``slice`` (and, for the padding value, the sum of
  what was not taken from the operand), ``concat`` to one ``slice`` per operand.
"""

from __future__ import annotations

from typing import Sequence

from pir.errors import PirError
from pir.ir.types import TensorType
from pir.passes.autodiff.builder import ttype
from pir.passes.autodiff.registry import deflinear, defjvp, defvjp

__all__ = ["unbroadcast", "static_dim"]


def static_dim(op, shape, axis: int, why: str) -> int:
    d = shape[axis]
    if not isinstance(d, int):
        raise PirError(f"{op.describe()}: {why} needs dim {axis} to be static, not {d}")
    return d


def unbroadcast(b, ct, x_type: TensorType, dims: Sequence[int]):
    """The transpose of ``broadcast_in_dim(x) {broadcast_dimensions = dims}`` applied to
    ``ct``: sum over the result dims that broadcasting created (new dims, and operand dims
    of size 1 that grew), then order the rest as the operand's dims and reshape to it."""
    out_shape = ttype(ct).shape
    xs = x_type.shape
    grew = {i for i, d in enumerate(xs) if d == 1 and out_shape[dims[i]] != 1}
    if tuple(dims) == tuple(range(len(out_shape))):  # same rank, in order: keep the 1s
        return b.reshape(b.reduce_sum(ct, sorted(grew), keepdims=True), x_type)
    kept = [i for i in range(len(xs)) if i not in grew]
    kept_out = {dims[i] for i in kept}
    summed = b.reduce_sum(ct, [a for a in range(len(out_shape)) if a not in kept_out])
    # summed holds the kept operand dims in the order of their result dims.
    in_summed = sorted(kept, key=lambda i: dims[i])
    moved = b.transpose(summed, [in_summed.index(i) for i in kept])
    return b.reshape(moved, x_type)


def _broadcast_vjp(b, op, cts, wants):
    return [unbroadcast(b, cts[0], ttype(op.x), op.broadcast_dimensions)]


def _reshape_vjp(b, op, cts, wants):
    return [b.reshape(cts[0], ttype(op.x))]


def _transpose_vjp(b, op, cts, wants):
    perm = op.permutation
    inverse = [perm.index(i) for i in range(len(perm))]
    return [b.transpose(cts[0], inverse)]


def _slice_vjp(b, op, cts, wants):
    """Pad the cotangent back with zeros: before the start, between strided elements (as
    interior padding) and after the last element taken."""
    ct = cts[0]
    xs = ttype(op.x).shape
    rank = len(xs)
    low, high, interior = [0] * rank, [0] * rank, [0] * rank
    starts, limits = op.start_indices, op.limit_indices
    axes = op.axes or tuple(range(len(starts)))
    strides = op.strides or (1,) * len(starts)
    for a, s, lim, step in zip(axes, starts, limits, strides):
        d = static_dim(op, xs, a, "the transpose of a slice")
        n = -(-(lim - s) // step)
        used = s + (n - 1) * step + 1 if n > 0 else s
        low[a], high[a], interior[a] = s, d - used, step - 1
    zero = b.const(0, ttype(ct).dtype)
    return [b.op("pad", ct, zero, edge_padding_low=tuple(low), edge_padding_high=tuple(high),
                 interior_padding=tuple(interior))]


def _pad_vjp(b, op, cts, wants):
    """Crop the edges (a pad by minus the edge padding, which also restores what negative
    padding cropped, as zeros), then take every (interior + 1)-th element."""
    ct = cts[0]
    t = ttype(ct)
    rank = len(t.shape)
    interior = op.interior_padding or (0,) * rank
    unpadded = b.op("pad", ct, b.const(0, t.dtype),
                    edge_padding_low=tuple(-v for v in op.edge_padding_low),
                    edge_padding_high=tuple(-v for v in op.edge_padding_high),
                    interior_padding=(0,) * rank)
    axes = [a for a in range(rank) if interior[a]]
    tx = unpadded
    if axes:
        us = ttype(unpadded).shape
        tx = b.op("slice", unpadded, start_indices=(0,) * len(axes),
                  limit_indices=tuple(static_dim(op, us, a, "the transpose of a pad")
                                      for a in axes),
                  strides=tuple(interior[a] + 1 for a in axes), axes=tuple(axes))
    tx = b.as_type(tx, ttype(op.x), "pad")
    tv = None
    if wants[1]:
        everything = list(range(rank))
        tv = b.sub(b.reduce_sum(ct, everything), b.reduce_sum(tx, everything))
    return [tx if wants[0] else None, tv]


deflinear("prim.broadcast_in_dim", _broadcast_vjp)
deflinear("prim.reshape", _reshape_vjp)
deflinear("prim.transpose", _transpose_vjp)
deflinear("prim.slice", _slice_vjp)
deflinear("prim.pad", _pad_vjp, linear=(0, 1))


@defjvp("prim.concat")
def concat_jvp(b, op, tangents):
    if all(t is None for t in tangents):
        return [None]
    return b.same_op(op, [b.instantiate(t, v) for t, v in zip(tangents, op.operands)])


@defvjp("prim.concat")
def concat_vjp(b, op, cts, wants):
    ct = cts[0]
    axis = op.dimension
    out, offset = [], 0
    for v, want in zip(op.operands, wants):
        size = static_dim(op, ttype(v).shape, axis, "the transpose of a concat")
        out.append(b.op("slice", ct, start_indices=(offset,), limit_indices=(offset + size,),
                        axes=(axis,)) if want else None)
        offset += size
    return out
