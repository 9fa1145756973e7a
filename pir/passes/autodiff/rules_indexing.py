"""Derivatives of the indexing prims: linear in their data operands, with fixed indices.

``gather`` and ``scatter_add`` transpose into each other (JAX's pair), as do
``dynamic_slice`` and ``dynamic_update_slice``; both of the dynamic ops clamp their starts
the same way, so the pairs stay exact transposes at the edges.  The integer operands
(indices, starts) get no cotangent.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.passes.autodiff.builder import ttype
from pir.passes.autodiff.registry import deflinear


def _gather_vjp(b, op, cts, wants):
    return [b.op("scatter_add", b.zeros_like(op.x), op.indices, cts[0], axis=op.axis), None]


def _scatter_add_vjp(b, op, cts, wants):
    ct = cts[0]
    return [ct if wants[0] else None, None,
            b.op("gather", ct, op.indices, axis=op.axis) if wants[2] else None]


def _dynamic_slice_vjp(b, op, cts, wants):
    return [b.op("dynamic_update_slice", b.zeros_like(op.x), cts[0], op.start_indices), None]


def _dynamic_update_slice_vjp(b, op, cts, wants):
    ct = cts[0]
    tx = tu = None
    if wants[0]:
        tx = b.op("dynamic_update_slice", ct, b.zeros_like(op.update), op.start_indices)
    if wants[1]:
        sizes = ttype(op.update).shape
        if not all(isinstance(d, int) for d in sizes):
            raise PirError(f"{op.describe()}: the transpose of dynamic_update_slice needs a "
                           f"static update shape, not {op.update.type}")
        tu = b.op("dynamic_slice", ct, op.start_indices, slice_sizes=tuple(sizes))
    return [tx, tu, None]


deflinear("prim.gather", _gather_vjp)
deflinear("prim.scatter_add", _scatter_add_vjp, linear=(0, 2))
deflinear("prim.dynamic_slice", _dynamic_slice_vjp)
deflinear("prim.dynamic_update_slice", _dynamic_update_slice_vjp, linear=(0, 1))
