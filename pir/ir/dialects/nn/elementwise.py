"""Elementwise math: arithmetic with broadcasting, unary math functions, bitwise and logical
ops, comparisons, the variadic Max/Min/Sum/Mean, and Where.

Element types follow ONNX's type constraints (``dtypes=``); binary ops whose ONNX inputs share
one type variable check that their operands agree.  Activation functions live in
``activations.py``, casts in ``cast.py``.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import BOOL, STR
from pir.ir.core import Operation, Value
from pir.ir.dialects.nn.base import BinaryOp, CompareOp, UnaryOp
from pir.ir.opdef import (
    Broadcasting,
    Commutative,
    Elementwise,
    Pure,
    attr,
    operand,
    result,
)
from pir.ir.typerules import broadcast_shapes, tensor
from pir.ir.types import DType, TensorType

__all__ = ["STD_FLOATS", "SIGNED_INTS", "UNSIGNED_INTS", "STD_INTS", "ARITH", "SIGNED_ARITH",
           "check_same_dtype"]

#: The float types most ONNX math ops accept (no float8/float4).
STD_FLOATS = frozenset({DType.F16, DType.BF16, DType.F32, DType.F64})
SIGNED_INTS = frozenset({DType.I8, DType.I16, DType.I32, DType.I64})
UNSIGNED_INTS = frozenset({DType.U8, DType.U16, DType.U32, DType.U64})
#: The integer types of ONNX's arithmetic ops (no int4/int2).
STD_INTS = SIGNED_INTS | UNSIGNED_INTS
ARITH = STD_FLOATS | STD_INTS
SIGNED_ARITH = STD_FLOATS | SIGNED_INTS
F8_FLOATS = frozenset({DType.F8E4M3FN, DType.F8E4M3FNUZ, DType.F8E5M2, DType.F8E5M2FNUZ})
BOOLS = frozenset({DType.BOOL})

_COMMUTATIVE = frozenset({Pure, Elementwise, Broadcasting, Commutative})


def check_same_dtype(values: list[Value]) -> DType:
    """The one element type of ``values``; a PirError names them all when they differ."""
    dtypes = [tensor(v).dtype for v in values]
    if len(set(dtypes)) > 1:
        shown = ", ".join(d.value for d in dtypes)
        raise PirError(f"operands must have one element type, got {shown}")
    return dtypes[0]


# -- unary math -----------------------------------------------------------------------------


class FloatUnary(UnaryOp):
    """y = f(x) for a float-only math function (the ONNX float types)."""

    x = operand(dtypes=STD_FLOATS)


class Abs(UnaryOp):
    """y = |x|."""

    name = "nn.abs"
    x = operand(dtypes=ARITH)


class Neg(UnaryOp):
    """y = -x."""

    name = "nn.neg"
    x = operand(dtypes=SIGNED_ARITH)


class Sign(UnaryOp):
    """y = -1, 0 or 1 by the sign of x (NaN stays NaN)."""

    name = "nn.sign"
    x = operand(dtypes=ARITH)


class Exp(FloatUnary):
    """y = e^x."""

    name = "nn.exp"


class Log(FloatUnary):
    """y = ln(x)."""

    name = "nn.log"


class Sqrt(FloatUnary):
    """y = sqrt(x)."""

    name = "nn.sqrt"


class Reciprocal(FloatUnary):
    """y = 1 / x."""

    name = "nn.reciprocal"


class Sin(FloatUnary):
    """y = sin(x)."""

    name = "nn.sin"


class Cos(FloatUnary):
    """y = cos(x)."""

    name = "nn.cos"


class Tan(FloatUnary):
    """y = tan(x)."""

    name = "nn.tan"


class Asin(FloatUnary):
    """y = arcsin(x)."""

    name = "nn.asin"


class Acos(FloatUnary):
    """y = arccos(x)."""

    name = "nn.acos"


class Atan(FloatUnary):
    """y = arctan(x)."""

    name = "nn.atan"


class Sinh(FloatUnary):
    """y = sinh(x)."""

    name = "nn.sinh"


class Cosh(FloatUnary):
    """y = cosh(x)."""

    name = "nn.cosh"


class Asinh(FloatUnary):
    """y = arsinh(x)."""

    name = "nn.asinh"


class Acosh(FloatUnary):
    """y = arcosh(x)."""

    name = "nn.acosh"


class Atanh(FloatUnary):
    """y = artanh(x)."""

    name = "nn.atanh"


class Ceil(FloatUnary):
    """y = the smallest integer >= x."""

    name = "nn.ceil"


class Floor(FloatUnary):
    """y = the largest integer <= x."""

    name = "nn.floor"


class Round(FloatUnary):
    """y = x rounded to the nearest integer, halves to even."""

    name = "nn.round"


class Erf(FloatUnary):
    """y = erf(x), the Gauss error function."""

    name = "nn.erf"


class IsNaN(UnaryOp):
    """y = (x is NaN), boolean."""

    name = "nn.is_nan"
    x = operand(dtypes=STD_FLOATS | F8_FLOATS)

    def infer(self):
        return [tensor(self.x).with_dtype(DType.BOOL)]


class IsInf(UnaryOp):
    """y = (x is +inf and detect_positive) or (x is -inf and detect_negative), boolean."""

    name = "nn.is_inf"
    x = operand(dtypes=STD_FLOATS | F8_FLOATS)
    detect_negative = attr(BOOL, True)
    detect_positive = attr(BOOL, True)

    def infer(self):
        return [tensor(self.x).with_dtype(DType.BOOL)]


class Not(UnaryOp):
    """y = logical not x."""

    name = "nn.not"
    x = operand(dtypes=BOOLS)


class BitwiseNot(UnaryOp):
    """y = ~x, bit by bit."""

    name = "nn.bitwise_not"
    x = operand(dtypes=STD_INTS)


# -- binary arithmetic ----------------------------------------------------------------------


class SameTypeBinary(BinaryOp):
    """c = f(a, b) with broadcasting, where a and b must have one element type."""

    a = operand(dtypes=ARITH)
    b = operand(dtypes=ARITH)

    def infer(self):
        check_same_dtype([self.a, self.b])
        return super().infer()


class Add(SameTypeBinary):
    """c = a + b."""

    name = "nn.add"
    traits = _COMMUTATIVE


class Sub(SameTypeBinary):
    """c = a - b."""

    name = "nn.sub"


class Mul(SameTypeBinary):
    """c = a * b."""

    name = "nn.mul"
    traits = _COMMUTATIVE


class Div(SameTypeBinary):
    """c = a / b (integer division truncates toward zero, as in ONNX)."""

    name = "nn.div"


class Pow(BinaryOp):
    """c = a ^ b; the exponent may have another element type, c has a's."""

    name = "nn.pow"
    a = operand(dtypes=STD_FLOATS | {DType.I32, DType.I64})
    b = operand(dtypes=ARITH)


