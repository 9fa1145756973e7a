"""Cast, CastLike and BitCast: import, round trip, run, and compare with ONNX Runtime (or with
ONNX's rules where ONNX Runtime is older than the op); type rules and their diagnostics."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from helpers import check_model, node_model, roundtrip
from onnx import TensorProto

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.func import FuncOp
from pir.ir.parser import parse_module
from pir.ir.types import DType
from pir.runtimes.reference import run_function

rng = np.random.default_rng(0)
F8 = {TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
      TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
      TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
      TensorProto.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz}


def op_of(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return next(o for o in fn.walk() if o.name == name)


def check_exact(model, feeds, want):
    """Import, round trip and run ``model``; compare bit-exactly with ``want``, NaN included
    (check_model cannot: ml_dtypes' NaN compare unequal, and ONNX Runtime returns no float8)."""
    module = import_model(model)
    got = run_function(parse_module(roundtrip(module)), feeds)["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    assert np.array_equal(np.signbit(got.astype(np.float32)), np.signbit(want.astype(np.float32)))
    return module


def cast_model(x, to, opset=21, **attrs):
    return node_model("Cast", {"x": x}, ["y"], opset=opset, to=to, **attrs)


NUMERIC = [np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint8, np.bool_]


@pytest.mark.parametrize("src", NUMERIC)
@pytest.mark.parametrize("dst", NUMERIC)
def test_numeric_casts_match_ort(src, dst):
    x = rng.uniform(-50, 50, (3, 4)).astype(src)
    if np.dtype(src).kind in "u" or np.dtype(dst).kind == "u":
        x = np.abs(x)  # float to unsigned of a negative value is undefined in ONNX
    module = check_model(cast_model(x, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dst))),
                         {"x": x})
    assert op_of(module, "nn.cast").to is DType.from_numpy(dst)


@pytest.mark.parametrize("opset", [7, 13])
def test_cast_of_old_opsets(opset):
    x = rng.uniform(-5, 5, (2, 3)).astype(np.float32)
    check_model(cast_model(x, TensorProto.INT32, opset=opset), {"x": x})


def test_cast_to_and_from_strings():
    x = np.array([1.5, -2.0, 0.25, 100.0, 1e10, 1 / 3, np.nan, np.inf, -np.inf], np.float32)
    check_model(cast_model(x, TensorProto.STRING), {"x": x})
    b = np.array([True, False])
    check_model(cast_model(b, TensorProto.STRING), {"x": b})
    s = np.array(["1.5", "-2", "1e-5", "INF", "-inf", "+INF", "NaN"], dtype=object)
    module = check_model(cast_model(s, TensorProto.FLOAT), {"x": s})
    assert op_of(module, "nn.cast").results[0].type.dtype is DType.F32
    n = np.array(["12", "-7", "0"], dtype=object)
    check_model(cast_model(n, TensorProto.INT64), {"x": n})


SPECIALS = np.array([0.4, -3.3, 1000.0, 1e6, -1e6, np.inf, -np.inf, 1e-9, -0.0, 300.0, 57344.0],
                    np.float32)


@pytest.mark.parametrize("to", list(F8))
@pytest.mark.parametrize("saturate", [1, 0])
def test_float8_saturation(to, saturate):
    x = SPECIALS
    dtype = F8[to]
    info = ml_dtypes.finfo(dtype)
    if saturate:  # out of range and infinities clamp to the largest finite value
        want = np.clip(x.astype(np.float64), float(info.min), float(info.max)).astype(dtype)
        assert not np.isnan(want.astype(np.float32)).any()
    else:  # they become inf (E5M2) or NaN
        want = x.astype(dtype)
    check_exact(cast_model(x, to, saturate=saturate), {"x": x}, want)


def test_float8_values_by_the_onnx_tables():
    x = SPECIALS
    e4m3 = [0.40625, -3.25, 448, 448, -448, 448, -448, 0, -0.0, 288, 448]
    check_exact(cast_model(x, TensorProto.FLOAT8E4M3FN), {"x": x},
                np.array(e4m3, np.float32).astype(ml_dtypes.float8_e4m3fn))
    e5m2 = [0.375, -3.5, 1024, np.inf, -np.inf, np.inf, -np.inf, 0, -0.0, 320, 57344]
    check_exact(cast_model(x, TensorProto.FLOAT8E5M2, saturate=0), {"x": x},
                np.array(e5m2, np.float32).astype(ml_dtypes.float8_e5m2))


