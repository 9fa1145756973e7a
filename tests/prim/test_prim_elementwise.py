"""prim elementwise ops: unary math, binary ops, compares, select, cast."""

from __future__ import annotations

import math

import numpy as np
import pytest

from prim_harness import check_op, make_module, rand, ttype
from pir.errors import PirError
from pir.ir.core import OPS
from pir.ir.parser import parse_module
from pir.ir.types import DType

# name: (numpy reference, low, high) for float inputs drawn from [low, high).
UNARY_FLOAT = {
    "neg": (np.negative, -3, 3), "abs": (np.abs, -3, 3), "exp": (np.exp, -3, 3),
    "log": (np.log, 0.1, 4), "log1p": (np.log1p, -0.5, 3), "expm1": (np.expm1, -2, 2),
    "sqrt": (np.sqrt, 0, 4), "rsqrt": (lambda x: 1 / np.sqrt(x), 0.2, 4),
    "sin": (np.sin, -3, 3), "cos": (np.cos, -3, 3), "tan": (np.tan, -1.2, 1.2),
    "tanh": (np.tanh, -3, 3), "asin": (np.arcsin, -0.95, 0.95),
    "acos": (np.arccos, -0.95, 0.95), "atan": (np.arctan, -3, 3), "sinh": (np.sinh, -3, 3),
    "cosh": (np.cosh, -3, 3), "asinh": (np.arcsinh, -3, 3), "acosh": (np.arccosh, 1, 4),
    "atanh": (np.arctanh, -0.95, 0.95),
    "erf": (np.vectorize(math.erf, otypes=[np.float64]), -2.5, 2.5),
    "logistic": (lambda x: 1 / (1 + np.exp(-x.astype(np.float64))), -8, 8),
    "sign": (np.sign, -3, 3), "floor": (np.floor, -3, 3), "ceil": (np.ceil, -3, 3),
    "round": (np.round, -3, 3), "reciprocal": (lambda x: 1 / x, 0.5, 3),
}
BINARY_FLOAT = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "rem": np.fmod, "pow": np.power, "max": np.maximum, "min": np.minimum,
    "atan2": np.arctan2,
}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
           "gt": np.greater, "ge": np.greater_equal}
BITWISE = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}

COVERED = {f"prim.{n}" for n in [*UNARY_FLOAT, *BINARY_FLOAT, *COMPARE, *BITWISE, "not",
                                 "is_nan", "is_inf", "shift_left", "shift_right", "select",
                                 "cast"]}

# Each op runs on a static shape and on a symbolic one, bound to two different sizes.
SHAPES = [
    pytest.param([ttype("f32", 2, 3, 4)], [[(2, 3, 4)]], id="static"),
    pytest.param([ttype("f32", "B", 4)], [[(3, 4)], [(1, 4)]], id="symbolic"),
    pytest.param([ttype("f32")], [[()]], id="scalar"),
]


def _typed(types, dtype):
    return [t.with_dtype(DType(dtype)) for t in types]


def _cast_back(fn, dtype):
    return lambda *xs: np.asarray(fn(*xs)).astype(dtype)


@pytest.mark.parametrize("types,shapes", SHAPES)
@pytest.mark.parametrize("name", UNARY_FLOAT)
def test_unary_float(name, types, shapes):
    fn, low, high = UNARY_FLOAT[name]
    runs = [[rand(s, "f32", low, high)] for (s,) in shapes]
    check_op(OPS[f"prim.{name}"], runs, _cast_back(fn, np.float32), input_types=types,
             rtol=2e-6)


@pytest.mark.parametrize("name", ["exp", "tanh", "erf", "logistic", "sqrt"])
def test_unary_f64_and_f16(name):
    fn, low, high = UNARY_FLOAT[name]
    x64 = rand((3, 5), "f64", low, high)
    check_op(OPS[f"prim.{name}"], [[x64]], _cast_back(fn, np.float64), rtol=1e-12)
    x16 = rand((7,), "f16", low, high)
    # f16 math runs in f32 and rounds once, so it matches the f32 result rounded to f16.
    want = _cast_back(lambda x: fn(x.astype(np.float32)), np.float16)
    check_op(OPS[f"prim.{name}"], [[x16]], want, rtol=1e-3)


def test_round_ties_to_even_and_sign_of_zero():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, -0.0, np.nan], np.float32)
    check_op(OPS["prim.round"], [[x]], np.round)
    check_op(OPS["prim.sign"], [[x]], np.sign)


@pytest.mark.parametrize("name,fn", [("neg", np.negative), ("abs", np.abs), ("sign", np.sign)])
def test_signed_integer_unary(name, fn):
    check_op(OPS[f"prim.{name}"], [[rand((4, 5), "i32", -9, 9)]], fn)