class Mod(SameTypeBinary):
    """c = a mod b: the sign of b (a - floor(a/b)*b), or with fmod the sign of a (C fmod)."""

    name = "nn.mod"
    fmod = attr(BOOL, False)


class BitShift(SameTypeBinary):
    """c = a << b or a >> b (arithmetic for signed types); shifts < 0 or >= the bit width
    give what the sign fill alone gives (0, or -1 for a right shift of a negative a)."""

    name = "nn.bit_shift"
    a = operand(dtypes=STD_INTS)
    b = operand(dtypes=STD_INTS)
    direction = attr(STR)

    def verify_(self):
        if self.direction not in ("LEFT", "RIGHT"):
            raise PirError(f"direction must be LEFT or RIGHT, got '{self.direction}'")


class BitwiseAnd(SameTypeBinary):
    """c = a & b."""

    name = "nn.bitwise_and"
    traits = _COMMUTATIVE
    a = operand(dtypes=STD_INTS)
    b = operand(dtypes=STD_INTS)


class BitwiseOr(SameTypeBinary):
    """c = a | b."""

    name = "nn.bitwise_or"
    traits = _COMMUTATIVE
    a = operand(dtypes=STD_INTS)
    b = operand(dtypes=STD_INTS)


class BitwiseXor(SameTypeBinary):
    """c = a ^ b, bit by bit."""

    name = "nn.bitwise_xor"
    traits = _COMMUTATIVE
    a = operand(dtypes=STD_INTS)
    b = operand(dtypes=STD_INTS)


