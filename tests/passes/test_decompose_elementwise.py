"""The elementwise, comparison, logic, Where, cast and identity decompositions preserve values.

Each case builds a one-node ONNX model, imports it, runs ``decompose`` and checks that the
reference runtime gives the same outputs before and after on random inputs (static shapes,
broadcasting, symbolic dims), and that no nn op is left.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import check_pipeline, decomposed, node_model, op_names

from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline
from pir.runtimes.reference import run_function

F32, F16, F64 = np.float32, np.float16, np.float64


def data(shape, dtype=F32, low=-3.0, high=3.0, seed=0):
    """Random values in [low, high), rounded for integer types."""
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, size=shape).round(0 if np.dtype(dtype).kind in "iu" else 6
                                                   ).astype(dtype)


def computed(module) -> list[str]:
    """The ops that compute: every op but constants and the return."""
    return [n for n in op_names(module) if n not in ("builtin.constant", "func.return")]


# -- unary --------------------------------------------------------------------------------

#: op -> the input range its domain allows
UNARY = {
    "Abs": (-3, 3), "Neg": (-3, 3), "Sign": (-3, 3), "Exp": (-3, 3), "Log": (0.1, 5),
    "Sqrt": (0, 5), "Reciprocal": (0.5, 3), "Sin": (-3, 3), "Cos": (-3, 3), "Tan": (-1, 1),
    "Asin": (-1, 1), "Acos": (-1, 1), "Atan": (-3, 3), "Sinh": (-3, 3), "Cosh": (-3, 3),
    "Asinh": (-3, 3), "Acosh": (1, 5), "Atanh": (-0.9, 0.9), "Ceil": (-3, 3),
    "Floor": (-3, 3), "Erf": (-3, 3),
}
UNARY_SHAPES = [((3, 4), None), ((2, 3, 5), ["B", 3, 5]), ((), None)]


@pytest.mark.parametrize("op_type", sorted(UNARY))
@pytest.mark.parametrize("shape,sym", UNARY_SHAPES, ids=["static", "symbolic", "scalar"])
def test_unary(op_type, shape, sym):
    low, high = UNARY[op_type]
    decomposed(op_type, {"x": data(shape, F32, low, high)}, shapes={"x": sym} if sym else None)


def test_unary_half_rounds_like_the_nn_op():
    decomposed("Exp", {"x": data((4, 5), F16)})


def test_round_halves_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -3.7], F32)
    out = decomposed("Round", {"x": x})
    assert "prim.round" in op_names(out)


@pytest.mark.parametrize("op_type", ["Abs", "Sign"])
@pytest.mark.parametrize("dtype", [np.int32, np.int8])
def test_abs_sign_of_integers(op_type, dtype):
    decomposed(op_type, {"x": data((3, 4), dtype, -9, 9)})


def test_sign_of_unsigned_is_x_not_zero():
    out = decomposed("Sign", {"x": data((3, 4), np.uint8, 0, 3)})
    assert computed(out) == ["prim.broadcast_in_dim", "prim.ne", "prim.cast"]


ABS_UNSIGNED_PIR = """
module {
  func.func @main(%x: tensor<3xui16>) -> (tensor<3xui16>, tensor<3xui16>) {
    %a = nn.abs(%x) : (tensor<3xui16>) -> tensor<3xui16>
    %y = nn.add(%a, %a) : (tensor<3xui16>, tensor<3xui16>) -> tensor<3xui16>
    %z = nn.abs(%x) : (tensor<3xui16>) -> tensor<3xui16>
    func.return(%y, %z) : (tensor<3xui16>, tensor<3xui16>) -> ()
  }
}
"""


def test_abs_of_unsigned_is_x_or_a_copy_that_keeps_an_output_name():
    x = data((3,), np.uint16, 0, 9)
    out = check_pipeline(parse_module(ABS_UNSIGNED_PIR), {"x": x}, "decompose")
    assert computed(out) == ["prim.add", "prim.reshape"]


def test_predicates():
    x = np.array([[np.nan, np.inf, -np.inf, 0.0], [1.0, -2.0, np.nan, np.inf]], F32)
    decomposed("IsNaN", {"x": x}, shapes={"x": ["B", 4]})
    for pos, neg in [(1, 1), (1, 0), (0, 1), (0, 0)]:
        decomposed("IsInf", {"x": x}, detect_positive=pos, detect_negative=neg)


def test_logical_and_bitwise_not():
    decomposed("Not", {"x": data((3, 4)) > 0})
    decomposed("BitwiseNot", {"x": data((3, 4), np.int16, -100, 100)})
    decomposed("BitwiseNot", {"x": data((3, 4), np.uint8, 0, 255)})


# -- binary -------------------------------------------------------------------------------

BINARY_SHAPES = [
    ((3, 4), (3, 4), None),
    ((2, 3, 4), (4,), None),
    ((3, 1), (1, 4), None),
    ((5, 4), (4,), {"a": ["B", 4]}),
    ((5, 1, 4), (3, 4), {"a": ["B", 1, 4]}),
]
BINARY_IDS = ["same", "rank", "both", "symbolic", "symbolic-both"]


def binary_case(op_type, dtype, shapes, low=-3.0, high=3.0, b_low=None, **attrs):
    sa, sb, sym = shapes
    a = data(sa, dtype, low, high, seed=1)
    b = data(sb, dtype, low if b_low is None else b_low, high, seed=2)
    return decomposed(op_type, {"a": a, "b": b}, shapes=sym, **attrs)


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=BINARY_IDS)
def test_arithmetic(op_type, shapes):
    binary_case(op_type, F32, shapes, b_low=0.5 if op_type == "Div" else None)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, F16, F64])
@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
def test_arithmetic_dtypes(op_type, dtype):
    signed = np.dtype(dtype).kind != "u"
    low = -20 if signed else 0
    b_low = 1 if op_type == "Div" else low
    binary_case(op_type, dtype, BINARY_SHAPES[2], low, 20, b_low=b_low)


def test_integer_division_truncates():
    a = np.array([7, -7, 7, -7, 0, 9], np.int32)
    b = np.array([2, 2, -2, -2, 3, -4], np.int32)
    out = decomposed("Div", {"a": a, "b": b})
    assert computed(out) == ["prim.div"]


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint16, F32, F64])
def test_mod(fmod, dtype):
    if np.dtype(dtype).kind == "f" and not fmod:
        a = data((3, 4), dtype, -10, 10, seed=1)
        b = np.array([3.5, -2.0, 1.25, -0.75], dtype)
    else:
        kind = np.dtype(dtype).kind
        a = data((3, 4), dtype, -20 if kind == "i" else 0, 20, seed=1)
        b = np.array([3, -4, 5, 7] if kind == "i" else [3, 4, 5, 7], dtype)
    decomposed("Mod", {"a": a, "b": b}, shapes={"a": ["B", 4]}, fmod=fmod)


POW_TYPES = [(F32, F32), (F32, np.int64), (F32, np.int32), (F16, F32), (F32, F64),
             (F64, F32), (np.int32, np.int32), (np.int64, np.int32), (np.int32, F32),
             (np.int64, F64), (F16, F16)]


@pytest.mark.parametrize("ta,tb", POW_TYPES, ids=[f"{np.dtype(a)}-{np.dtype(b)}"
                                                  for a, b in POW_TYPES])
def test_pow(ta, tb):
    a = data((3, 4), ta, 0.5 if np.dtype(ta).kind == "f" else 1, 4, seed=1)
    b = data((4,), tb, -2 if np.dtype(tb).kind == "f" else 0, 3, seed=2)
    decomposed("Pow", {"a": a, "b": b}, shapes={"a": ["B", 4]})


@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.int64])
@pytest.mark.parametrize("op_type", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise(op_type, dtype):
    low = -100 if np.dtype(dtype).kind == "i" else 0
    binary_case(op_type, dtype, BINARY_SHAPES[3], low, 100)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
def test_bit_shift(direction, dtype):
    a = data((3, 4), dtype, 0, 200, seed=1)
    b = np.array([0, 1, 3, 9], dtype)  # 9 is past the width of uint8
    decomposed("BitShift", {"a": a, "b": b}, shapes={"a": ["B", 4]}, direction=direction)


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
@pytest.mark.parametrize("shapes", BINARY_SHAPES[2:4], ids=BINARY_IDS[2:4])
def test_logical(op_type, shapes):
    sa, sb, sym = shapes
    decomposed(op_type, {"a": data(sa, seed=1) > 0, "b": data(sb, seed=2) > 0}, shapes=sym)


@pytest.mark.parametrize("op_type", ["Equal", "Less", "LessOrEqual", "Greater",
                                     "GreaterOrEqual"])
@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=BINARY_IDS)
def test_compare(op_type, shapes):
    # integers, so that equal pairs (where <, <= and == differ) are common
    binary_case(op_type, np.int32, shapes, -2, 2)


def test_compare_floats_with_nan():
    a = np.array([1.0, np.nan, 2.0, -np.inf], F32)
    b = np.array([1.0, np.nan, 3.0, -np.inf], F32)
    for op_type in ["Equal", "Less", "LessOrEqual", "GreaterOrEqual"]:
        decomposed(op_type, {"a": a, "b": b})
    decomposed("Equal", {"a": a > 1, "b": b > 1})


def test_equal_on_strings_stays():
    a = np.array(["x", "y"], dtype=object)
    module = import_model(node_model("Equal", {"a": a, "b": a}, ["y"]))
    out = check_pipeline(module, {"a": a, "b": a}, "decompose")
    assert computed(out) == ["nn.equal"]


# -- variadic and where -------------------------------------------------------------------

VARIADIC_SHAPES = {"x0": (5, 1, 4), "x1": (3, 4), "x2": (4,)}


def variadic_case(op_type, dtype, n, sym=None):
    inputs = {k: data(s, dtype, seed=i) for i, (k, s) in enumerate(VARIADIC_SHAPES.items())
              if i < n}
    return decomposed(op_type, inputs, shapes=sym)


@pytest.mark.parametrize("op_type", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("n", [2, 3])
def test_variadic(op_type, n):
    variadic_case(op_type, F32, n, sym={"x0": ["B", 1, 4]})


@pytest.mark.parametrize("op_type", ["Sum", "Mean"])
def test_variadic_half_sums_in_f32(op_type):
    out = variadic_case(op_type, F16, 3)
    names = op_names(out)
    assert names.count("prim.cast") == 4  # three operands up, the result down once


def test_max_of_integers_and_nan():
    variadic_case("Max", np.int64, 3)
    a = np.array([1.0, np.nan, 3.0], F32)
    b = np.array([np.nan, 2.0, 1.0], F32)
    decomposed("Min", {"a": a, "b": b})


def test_single_operand_max_naming_the_output_becomes_a_copy():
    x = data((3,))
    out = check_pipeline(import_model(node_model("Max", {"x": x}, ["y"])), {"x": x},
                         "decompose")
    assert computed(out) == ["prim.reshape"]


@pytest.mark.parametrize("dtype", [F32, np.int64, np.bool_])
def test_where(dtype):
    cond = data((5, 1, 4), seed=3) > 0
    x = data((3, 4), F32, seed=1).astype(dtype)
    y = data((4,), F32, seed=2).astype(dtype)
    decomposed("Where", {"c": cond, "a": x, "b": y}, shapes={"c": ["B", 1, 4]})


# -- casts and identity -------------------------------------------------------------------

T = onnx.TensorProto
CASTS = [(F32, T.FLOAT16), (F32, T.INT32), (F32, T.BOOL), (F32, T.DOUBLE), (np.int64, T.FLOAT),
         (np.int32, T.UINT8), (np.bool_, T.FLOAT), (F16, T.BFLOAT16), (F64, T.INT8)]


@pytest.mark.parametrize("src,to", CASTS, ids=[f"{np.dtype(s)}-{T.DataType.Name(t)}"
                                               for s, t in CASTS])
def test_cast(src, to):
    x = data((3, 4), F32, -50, 50).astype(src)
    out = decomposed("Cast", {"x": x}, shapes={"x": ["B", 4]}, to=to)
    assert computed(out) == ["prim.cast"]


@pytest.mark.parametrize("to", [T.FLOAT8E4M3FN, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2,
                                T.FLOAT8E5M2FNUZ])
@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize("src", [F32, F16, np.int32])
def test_cast_to_float8(to, saturate, src):
    x = np.array([0.0, 1.3, -2.7, 300, -1e4, 7e4, 1e9, -1e9], F32)
    if np.dtype(src).kind == "f":
        x = np.concatenate([x, np.array([np.inf, -np.inf, np.nan], F32)])
    x = np.clip(x, -6e4, 6e4).astype(src) if src == F16 else x.astype(src)
    module = import_model(node_model("Cast", {"x": x}, ["y"], to=to, saturate=saturate))
    before = run_function(module, {"x": x})["y"]
    PassManager(parse_pipeline("decompose")).run(module)
    after = run_function(module, {"x": x})["y"]
    assert after.dtype == before.dtype
    # numpy cannot compare float8 arrays holding NaN: compare them as f32
    np.testing.assert_array_equal(after.astype(F32), before.astype(F32))
    assert computed(module).count("prim.max") == saturate
    assert "nn.cast" not in computed(module)


def test_cast_to_string_stays():
    x = data((2, 3))
    out = check_pipeline(import_model(node_model("Cast", {"x": x}, ["y"], to=T.STRING)),
                         {"x": x}, "decompose")
    assert computed(out) == ["nn.cast"]


IDENTITY_PIR = """
module {
  func.func @main(%x: tensor<Bx4xf32>) -> (tensor<Bx4xf32>, tensor<Bx4xf32>) {
    %i = nn.identity(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
    %y = nn.neg(%i) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
    %z = nn.identity(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
    func.return(%y, %z) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> ()
  }
}
"""


def test_identity_is_its_operand_or_a_copy_for_a_named_output():
    module = parse_module(IDENTITY_PIR)
    out = check_pipeline(module, {"x": data((3, 4))}, "decompose")
    assert computed(out) == ["prim.neg", "prim.reshape"]
    neg = next(op for op in out.funcs[0].walk() if op.name == "prim.neg")
    assert neg.operands[0].name == "x" and neg.results[0].name == "y"


BIT_CAST_PIR = """
module {
  func.func @main(%x: tensor<Bx4xf32>) -> (tensor<Bx4xi32>) {
    %y = nn.bit_cast(%x) {to = i32} : (tensor<Bx4xf32>) -> tensor<Bx4xi32>
    func.return(%y) : (tensor<Bx4xi32>) -> ()
  }
}
"""


def test_bit_cast_is_kept():
    out = check_pipeline(parse_module(BIT_CAST_PIR), {"x": data((2, 4))}, "decompose")
    assert computed(out) == ["nn.bit_cast"]
