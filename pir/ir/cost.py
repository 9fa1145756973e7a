"""A static cost estimate for `pir show`: floating-point operations and bytes computed.

Counts follow the usual conventions (a multiply-add is 2 FLOPs): matrix products and
convolutions from their shapes, elementwise ops and reductions one operation per element,
everything else (data movement, constants) none.  Fused groups and kernels count what they
hold.  Symbolic dims take sizes from ``dims``; an op whose sizes stay unknown is counted in
``unknown`` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Mapping

from pir.ir.core import Operation
from pir.ir.dialects.builtin import ConstantOp
from pir.ir.opdef import Elementwise, Reduction
from pir.ir.types import bound_shape

__all__ = ["Cost", "estimate"]


@dataclass
class Cost:
    flops: int = 0
    bytes_computed: int = 0  # the results of every non-constant op, once each
    unknown: int = 0  # ops whose sizes are not known (symbolic dims without a size)


class _Unknown(Exception):
    pass


def _shape(t, dims: Mapping[str, int]) -> tuple[int, ...]:
    shape = bound_shape(t, dims)
    if shape is None:
        raise _Unknown
    return shape


def _flops(op: Operation, dims: Mapping[str, int]) -> int:
    name = op.name
    if op.regions:  # fusion.group, kernel.tvm, control flow: what the body does once
        return sum(_flops(inner, dims) for r in op.regions for b in r.blocks for inner in b.ops)
    if name in ("prim.dot_general", "nn.matmul", "nn.gemm"):
        out = prod(_shape(op.results[0].type, dims))
        lhs = _shape(op.operands[0].type, dims)
        if name == "prim.dot_general":
            k = prod(lhs[a] for a in op.lhs_contracting_dimensions)
        elif name == "nn.gemm":
            k = lhs[0] if op.trans_a else lhs[-1]
        else:
            k = lhs[-1]
        return 2 * out * k
    if name in ("prim.conv", "nn.conv"):
        out = prod(_shape(op.results[0].type, dims))
        kernel = _shape(op.operands[1].type, dims)  # O, C / groups, spatial...
        return 2 * out * prod(kernel[1:])
    if Reduction in op.traits or name.startswith(("prim.reduce_", "nn.reduce_")):
        return prod(_shape(op.operands[0].type, dims))
    if Elementwise in op.traits:
        return sum(prod(_shape(r.type, dims)) for r in op.results)
    return 0


def estimate(ops, dims: Mapping[str, int] | None = None) -> Cost:
    """The cost of ``ops`` (top-level ops of a function; nested ones are counted through
    the op that holds them)."""
    dims = dims or {}
    cost = Cost()
    for op in ops:
        if isinstance(op, ConstantOp) or op.name == "func.return":
            continue
        try:
            cost.flops += _flops(op, dims)
            cost.bytes_computed += sum(prod(_shape(r.type, dims)) * r.type.dtype.itemsize
                                       for r in op.results)
        except _Unknown:
            cost.unknown += 1
    return cost