def test_float8e8m0_rounding_modes():
    x = np.array([1.0, 1.1, 1.5, 1.9, 0.25, 3.0, 0.0, 2.0 ** 127 * 1.5], np.float32)
    want = {  # exponents of 2 (the value is 2^e)
        "up": [0, 1, 1, 1, -2, 2, -127, 127],
        "down": [0, 0, 0, 0, -2, 1, -127, 127],
        "nearest": [0, 0, 1, 1, -2, 2, -127, 127],
    }
    for mode, exps in want.items():
        y = np.exp2(np.array(exps, np.float64)).astype(ml_dtypes.float8_e8m0fnu)
        model = cast_model(x, TensorProto.FLOAT8E8M0, opset=24, round_mode=mode)
        check_exact(model, {"x": x}, y)


@pytest.mark.parametrize("to,dtype", [(TensorProto.INT4, ml_dtypes.int4),
                                      (TensorProto.UINT4, ml_dtypes.uint4),
                                      (TensorProto.INT2, ml_dtypes.int2),
                                      (TensorProto.FLOAT4E2M1, ml_dtypes.float4_e2m1fn)])
def test_narrow_types_round_trip(to, dtype):
    x = np.arange(-3, 4).astype(np.float32)
    narrow = x.astype(dtype)
    check_exact(cast_model(x, to, opset=25), {"x": x}, narrow)
    back = cast_model(narrow, TensorProto.FLOAT, opset=25)
    check_exact(back, {"x": narrow}, narrow.astype(np.float32))


@pytest.mark.parametrize("src,like", [(np.float32, np.float16), (np.int64, np.float32),
                                      (np.float32, np.int32), (np.float64, np.bool_)])
def test_cast_like(src, like):
    x = rng.uniform(0, 20, (3, 4)).astype(src)
    target = np.zeros((1,), like)
    module = check_model(node_model("CastLike", {"x": x, "like": target}, ["y"], opset=21),
                         {"x": x, "like": target})
    assert op_of(module, "nn.cast").to is DType.from_numpy(like)


@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.int64, np.float64),
                                     (np.uint16, np.int16), (np.bool_, np.uint8),
                                     (np.float16, ml_dtypes.bfloat16)])
@pytest.mark.parametrize("shape", [(3,), (2, 3), ()])
def test_bit_cast(src, dst, shape):
    # BitCast is opset 26, newer than ONNX Runtime: the reference is numpy's view.
    x = rng.integers(0, 100, shape).astype(src)
    to = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dst))
    model = node_model("BitCast", {"x": x}, ["y"], opset=26, to=to)
    check_model(model, {"x": x}, expected={"y": x.view(dst)})


def test_bit_cast_sub_byte_types():
    x = np.array([-8, -1, 0, 7], ml_dtypes.int4)
    model = node_model("BitCast", {"x": x}, ["y"], opset=26, to=TensorProto.UINT4)
    check_model(model, {"x": x}, expected={"y": np.array([8, 15, 0, 7], ml_dtypes.uint4)})


# -- diagnostics ----------------------------------------------------------------------------


def test_bit_cast_needs_equal_widths():
    x = np.zeros(3, np.float32)
    model = node_model("BitCast", {"x": x}, ["y"], opset=26, to=TensorProto.FLOAT16)
    with pytest.raises(PirError, match=r"cannot bit-cast f32 \(32 bits\) to f16 \(16 bits\)"):
        import_model(model)


def test_cast_needs_a_target_type():
    model = node_model("Cast", {"x": np.zeros(3, np.float32)}, ["y"])
    with pytest.raises(PirError, match=r"\(Cast\): missing attribute 'to'"):
        import_model(model)


def test_cast_round_mode_must_be_known():
    model = cast_model(np.ones(3, np.float32), TensorProto.FLOAT8E8M0, opset=24,
                       round_mode="sideways")
    with pytest.raises(PirError, match="round_mode must be up, down or nearest, got 'sideways'"):
        import_model(model)
