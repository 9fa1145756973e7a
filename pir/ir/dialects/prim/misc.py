"""Generators and sort: iota, random_uniform, random_normal, sort.

iota and the random ops have no tensor operand: their result shape and element type come from
the declared result type (build them with ``result_types=[...]``), which may hold symbolic
dims bound by the function's inputs.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import BOOL, FLOAT as FLOAT_ATTR, INT
from pir.ir.dialects.prim.base import (
    FLOAT,
    NUMERIC,
    DeclaredResultOp,
    PrimOp,
    check_axis,
    operand_type,
)
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.types import DType

__all__ = ["IotaOp", "RandomOp", "RandomUniformOp", "RandomNormalOp", "SortOp"]


class IotaOp(DeclaredResultOp):
    """out[i0, i1, ...] = i_dimension: counts 0, 1, 2 ... along ``dimension`` of the declared
    result type, repeated along the other dims."""

    name = "prim.iota"
    traits = frozenset({Pure})
    dimension = attr(INT)
    out = result(dtypes=NUMERIC)

    def infer(self):
        out = self.declared()
        check_axis(self.dimension, len(out.shape), "dimension")
        return [out]


class RandomOp(DeclaredResultOp):
    """Random numbers of the declared float result type.  Not Pure: two ops with the same
    attributes are two draws.  ``seed`` fixes the stream, so a program gives the same values
    on every run of one runtime; other runtimes give values of the same distribution."""

    traits = frozenset()
    seed = attr(INT)
    out = result(dtypes=FLOAT)

    def infer(self):
        return [self.declared()]


class RandomUniformOp(RandomOp):
    """out = values drawn uniformly from [low, high)."""

    name = "prim.random_uniform"
    low = attr(FLOAT_ATTR, 0.0)
    high = attr(FLOAT_ATTR, 1.0)

    def infer(self):
        if not self.low <= self.high:
            raise PirError(f"low ({self.low}) must not exceed high ({self.high})")
        return [self.declared()]


class RandomNormalOp(RandomOp):
    """out = values drawn from the normal distribution N(mean, scale**2)."""

    name = "prim.random_normal"
    mean = attr(FLOAT_ATTR, 0.0)
    scale = attr(FLOAT_ATTR, 1.0)

    def infer(self):
        if self.scale < 0:
            raise PirError(f"scale ({self.scale}) must not be negative")
        return [self.declared()]


class SortOp(PrimOp):
    """(values, indices) = x sorted along ``axis``, ascending or ``descending``, and the i64
    positions the values came from.  The sort is stable: equal values keep their order (so a
    descending top-k takes the lowest index first, as ONNX TopK does).  NaN sorts above
    +inf.  top_k is sort then slice."""

    name = "prim.sort"
    traits = frozenset({Pure})
    x = operand(dtypes=NUMERIC)
    axis = attr(INT)
    descending = attr(BOOL, False)
    values = result()
    indices = result()

    def infer(self):
        t = operand_type(self.x, "x")
        check_axis(self.axis, t.rank)
        return [t, t.with_dtype(DType.I64)]