class And(BinaryOp):
    """c = a and b (booleans)."""

    name = "nn.and"
    traits = _COMMUTATIVE
    a = operand(dtypes=BOOLS)
    b = operand(dtypes=BOOLS)


class Or(BinaryOp):
    """c = a or b (booleans)."""

    name = "nn.or"
    traits = _COMMUTATIVE
    a = operand(dtypes=BOOLS)
    b = operand(dtypes=BOOLS)


class Xor(BinaryOp):
    """c = a xor b (booleans)."""

    name = "nn.xor"
    traits = _COMMUTATIVE
    a = operand(dtypes=BOOLS)
    b = operand(dtypes=BOOLS)


# -- comparisons ----------------------------------------------------------------------------


class Compare(CompareOp):
    """c = a <op> b, boolean, for operands of one ordered element type."""

    a = operand(dtypes=ARITH)
    b = operand(dtypes=ARITH)

    def infer(self):
        check_same_dtype([self.a, self.b])
        return super().infer()


class Equal(Compare):
    """c = (a == b); also for booleans and strings."""

    name = "nn.equal"
    traits = _COMMUTATIVE
    a = operand(dtypes=ARITH | {DType.BOOL, DType.STRING})
    b = operand(dtypes=ARITH | {DType.BOOL, DType.STRING})


class Less(Compare):
    """c = (a < b)."""

    name = "nn.less"


class LessOrEqual(Compare):
    """c = (a <= b)."""

    name = "nn.less_or_equal"


class Greater(Compare):
    """c = (a > b)."""

    name = "nn.greater"


class GreaterOrEqual(Compare):
    """c = (a >= b)."""

    name = "nn.greater_or_equal"


# -- variadic -------------------------------------------------------------------------------


class VariadicOp(Operation):
    """y = f(x0, x1, ...), elementwise over one or more operands broadcast together."""

    traits = frozenset({Pure, Elementwise, Broadcasting, Commutative})
    inputs = operand(variadic=True, dtypes=ARITH)
    y = result()

    def infer(self):
        if not self.inputs:
            raise PirError("needs at least one operand")
        dtype = check_same_dtype(self.inputs)
        return [TensorType(dtype, broadcast_shapes(*(tensor(v).shape for v in self.inputs)))]


class Max(VariadicOp):
    """y = the elementwise maximum of the operands (NaN wins)."""

    name = "nn.max"


class Min(VariadicOp):
    """y = the elementwise minimum of the operands (NaN wins)."""

    name = "nn.min"


class Sum(VariadicOp):
    """y = the elementwise sum of the operands."""

    name = "nn.sum"
    inputs = operand(variadic=True, dtypes=STD_FLOATS)


class Mean(VariadicOp):
    """y = the elementwise mean of the operands."""

    name = "nn.mean"
    inputs = operand(variadic=True, dtypes=STD_FLOATS)


class Where(Operation):
    """output = x where condition else y, the three broadcast together."""

    name = "nn.where"
    traits = frozenset({Pure, Elementwise, Broadcasting})
    condition = operand(dtypes=BOOLS)
    x = operand()
    y = operand()
    output = result()

    def infer(self):
        dtype = check_same_dtype([self.x, self.y])
        shapes = (tensor(v).shape for v in (self.condition, self.x, self.y))
        return [TensorType(dtype, broadcast_shapes(*shapes))]