def test_not_on_booleans_and_integers():
    check_op(OPS["prim.not"], [[rand((3, 4), "i1")]], np.logical_not)
    check_op(OPS["prim.not"], [[rand((6,), "i32", -100, 100)]], np.invert)
    check_op(OPS["prim.not"], [[rand((6,), "ui8", 0, 255)]], np.invert)


@pytest.mark.parametrize("name,fn", [("is_nan", np.isnan), ("is_inf", np.isinf)])
def test_predicates(name, fn):
    x = np.array([[1.0, np.nan, np.inf], [-np.inf, 0.0, -2.0]], np.float32)
    module = check_op(OPS[f"prim.{name}"], [[x]], fn)
    assert module.lookup("main").entry.ops[0].results[0].type == ttype("i1", 2, 3)


def _binary_inputs(name, shape, dtype="f32"):
    lhs, rhs = rand(shape, dtype), rand(shape, dtype)
    if name in ("div", "rem"):
        rhs = np.where(np.abs(rhs) < 0.5, 1.5, rhs).astype(rhs.dtype)
    if name == "pow":
        lhs = np.abs(lhs) + np.asarray(0.1, lhs.dtype)
    return [lhs, rhs]


@pytest.mark.parametrize("types,shapes", SHAPES)
@pytest.mark.parametrize("name", BINARY_FLOAT)
def test_binary_float(name, types, shapes):
    runs = [_binary_inputs(name, s) for (s,) in shapes]
    check_op(OPS[f"prim.{name}"], runs, BINARY_FLOAT[name], input_types=types * 2)


def test_max_min_propagate_nan():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    b = np.array([np.nan, 2.0, 1.0], np.float32)
    check_op(OPS["prim.max"], [[a, b]], lambda a, b: np.array([np.nan, np.nan, 3.0], np.float32))
    check_op(OPS["prim.min"], [[a, b]], lambda a, b: np.array([np.nan, np.nan, 1.0], np.float32))


