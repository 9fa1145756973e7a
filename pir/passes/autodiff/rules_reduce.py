"""Derivatives of the reductions and of cumsum.

The cotangent of a reduction is broadcast back over the reduced axes (:func:`unreduce`).
``reduce_max``/``reduce_min`` share the derivative equally among tied extremes, as JAX
does; ``reduce_prod`` multiplies by ``prod / x``, so an operand holding an exact zero gives
NaN (a zero-safe form needs a product scan, which prim does not have).  ``argmax`` and
``argmin`` give integers: they have no derivative.
"""

from __future__ import annotations

from pir.ir.types import TensorType
from pir.passes.autodiff.builder import ttype
from pir.passes.autodiff.registry import declare, deflinear, defjvp, defvjp

__all__ = ["unreduce"]


def unreduce(b, v, x_type: TensorType, axes, keepdims: bool):
    """``v`` (a reduction's result type) broadcast back to the reduced operand's type."""
    rank = len(x_type.shape)
    dims = range(rank) if keepdims else [i for i in range(rank) if i not in axes]
    return b.broadcast(v, x_type, list(dims))


def _reduce_sum_vjp(b, op, cts, wants):
    return [unreduce(b, cts[0], ttype(op.x), op.axes, op.keepdims)]


def _cumsum_vjp(b, op, cts, wants):
    """A running sum forwards is a running sum backwards, with the same exclusivity."""
    return [b.op("cumsum", cts[0], axis=op.axis, exclusive=op.exclusive,
                 reverse=not op.reverse)]


deflinear("prim.reduce_sum", _reduce_sum_vjp)
deflinear("prim.cumsum", _cumsum_vjp)


def _prod_factor(b, op):
    """d prod / d x = prod / x, broadcast to x."""
    return b.div(unreduce(b, op.out, ttype(op.x), op.axes, op.keepdims), op.x)


@defjvp("prim.reduce_prod")
def reduce_prod_jvp(b, op, tangents):
    t = tangents[0]
    return [b.op("reduce_sum", b.mul(t, _prod_factor(b, op)), axes=op.axes,
                 keepdims=op.keepdims)]


@defvjp("prim.reduce_prod")
def reduce_prod_vjp(b, op, cts, wants):
    ct = unreduce(b, cts[0], ttype(op.x), op.axes, op.keepdims)
    return [b.mul(ct, _prod_factor(b, op))]


def _extreme_weights(b, op):
    """1 / (number of ties) where x equals the extreme, 0 elsewhere."""
    x = op.x
    hit = b.cast(b.op("eq", x, unreduce(b, op.out, ttype(x), op.axes, op.keepdims)),
                 ttype(x).dtype)
    count = b.op("reduce_sum", hit, axes=op.axes, keepdims=op.keepdims)
    return b.div(hit, unreduce(b, count, ttype(x), op.axes, op.keepdims))


@defjvp("prim.reduce_max", "prim.reduce_min")
def reduce_extreme_jvp(b, op, tangents):
    t = tangents[0]
    return [b.op("reduce_sum", b.mul(t, _extreme_weights(b, op)), axes=op.axes,
                 keepdims=op.keepdims)]


@defvjp("prim.reduce_max", "prim.reduce_min")
def reduce_extreme_vjp(b, op, cts, wants):
    ct = unreduce(b, cts[0], ttype(op.x), op.axes, op.keepdims)
    return [b.mul(ct, _extreme_weights(b, op))]


declare("nondiff", "the result is an integer index", "prim.argmax", "prim.argmin")
