"""Derivatives of the generators and of sort.

``iota`` and the random ops have no operands, so nothing flows through them.  ``sort``'s
values are a permutation of x along the axis: forward, the tangent is permuted the same way;
backward, the cotangent is scattered back to where each value came from.  Both read the
permutation from the sort's own ``indices``, as linear positions into the flattened x
(``gather`` takes along one axis only), so x needs a static shape.
"""

from __future__ import annotations

from math import prod

from pir.errors import PirError
from pir.ir.types import DType, TensorType
from pir.passes.autodiff.builder import ttype
from pir.passes.autodiff.registry import declare, defjvp, defvjp

declare("nondiff", "no operands: nothing to differentiate", "prim.iota",
        "prim.random_uniform", "prim.random_normal")


def _positions(b, op):
    """For each sorted element, its position in x flattened in row-major order (i64)."""
    shape = ttype(op.x).shape
    if not all(isinstance(d, int) for d in shape):
        raise PirError(f"{op.describe()}: the derivative of a sort needs a static shape, not "
                       f"{op.x.type}")
    index_type = TensorType(DType.I64, shape)
    linear = None
    for k in range(len(shape)):
        stride = prod(shape[k + 1:])
        coord = op.indices if k == op.axis else b.op("iota", result_type=index_type,
                                                      dimension=k)
        if stride != 1:
            coord = b.mul(coord, b.full(stride, index_type))
        linear = b.add_any(linear, coord)
    return linear


def _flat(t: TensorType) -> TensorType:
    return t.with_shape((prod(t.shape),))


@defjvp("prim.sort")
def sort_jvp(b, op, tangents):
    t = tangents[0]
    flat = b.reshape(t, _flat(ttype(t)))
    return [b.op("gather", flat, _positions(b, op), axis=0), None]


@defvjp("prim.sort")
def sort_vjp(b, op, cts, wants):
    ct = cts[0]
    if ct is None:
        return [None]
    x = ttype(op.x)
    zeros = b.full(0, _flat(x))
    return [b.reshape(b.op("scatter_add", zeros, _positions(b, op), ct, axis=0), x)]