def _c_div(a, b):
    """C integer division: truncate toward zero; the runtime defines x / 0 as 0."""
    out = [0 if y == 0 else int(math.copysign(abs(x) // abs(y), x * y)) for x, y in zip(a, b)]
    return np.array(out, a.dtype)


def _c_rem(a, b):
    return np.array([0 if y == 0 else x - y * int(_c_div(np.array([x]), np.array([y]))[0])
                     for x, y in zip(a, b)], a.dtype)


def _int_pow(a, b):
    out = []
    for x, y in zip(a.tolist(), b.tolist()):
        out.append(x ** y if y >= 0 else (1 if x == 1 else (-1) ** y if x == -1 else 0))
    return np.array(out, np.int64).astype(a.dtype)


def test_integer_arithmetic():
    a = np.array([7, -7, 7, -7, 5, 0, -9, 3], np.int32)
    b = np.array([2, 2, -2, -2, 0, 3, 4, -1], np.int32)
    check_op(OPS["prim.div"], [[a, b]], _c_div)
    check_op(OPS["prim.rem"], [[a, b]], _c_rem)
    for name, fn in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                     ("max", np.maximum), ("min", np.minimum)]:
        check_op(OPS[f"prim.{name}"], [[a, b]], fn)
    base = np.array([2, -1, -1, 1, 3, 0, 2, -3], np.int64)
    exp = np.array([3, 3, -2, -5, 0, 2, -1, 3], np.int64)
    check_op(OPS["prim.pow"], [[base, exp]], _int_pow)


def test_integer_add_wraps():
    a = np.array([127, -128], np.int8)
    check_op(OPS["prim.add"], [[a, np.array([1, -1], np.int8)]],
             lambda a, b: np.array([-128, 127], np.int8))


@pytest.mark.parametrize("dtype", ["i1", "i32", "ui8"])
@pytest.mark.parametrize("name", BITWISE)
def test_bitwise(name, dtype):
    runs = [[rand((3, 4), dtype, 0, 200), rand((3, 4), dtype, 0, 200)]]
    check_op(OPS[f"prim.{name}"], runs, BITWISE[name])


def _shift_ref(a, b, left):
    bits = a.dtype.itemsize * 8
    out = []
    for x, n in zip(a.tolist(), b.tolist()):
        if not 0 <= n < bits:
            out.append(-1 if (not left and x < 0) else 0)
        elif left:
            v = (x << n) & ((1 << bits) - 1)
            out.append(v - (1 << bits) if a.dtype.kind == "i" and v >> (bits - 1) else v)
        else:
            out.append(x >> n)  # Python's >> is arithmetic; x >= 0 makes it logical
    return np.array(out, np.int64 if a.dtype.kind == "i" else np.uint64).astype(a.dtype)


@pytest.mark.parametrize("dtype", ["i32", "ui8", "i64"])
@pytest.mark.parametrize("name", ["shift_left", "shift_right"])
def test_shifts(name, dtype):
    bits = DType(dtype).numpy.itemsize * 8
    low = -100 if dtype.startswith("i") else 0
    a = rand((12,), dtype, low, 100)
    b = np.array([0, 1, 2, 3, 5, bits - 1, bits, bits + 3, -1, 4, 1, 7])
    b = b.astype(a.dtype) if dtype.startswith("i") else np.where(b < 0, 200, b).astype(a.dtype)
    check_op(OPS[f"prim.{name}"], [[a, b]], lambda a, b: _shift_ref(a, b, name == "shift_left"))


@pytest.mark.parametrize("dtype", ["f32", "i32"])
@pytest.mark.parametrize("name", COMPARE)
def test_compare(name, dtype):
    a = rand((4, 6), dtype, -2, 2)
    b = np.where(rand((4, 6), "i1"), a, rand((4, 6), dtype, -2, 2)).astype(a.dtype)
    if dtype == "f32":
        a[0, :3] = np.nan
    check_op(OPS[f"prim.{name}"], [[a, b]], COMPARE[name])
    sym = [ttype(dtype, "B", 6)] * 2
    check_op(OPS[f"prim.{name}"], [[a[:2], b[:2]], [a, b]], COMPARE[name], input_types=sym)


def test_select():
    p, a, b = rand((2, 5), "i1"), rand((2, 5)), rand((2, 5))
    check_op(OPS["prim.select"], [[p, a, b]], np.where)
    types = [ttype("i1", "B", 5), ttype("f32", "B", 5), ttype("f32", "B", 5)]
    check_op(OPS["prim.select"], [[p, a, b], [p[:1], a[:1], b[:1]]], np.where, input_types=types)


@pytest.mark.parametrize("src,dst", [("f32", "i32"), ("i32", "f32"), ("f32", "i1"), ("i1", "f32"),
                                     ("f32", "f16"), ("f32", "bf16"), ("i64", "i8"),
                                     ("f64", "f32"), ("ui8", "i64")])
def test_cast(src, dst):
    x = rand((3, 7), src, -100, 100)
    if src == "f32":
        x[0, :4] = [2.7, -2.7, 0.0, -0.5]
    target = DType(dst)
    check_op(OPS["prim.cast"], [[x]], lambda x: x.astype(target.numpy), dtype=target)
    check_op(OPS["prim.cast"], [[x], [x[:1]]], lambda x: x.astype(target.numpy),
             dtype=target, input_types=[ttype(src, "B", 7)])


# -- type-rule violations ---------------------------------------------------------------------

@pytest.mark.parametrize("types,message", [
    ([ttype("f32", 3), ttype("f32", 4)], r"prim.add: operands must have the same shape: "
                                         r"lhs is \[3\], rhs is \[4\]"),
    ([ttype("f32", 3), ttype("f32", 1)], r"broadcast explicitly with prim.broadcast_in_dim"),
    ([ttype("f32", "B", 4), ttype("f32", "C", 4)], r"lhs is \[Bx4\], rhs is \[Cx4\]"),
    ([ttype("f32", "B"), ttype("f32", 4)], r"lhs is \[B\], rhs is \[4\]"),
    ([ttype("f32", 2, 3), ttype("f32", 3)], r"lhs is \[2x3\], rhs is \[3\]"),
    ([ttype("f32", 3), ttype("i32", 3)], r"prim.add: operands must have one element type: "
                                         r"lhs is f32, rhs is i32"),
])
def test_binary_type_rule_errors(types, message):
    with pytest.raises(PirError, match=message):
        make_module(OPS["prim.add"], types)


def test_dtype_restrictions():
    with pytest.raises(PirError, match=r"prim.exp.*operand 'x' has element type i32"):
        make_module(OPS["prim.exp"], [ttype("i32", 3)])
    with pytest.raises(PirError, match=r"prim.shift_left.*operand 'lhs' has element type f32"):
        make_module(OPS["prim.shift_left"], [ttype("f32", 3)] * 2)
    with pytest.raises(PirError, match=r"prim.select.*operand 'pred' has element type f32"):
        make_module(OPS["prim.select"], [ttype("f32", 3)] * 3)
    with pytest.raises(PirError, match=r"prim.select: operands must have the same shape"):
        make_module(OPS["prim.select"], [ttype("i1", 2), ttype("f32", 3), ttype("f32", 3)])
    with pytest.raises(PirError, match=r"prim.cast: missing required attribute 'dtype'"):
        make_module(OPS["prim.cast"], [ttype("f32", 3)])


def test_parser_rejects_a_wrong_declared_result():
    text = """module @m {
  func.func @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<4xf32>) {
    %c = prim.add(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<4xf32>
    func.return(%c) : (tensor<4xf32>) -> ()
  }
}
"""
    with pytest.raises(PirError, match=r"prim.add: result 0 is declared tensor<4xf32>, but the "
                                       r"type rule infers tensor<3xf32>") as info:
        parse_module(text, "bad.pir")
    assert info.value.line == 3
