"""Linear quantisation and the quantised matrix products: import, round trip, run, and compare
with ONNX Runtime (or with the ONNX formula where ONNX Runtime lacks a kernel); type rules and
their diagnostics."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import check_model, node_model
from onnx import TensorProto

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model

rng = np.random.default_rng(0)


def uniform(*shape, lo=-10.0, hi=10.0, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def ints(*shape, dtype=np.uint8):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


# (x shape, scale shape, zero point dtype or None, attributes)
QUANTIZE = [
    ((6,), (), np.uint8, {}),
    ((6,), (), np.int8, {}),
    ((6,), (), None, {}),  # no zero point: ui8 around 0
    ((2, 3, 4), (3,), np.uint8, {}),  # per axis, default axis 1
    ((2, 3, 4), (4,), np.int8, {"axis": -1}),
    ((3, 4), (3, 2), np.uint8, {"axis": 1, "block_size": 2}),  # blocked
    ((3, 5), (3, 2), np.int8, {"axis": 1, "block_size": 3}),  # a short last block
    ((12,), (), np.uint16, {}),
    ((12,), (), np.int16, {}),
]


@pytest.mark.parametrize("x_shape, s_shape, zp_dtype, attrs", QUANTIZE)
def test_quantize_linear(x_shape, s_shape, zp_dtype, attrs):
    feeds = {"x": uniform(*x_shape, lo=-300, hi=300),  # far enough out to saturate
             "y_scale": uniform(*s_shape, lo=0.5, hi=2.0)}
    if zp_dtype is not None:
        info = np.iinfo(zp_dtype)
        feeds["y_zero_point"] = rng.integers(info.min // 2, info.max // 2, s_shape).astype(zp_dtype)
    check_model(node_model("QuantizeLinear", feeds, ["y"], **attrs), feeds)


def test_quantize_linear_rounds_half_to_even():
    feeds = {"x": np.array([0.5, 1.5, 2.5, -0.5, -1.5, 254.5, 300.0], np.float32),
             "y_scale": np.array(1.0, np.float32), "y_zero_point": np.array(0, np.uint8)}
    expected = {"y": np.array([0, 2, 2, 0, 0, 254, 255], np.uint8)}
    check_model(node_model("QuantizeLinear", feeds, ["y"]), feeds, expected=expected)


@pytest.mark.parametrize("out, dtype, lo, hi", [(TensorProto.INT4, ml_dtypes.int4, -8, 7),
                                                (TensorProto.UINT4, ml_dtypes.uint4, 0, 15)])
def test_quantize_linear_output_dtype_int4(out, dtype, lo, hi):
    # ONNX Runtime cannot hand 4-bit tensors to numpy: compare with the ONNX formula.
    feeds = {"x": uniform(3, 4), "y_scale": np.array(0.5, np.float32)}
    want = np.clip(np.rint(feeds["x"] / 0.5), lo, hi).astype(dtype)
    check_model(node_model("QuantizeLinear", feeds, ["y"], opset=21, output_dtype=out), feeds,
                expected={"y": want})


@pytest.mark.parametrize("saturate", [1, 0])
def test_quantize_linear_float8(saturate):
    feeds = {"x": np.array([0.0, 1.0, -3.3, 500.0, -1000.0, np.inf], np.float32),
             "y_scale": np.array(1.0, np.float32),
             "y_zero_point": np.zeros((), ml_dtypes.float8_e4m3fn)}
    big = 448.0 if saturate else np.nan  # e4m3fn has no infinity: overflow is NaN unless saturated
    want = np.array([0.0, 1.0, -3.25, big, -big, big], np.float32).astype(ml_dtypes.float8_e4m3fn)
    module = import_model(node_model("QuantizeLinear", feeds, ["y"], saturate=saturate))
    from pir.runtimes.reference import run_function

    got = run_function(module, feeds)["y"]
    assert got.dtype == ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize("x_shape, s_shape, x_dtype, attrs", [
    ((6,), (), np.uint8, {}),
    ((6,), (), np.int8, {}),
    ((2, 3, 4), (3,), np.uint8, {}),
    ((2, 3, 4), (4,), np.int8, {"axis": 2}),
    ((4, 3), (2, 3), np.uint8, {"axis": 0, "block_size": 2}),
    ((5,), (), np.int32, {}),
])
@pytest.mark.parametrize("with_zero_point", [True, False])
def test_dequantize_linear(x_shape, s_shape, x_dtype, attrs, with_zero_point):
    feeds = {"x": ints(*x_shape, dtype=x_dtype) if x_dtype != np.int32
             else rng.integers(-1000, 1000, x_shape).astype(np.int32),
             "x_scale": uniform(*s_shape, lo=0.01, hi=2.0)}
    if with_zero_point and x_dtype != np.int32:
        feeds["x_zero_point"] = ints(*s_shape, dtype=x_dtype)
    check_model(node_model("DequantizeLinear", feeds, ["y"], **attrs), feeds)


def test_dequantize_linear_int4_to_float16():
    x = np.array([-8, -1, 0, 3, 7], ml_dtypes.int4)
    feeds = {"x": x, "x_scale": np.array(0.5, np.float16),
             "x_zero_point": np.array(1, ml_dtypes.int4)}
    want = ((x.astype(np.float32) - 1) * 0.5).astype(np.float16)
    check_model(node_model("DequantizeLinear", feeds, ["y"], opset=21), feeds,
                expected={"y": want})


@pytest.mark.parametrize("x", [
    np.array([0, 2, -3, -2.5, 1.34, 0.5], np.float32),
    np.array([-1.0, -2.1, -1.3, -2.5, -3.34, -4.0], np.float32),  # all negative: max is 0
    np.array([1, 2.1, 1.3, 2.5, 3.34, 4.0, 1.5, 2.6, 3.9, 4.0, 3.0, 2.345], np.float32).reshape(3, 4),
])
def test_dynamic_quantize_linear(x):
    check_model(node_model("DynamicQuantizeLinear", {"x": x}, ["y", "y_scale", "y_zero_point"],
                           opset=11), {"x": x})


@pytest.mark.parametrize("a_dtype, b_dtype", [(np.uint8, np.uint8), (np.uint8, np.int8),
                                              (np.int8, np.int8)])
@pytest.mark.parametrize("a_shape, b_shape, zero_points", [
    ((4, 3), (3, 2), "none"),
    ((4, 3), (3, 2), "scalar"),
    ((2, 4, 3), (3, 5), "scalar"),
    ((4, 3), (3, 5), "per column"),  # b's zero point: one per column
])
def test_matmul_integer(a_dtype, b_dtype, a_shape, b_shape, zero_points):
    if a_dtype == np.int8 and b_dtype == np.uint8:
        pytest.skip("ONNX Runtime has no int8 x uint8 kernel")
    feeds = {"A": ints(*a_shape, dtype=a_dtype), "B": ints(*b_shape, dtype=b_dtype)}
    if (a_dtype, b_dtype) == (np.uint8, np.int8):
        feeds["B"] = feeds["B"] // 2  # ORT's u8 x s8 kernel may saturate (see test_conv.py)
    if zero_points == "scalar":
        feeds["a_zero_point"] = ints(dtype=a_dtype)
        feeds["b_zero_point"] = ints(dtype=b_dtype)
    elif zero_points == "per column":
        feeds["a_zero_point"] = ints(dtype=a_dtype)
        feeds["b_zero_point"] = ints(b_shape[-1], dtype=b_dtype)
    check_model(node_model("MatMulInteger", feeds, ["Y"], opset=10), feeds)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("a_shape, b_shape", [((2, 4), (4, 3)), ((2, 2, 4), (2, 4, 3))])
def test_qlinear_matmul(dtype, a_shape, b_shape):
    feeds = {
        "a": ints(*a_shape, dtype=dtype), "a_scale": np.array([0.0066], np.float32),
        "a_zero_point": np.array([3], dtype),
        "b": ints(*b_shape, dtype=dtype), "b_scale": np.array([0.00705], np.float32),
        "b_zero_point": np.array([-2 if dtype == np.int8 else 114], dtype),
        "y_scale": np.array([0.0107], np.float32), "y_zero_point": np.array([5], dtype),
    }
    check_model(node_model("QLinearMatMul", feeds, ["y"], opset=21), feeds)


def test_quantize_per_axis_scale_must_fit_axis():
    feeds = {"x": uniform(2, 3, 4), "y_scale": uniform(4, lo=0.5, hi=1)}
    with pytest.raises(PirError, match="the per-axis scale has 4 values for axis 1 of size 3"):
        import_model(node_model("QuantizeLinear", feeds, ["y"]))


def test_quantize_blocked_scale_must_cover_blocks():
    feeds = {"x": uniform(3, 4), "y_scale": uniform(3, 3, lo=0.5, hi=1)}
    with pytest.raises(PirError, match=r"blocks of 2 along axis 1 \(size 4\) need 2 scales, got 3"):
        import_model(node_model("QuantizeLinear", feeds, ["y"], axis=1, block_size=2))


def test_quantize_output_dtype_must_match_zero_point():
    feeds = {"x": uniform(3), "y_scale": np.array(1.0, np.float32),
             "y_zero_point": np.array(0, np.uint8)}
    with pytest.raises(PirError, match="output_dtype i8 differs from the zero point's type ui8"):
        import_model(node_model("QuantizeLinear", feeds, ["y"], output_dtype=TensorProto.INT8))


def test_dequantize_zero_point_must_have_x_type():
    feeds = {"x": ints(4), "x_scale": np.array(1.0, np.float32),
             "x_zero_point": np.array(0, np.int8)}
    with pytest.raises(PirError, match="the zero point's type i8 differs from x's ui8"):
        import_model(node_model("DequantizeLinear", feeds, ["y"]))
