"""Elementwise primitives: unary math, binary arithmetic and bitwise ops, compares, select, cast.

Binary ops and compares take two operands of the SAME shape and element type (broadcasting is
explicit, with ``prim.broadcast_in_dim``, as in StableHLO and JAX's lax).  Each op shape is one
base class; the ops themselves are rows of the tables below, so adding an op is adding a row
(and a row of the numpy table in ``pir/runtimes/reference/rules/prim_elementwise.py``).
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import DTYPE
from pir.ir.dialects.prim.base import (
    ANY,
    BITS,
    FLOAT,
    INT,
    NUMERIC,
    SIGNED,
    PrimOp,
    merge_shapes,
    operand_type,
    same_dtype,
)
from pir.ir.opdef import Commutative, Elementwise, Pure, attr, operand, result
from pir.ir.types import DType, TensorType

__all__ = ["UnaryOp", "PredicateOp", "BinaryOp", "CompareOp", "SelectOp", "CastOp",
           "UNARY", "PREDICATES", "BINARY", "COMPARE"]


class UnaryOp(PrimOp):
    """out = f(x), elementwise; same type as x."""

    traits = frozenset({Pure, Elementwise})
    x = operand()
    out = result()

    def infer(self):
        return [operand_type(self.x, "x")]


class PredicateOp(UnaryOp):
    """out = p(x), elementwise; a boolean tensor of x's shape."""

    def infer(self):
        return [operand_type(self.x, "x").with_dtype(DType.BOOL)]


class BinaryOp(PrimOp):
    """out = f(lhs, rhs), elementwise; both operands have one shape and element type."""

    traits = frozenset({Pure, Elementwise})
    lhs = operand()
    rhs = operand()
    out = result()

    def infer(self):
        dtype = same_dtype([("lhs", self.lhs), ("rhs", self.rhs)])
        shape = merge_shapes([("lhs", self.lhs.type), ("rhs", self.rhs.type)])
        return [TensorType(self._result_dtype(dtype), shape)]

    def _result_dtype(self, dtype: DType) -> DType:
        return dtype


class CompareOp(BinaryOp):
    """out = lhs <cmp> rhs, elementwise; a boolean tensor (IEEE: NaN compares unequal)."""

    def _result_dtype(self, dtype: DType) -> DType:
        return DType.BOOL


def _define(base: type, name: str, doc: str, dtypes, traits=None) -> type:
    """Declare the op ``prim.<name>`` as a subclass of ``base`` and export it here."""
    cls_name = "".join(p.capitalize() for p in name.split("_")) + "Op"
    body = {"name": f"prim.{name}", "__doc__": doc, "__module__": __name__}
    if traits is not None:
        body["traits"] = traits
    for d in base.signature.operands:  # every operand of these shapes takes ``dtypes``
        body[d.name] = operand(dtypes=dtypes)
    cls = type(cls_name, (base,), body)
    globals()[cls_name] = cls
    __all__.append(cls_name)
    return cls


# name: (element types, docstring).  Float-only functions are evaluated in at least f32.
UNARY = {
    "neg": (SIGNED, "out = -x."),
    "abs": (SIGNED, "out = |x| (for the most negative integer, wraps to itself)."),
    "exp": (FLOAT, "out = e**x."),
    "log": (FLOAT, "out = ln(x) (-inf at 0, NaN below)."),
    "log1p": (FLOAT, "out = ln(1 + x), accurate near 0."),
    "expm1": (FLOAT, "out = e**x - 1, accurate near 0."),
    "sqrt": (FLOAT, "out = sqrt(x) (NaN below 0)."),
    "rsqrt": (FLOAT, "out = 1 / sqrt(x)."),
    "sin": (FLOAT, "out = sin(x)."),
    "cos": (FLOAT, "out = cos(x)."),
    "tan": (FLOAT, "out = tan(x)."),
    "tanh": (FLOAT, "out = tanh(x)."),
    "asin": (FLOAT, "out = arcsin(x)."),
    "acos": (FLOAT, "out = arccos(x)."),
    "atan": (FLOAT, "out = arctan(x)."),
    "sinh": (FLOAT, "out = sinh(x)."),
    "cosh": (FLOAT, "out = cosh(x)."),
    "asinh": (FLOAT, "out = arsinh(x)."),
    "acosh": (FLOAT, "out = arcosh(x)."),
    "atanh": (FLOAT, "out = artanh(x)."),
    "erf": (FLOAT, "out = erf(x), the Gauss error function."),
    "logistic": (FLOAT, "out = 1 / (1 + e**-x), the sigmoid."),
    "sign": (SIGNED, "out = -1, 0 or 1 by the sign of x (0 for -0.0; NaN stays NaN)."),
    "floor": (FLOAT, "out = the largest integer <= x."),
    "ceil": (FLOAT, "out = the smallest integer >= x."),
    "round": (FLOAT, "out = x rounded to the nearest integer, ties to even (ONNX Round)."),
    "reciprocal": (FLOAT, "out = 1 / x."),
    "not": (BITS, "out = logical not of a boolean x, bitwise not of an integer x."),
}
PREDICATES = {
    "is_nan": (FLOAT, "out = x is NaN."),
    "is_inf": (FLOAT, "out = x is +inf or -inf."),
}

