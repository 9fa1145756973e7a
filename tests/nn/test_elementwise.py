"""Elementwise math, bitwise and logical ops, comparisons, Max/Min/Sum/Mean and Where: import,
round trip, run, and compare with ONNX Runtime; type rules and their diagnostics."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from helpers import check_model, node_model
from onnx import helper

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.func import FuncOp
from pir.ir.types import DType, TensorType

rng = np.random.default_rng(0)


def uniform(lo, hi, *shape, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def ints(lo, hi, *shape, dtype=np.int32):
    return rng.integers(lo, hi, shape).astype(dtype)


def op_of(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return next(o for o in fn.walk() if o.name == name)


# -- unary math -----------------------------------------------------------------------------

# ONNX op -> (nn op, input domain)
FLOAT_UNARY = {
    "Exp": ("nn.exp", (-3, 3)), "Log": ("nn.log", (0.1, 5)), "Sqrt": ("nn.sqrt", (0, 9)),
    "Reciprocal": ("nn.reciprocal", (0.5, 4)), "Sin": ("nn.sin", (-4, 4)),
    "Cos": ("nn.cos", (-4, 4)), "Tan": ("nn.tan", (-1.2, 1.2)), "Asin": ("nn.asin", (-1, 1)),
    "Acos": ("nn.acos", (-1, 1)), "Atan": ("nn.atan", (-5, 5)), "Sinh": ("nn.sinh", (-3, 3)),
    "Cosh": ("nn.cosh", (-3, 3)), "Asinh": ("nn.asinh", (-5, 5)),
    "Acosh": ("nn.acosh", (1, 5)), "Atanh": ("nn.atanh", (-0.9, 0.9)),
    "Ceil": ("nn.ceil", (-5, 5)), "Floor": ("nn.floor", (-5, 5)), "Round": ("nn.round", (-5, 5)),
    "Erf": ("nn.erf", (-3, 3)), "Abs": ("nn.abs", (-5, 5)), "Neg": ("nn.neg", (-5, 5)),
    "Sign": ("nn.sign", (-5, 5)),
}


@pytest.mark.parametrize("op_type", FLOAT_UNARY)
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), ()])
def test_float_unary_matches_ort(op_type, shape):
    name, (lo, hi) = FLOAT_UNARY[op_type]
    x = uniform(lo, hi, *shape)
    module = check_model(node_model(op_type, {"x": x}, ["y"]), {"x": x})
    assert op_of(module, name).results[0].type == TensorType(DType.F32, shape)


# ONNX Runtime lacks most f64 kernels: f64 results are checked against numpy's own functions.
F64_REFERENCE = {"Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt, "Sin": np.sin, "Acosh": np.arccosh,
                 "Atanh": np.arctanh, "Floor": np.floor, "Neg": np.negative,
                 "Erf": np.vectorize(math.erf, otypes=[np.float64])}


@pytest.mark.parametrize("op_type", F64_REFERENCE)
def test_float_unary_f64(op_type):
    x = uniform(*FLOAT_UNARY[op_type][1], 2, 3, dtype=np.float64)
    check_model(node_model(op_type, {"x": x}, ["y"]), {"x": x},
                expected={"y": F64_REFERENCE[op_type](x)}, rtol=1e-12)


def test_round_halves_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.3, -4.6], np.float32)
    check_model(node_model("Round", {"x": x}, ["y"]), {"x": x},
                expected={"y": np.array([0, 2, 2, -0.0, -2, 2, -5], np.float32)})


@pytest.mark.parametrize("op_type", ["Abs", "Neg", "Sign"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integer_unary_matches_ort(op_type, dtype):
    x = ints(-20, 20, 4, 5, dtype=dtype)
    check_model(node_model(op_type, {"x": x}, ["y"]), {"x": x})


def test_is_nan_and_is_inf():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -0.0], np.float32)
    module = check_model(node_model("IsNaN", {"x": x}, ["y"]), {"x": x})
    assert op_of(module, "nn.is_nan").results[0].type == TensorType(DType.BOOL, (5,))
    for neg, pos in [(1, 1), (0, 1), (1, 0)]:
        model = node_model("IsInf", {"x": x}, ["y"], detect_negative=neg, detect_positive=pos)
        want = np.array([False, False, bool(pos), bool(neg), False])
        check_model(model, {"x": x}, expected={"y": want})


# -- binary arithmetic ----------------------------------------------------------------------

BROADCAST_SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3))]


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("sa,sb", BROADCAST_SHAPES)
def test_arithmetic_float_broadcasting(op_type, sa, sb):
    a, b = uniform(-3, 3, *sa), uniform(0.5, 3, *sb)
    module = check_model(node_model(op_type, {"a": a, "b": b}, ["c"]), {"a": a, "b": b})
    want = np.broadcast_shapes(sa, sb)
    assert op_of(module, "nn." + op_type.lower()).results[0].type.shape == want


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_arithmetic_integers(op_type, dtype):
    lo = 0 if dtype == np.uint8 else -50
    a, b = ints(lo, 50, 3, 4, dtype=dtype), ints(1, 9, 4, dtype=dtype)
    if dtype != np.uint8:
        b[::2] *= -1  # integer division truncates toward zero for mixed signs
    check_model(node_model(op_type, {"a": a, "b": b}, ["c"]), {"a": a, "b": b})


def test_integer_division_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, 6], np.int64)
    b = np.array([2, 2, -2, -2, 3], np.int64)
    check_model(node_model("Div", {"a": a, "b": b}, ["c"]), {"a": a, "b": b},
                expected={"c": np.array([3, -3, -3, 3, 2], np.int64)})


@pytest.mark.parametrize("ta,tb", [(np.float32, np.float32), (np.float32, np.int64),
                                   (np.int32, np.int32), (np.int64, np.float32)])
def test_pow_mixed_types(ta, tb):
    a = uniform(0.5, 3, 3, 4).astype(ta) if ta != np.int32 else ints(0, 5, 3, 4)
    b = uniform(0, 3, 4).astype(tb)
    module = check_model(node_model("Pow", {"a": a, "b": b}, ["c"]), {"a": a, "b": b}, rtol=1e-5)
    assert op_of(module, "nn.pow").results[0].type.dtype is DType.from_numpy(ta)


# ONNX Runtime refuses fmod=0 for floats: that case is checked by the next test.
@pytest.mark.parametrize("fmod,dtype", [(0, np.int32), (0, np.int64), (1, np.int32),
                                        (1, np.float32), (1, np.float64)])
def test_mod_signs(fmod, dtype):
    a = np.array([5, -5, 5, -5, 7, 0], dtype)
    b = np.array([3, 3, -3, -3, 7, 4], dtype)
    check_model(node_model("Mod", {"a": a, "b": b}, ["c"], fmod=fmod), {"a": a, "b": b})


def test_float_mod_follows_the_divisor_sign():
    a = np.array([5.5, -5.5, 5.5, -0.0, 1.0, -1.0], np.float32)
    b = np.array([2.0, 2.0, -2.0, 3.0, np.inf, np.inf], np.float32)
    want = np.array([1.5, 0.5, -0.5, 0.0, 1.0, np.inf], np.float32)
    check_model(node_model("Mod", {"a": a, "b": b}, ["c"]), {"a": a, "b": b},
                expected={"c": want})


# -- bitwise and logical --------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
def test_bit_shift_unsigned_matches_ort(direction, dtype):
    x, y = ints(0, 200, 3, 4, dtype=dtype), ints(0, 7, 4, dtype=dtype)
    model = node_model("BitShift", {"x": x, "y": y}, ["z"], direction=direction)
    check_model(model, {"x": x, "y": y})


def test_bit_shift_signed_and_out_of_range_shifts():
    # Opset 28 semantics: arithmetic right shift; shifts < 0 or >= width give the sign fill.
    x = np.array([-16, 16, -16, 16, 64, -1], np.int8)
    y = np.array([2, 2, 9, 9, 1, -1], np.int8)
    feeds = {"x": x, "y": y}
    right = node_model("BitShift", feeds, ["z"], opset=28, direction="RIGHT")
    check_model(right, feeds, expected={"z": np.array([-4, 4, -1, 0, 32, -1], np.int8)})
    left = node_model("BitShift", feeds, ["z"], opset=28, direction="LEFT")
    check_model(left, feeds, expected={"z": np.array([-64, 64, 0, 0, -128, 0], np.int8)})


@pytest.mark.parametrize("op_type", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int16])
def test_bitwise_binary(op_type, dtype):
    lo = 0 if dtype == np.uint8 else -100
    a, b = ints(lo, 100, 2, 3, 4, dtype=dtype), ints(lo, 100, 3, 1, dtype=dtype)
    check_model(node_model(op_type, {"a": a, "b": b}, ["c"], opset=18), {"a": a, "b": b})


@pytest.mark.parametrize("dtype", [np.int32, np.uint16])
def test_bitwise_not(dtype):
    x = ints(0, 1000, 3, 4, dtype=dtype)
    check_model(node_model("BitwiseNot", {"x": x}, ["y"], opset=18), {"x": x})


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
@pytest.mark.parametrize("sa,sb", [((3, 4), (3, 4)), ((2, 3, 4), (4,))])
def test_logical_binary(op_type, sa, sb):
    a, b = rng.random(sa) > 0.5, rng.random(sb) > 0.5
    check_model(node_model(op_type, {"a": a, "b": b}, ["c"]), {"a": a, "b": b})


def test_not():
    x = rng.random((3, 4)) > 0.5
    check_model(node_model("Not", {"x": x}, ["y"]), {"x": x}, expected={"y": ~x})


# -- comparisons ----------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
def test_comparisons(op_type, dtype):
    a, b = ints(0, 4, 3, 4).astype(dtype), ints(0, 4, 4).astype(dtype)
    module = check_model(node_model(op_type, {"a": a, "b": b}, ["c"]), {"a": a, "b": b})
    name = {"LessOrEqual": "nn.less_or_equal", "GreaterOrEqual": "nn.greater_or_equal"}.get(
        op_type, "nn." + op_type.lower())
    assert op_of(module, name).results[0].type == TensorType(DType.BOOL, (3, 4))


def test_equal_strings_and_bools():
    a = np.array(["a", "bc", "d"], dtype=object)
    b = np.array(["a", "bd", "d"], dtype=object)
    check_model(node_model("Equal", {"a": a, "b": b}, ["c"]), {"a": a, "b": b},
                expected={"c": np.array([True, False, True])})
    p, q = np.array([True, False]), np.array([[True], [False]])
    check_model(node_model("Equal", {"a": p, "b": q}, ["c"]), {"a": p, "b": q})


# -- variadic and Where ---------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("shapes", [[(3, 4)], [(3, 4), (4,)], [(2, 1, 4), (3, 1), ()]])
def test_variadic_broadcasting(op_type, shapes):
    feeds = {f"x{i}": uniform(-3, 3, *s) for i, s in enumerate(shapes)}
    module = check_model(node_model(op_type, feeds, ["y"]), feeds)
    want = np.broadcast_shapes(*shapes)
    assert op_of(module, "nn." + op_type.lower()).results[0].type.shape == want


@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_max_min_integers(dtype):
    feeds = {"a": ints(0, 100, 3, 4, dtype=dtype), "b": ints(0, 100, 4, dtype=dtype)}
    for op_type in ("Max", "Min"):
        check_model(node_model(op_type, feeds, ["y"]), feeds)


@pytest.mark.parametrize("sc,sx,sy", [((3, 4), (3, 4), (3, 4)), ((4,), (3, 1), ()),
                                      ((2, 1, 4), (3, 4), (1,))])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_where_broadcasting(sc, sx, sy, dtype):
    feeds = {"c": rng.random(sc) > 0.5, "x": ints(-9, 9, *sx).astype(dtype),
             "y": ints(-9, 9, *sy).astype(dtype)}
    module = check_model(node_model("Where", feeds, ["z"]), feeds)
    assert op_of(module, "nn.where").results[0].type.shape == np.broadcast_shapes(sc, sx, sy)


def test_symbolic_dims_broadcast():
    node = helper.make_node("Add", ["a", "b"], ["c"])
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, ["B", 1, 4]),
         helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [3, 1])],
        [helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, None)])
    module = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert op_of(module, "nn.add").results[0].type == TensorType(DType.F32, ("B", 3, 4))


# -- diagnostics ----------------------------------------------------------------------------


def test_mixed_element_types_are_rejected():
    model = node_model("Add", {"a": uniform(0, 1, 3), "b": ints(0, 3, 3, dtype=np.int64)}, ["c"])
    with pytest.raises(PirError, match=r"nn.add.*one element type, got f32, i64"):
        import_model(model)


def test_float_only_op_rejects_integers():
    model = node_model("Sin", {"x": ints(0, 3, 3)}, ["y"])
    with pytest.raises(PirError, match=r"nn.sin.*operand 'x' has element type i32, expected"):
        import_model(model)


def test_shapes_that_do_not_broadcast():
    model = node_model("Mul", {"a": uniform(0, 1, 3, 4), "b": uniform(0, 1, 5)}, ["c"])
    with pytest.raises(PirError, match="dims 4 and 5 do not broadcast"):
        import_model(model)


def test_bit_shift_needs_a_valid_direction():
    x = ints(0, 9, 3, dtype=np.uint8)
    model = node_model("BitShift", {"x": x, "y": x}, ["z"], direction="UP")
    with pytest.raises(PirError, match="direction must be LEFT or RIGHT, got 'UP'"):
        import_model(model)


def test_where_condition_must_be_boolean():
    feeds = {"c": uniform(0, 1, 3), "x": uniform(0, 1, 3), "y": uniform(0, 1, 3)}
    with pytest.raises(PirError, match="operand 'condition' has element type f32, expected .*i1"):
        import_model(node_model("Where", feeds, ["z"]))