_C = frozenset({Pure, Elementwise, Commutative})
# name: (element types, docstring, commutative)
BINARY = {
    "add": (NUMERIC, "out = lhs + rhs (integers wrap).", True),
    "sub": (NUMERIC, "out = lhs - rhs (integers wrap).", False),
    "mul": (NUMERIC, "out = lhs * rhs (integers wrap).", True),
    "div": (NUMERIC, "out = lhs / rhs; integer division truncates toward zero (x / 0 is "
                     "unspecified; the reference runtime gives 0).", False),
    "rem": (NUMERIC, "out = lhs - rhs * trunc(lhs / rhs), the sign of lhs (C fmod); "
                     "x rem 0 is unspecified for integers (the reference gives 0).", False),
    "pow": (NUMERIC, "out = lhs ** rhs; for integers a negative exponent gives 1 / lhs**-rhs "
                     "truncated (so 0 unless lhs is 1 or -1).", False),
    "max": (NUMERIC, "out = the larger of lhs and rhs (NaN if either is NaN).", True),
    "min": (NUMERIC, "out = the smaller of lhs and rhs (NaN if either is NaN).", True),
    "atan2": (FLOAT, "out = the angle of the point (rhs, lhs), arctan2(lhs, rhs).", False),
    "and": (BITS, "out = lhs AND rhs (logical for booleans, bitwise for integers).", True),
    "or": (BITS, "out = lhs OR rhs (logical for booleans, bitwise for integers).", True),
    "xor": (BITS, "out = lhs XOR rhs (logical for booleans, bitwise for integers).", True),
    "shift_left": (INT, "out = lhs << rhs; shifts by rhs < 0 or >= the bit width give 0.",
                   False),
    "shift_right": (INT, "out = lhs >> rhs, arithmetic for signed and logical for unsigned "
                         "types; shifts by rhs < 0 or >= the bit width give 0 (-1 for a "
                         "negative signed lhs).", False),
}
COMPARE = {
    "eq": "out = lhs == rhs.",
    "ne": "out = lhs != rhs (true when either is NaN).",
    "lt": "out = lhs < rhs.",
    "le": "out = lhs <= rhs.",
    "gt": "out = lhs > rhs.",
    "ge": "out = lhs >= rhs.",
}

for _name, (_dtypes, _doc) in UNARY.items():
    _define(UnaryOp, _name, _doc, _dtypes)
for _name, (_dtypes, _doc) in PREDICATES.items():
    _define(PredicateOp, _name, _doc, _dtypes)
for _name, (_dtypes, _doc, _commutes) in BINARY.items():
    _define(BinaryOp, _name, _doc, _dtypes, traits=_C if _commutes else None)
for _name, _doc in COMPARE.items():
    _define(CompareOp, _name, _doc, ANY, traits=_C if _name in ("eq", "ne") else None)


class SelectOp(PrimOp):
    """out = pred ? on_true : on_false, elementwise; all three have one shape."""

    name = "prim.select"
    traits = frozenset({Pure, Elementwise})
    pred = operand(dtypes={DType.BOOL})
    on_true = operand()
    on_false = operand()
    out = result()

    def infer(self):
        dtype = same_dtype([("on_true", self.on_true), ("on_false", self.on_false)])
        operand_type(self.pred, "pred")
        shape = merge_shapes([("pred", self.pred.type), ("on_true", self.on_true.type),
                              ("on_false", self.on_false.type)])
        return [TensorType(dtype, shape)]


class CastOp(PrimOp):
    """out = x converted to ``dtype``, elementwise: floats to integers truncate toward zero
    (NaN, inf and out-of-range values are unspecified), numbers to i1 give x != 0, i1 to
    numbers gives 0 or 1, and narrowing between floats rounds to nearest even."""

    name = "prim.cast"
    traits = frozenset({Pure, Elementwise})
    x = operand(dtypes=ANY)
    dtype = attr(DTYPE)
    out = result()

    def infer(self):
        if self.dtype is DType.STRING:
            raise PirError("cannot cast to str")
        return [operand_type(self.x, "x").with_dtype(self.dtype)]
