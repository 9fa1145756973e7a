"""Pooling: AveragePool, MaxPool (with Indices), LpPool, GlobalAveragePool, GlobalMaxPool,
imported from one-node ONNX models and checked against ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_model, node_model

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model

RNG = np.random.default_rng(1)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


WINDOW_CASES = [  # (x shape, attributes)
    ((1, 2, 9), {"kernel_shape": [3]}),
    ((2, 3, 8, 8), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ((1, 2, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 2, 7, 6), {"kernel_shape": [3, 2], "pads": [2, 0, 1, 1]}),
    ((1, 2, 8, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 1, 7, 7), {"kernel_shape": [3, 3], "strides": [3, 3], "pads": [1, 1, 1, 1],
                    "ceil_mode": 1}),  # the last window would start in the end padding
    ((1, 2, 9, 9), {"kernel_shape": [2, 3], "dilations": [2, 2], "strides": [1, 2]}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 2, 7, 8), {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 2], "auto_pad": "VALID", "strides": [2, 2]}),
    ((1, 2, 5, 6, 4), {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2],
                       "pads": [1, 0, 0, 0, 1, 1]}),
]


@pytest.mark.parametrize("x_shape,attrs", WINDOW_CASES)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool(x_shape, attrs, count_include_pad):
    x = randn(*x_shape)
    model = node_model("AveragePool", {"x": x}, ["y"], count_include_pad=count_include_pad,
                       **attrs)
    check_model(model, {"x": x}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("x_shape,attrs", WINDOW_CASES)
def test_max_pool(x_shape, attrs):
    x = randn(*x_shape)
    check_model(node_model("MaxPool", {"x": x}, ["y"], **attrs), {"x": x})


@pytest.mark.parametrize("x_shape,attrs", [c for c in WINDOW_CASES if len(c[0]) == 4])
@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(x_shape, attrs, storage_order):
    x = randn(*x_shape)
    model = node_model("MaxPool", {"x": x}, ["y", "indices"], storage_order=storage_order,
                       **attrs)
    module = check_model(model, {"x": x})
    assert str(module.funcs[0].return_op.operands[1].type).endswith("xi64>")


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_max_pool_integers(dtype):
    x = RNG.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (1, 2, 6, 6)).astype(dtype)
    model = node_model("MaxPool", {"x": x}, ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                       strides=[2, 2])
    check_model(model, {"x": x})


def test_max_pool_ties_pick_the_first():
    x = np.zeros((1, 1, 4, 4), np.float32)
    model = node_model("MaxPool", {"x": x}, ["y", "indices"], kernel_shape=[2, 2],
                       strides=[2, 2])
    check_model(model, {"x": x}, expected={"y": np.zeros((1, 1, 2, 2), np.float32),
                                           "indices": np.array([[[[0, 2], [8, 10]]]])})


@pytest.mark.parametrize("x_shape,attrs", [c for c in WINDOW_CASES if "dilations" not in c[1]
                                           and "ceil_mode" not in c[1]])
@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool(x_shape, attrs, p):
    x = randn(*x_shape)
    check_model(node_model("LpPool", {"x": x}, ["y"], p=p, **attrs), {"x": x},
                rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op_type", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 4, 3, 3), (2, 2, 3, 4, 2)])
def test_global_pool(op_type, shape):
    x = randn(*shape)
    module = check_model(node_model(op_type, {"x": x}, ["y"]), {"x": x})
    assert module.funcs[0].return_op.operands[0].type.shape == shape[:2] + (1,) * (len(shape) - 2)


def test_average_pool_old_opset_defaults():
    # Opset 7 has no ceil_mode or dilations; the nn op's defaults stand in for them.
    x = randn(1, 1, 6, 6)
    model = node_model("AveragePool", {"x": x}, ["y"], opset=7, kernel_shape=[3, 3],
                       pads=[1, 1, 1, 1])
    check_model(model, {"x": x})


# -- errors --------------------------------------------------------------------------------

def test_pool_kernel_shape_rank_is_checked():
    x = randn(1, 1, 6, 6)
    model = node_model("MaxPool", {"x": x}, ["y"], kernel_shape=[3])
    with pytest.raises(PirError, match=r"kernel_shape \[3\] does not match the 2 spatial dims"):
        import_model(model)


def test_pool_kernel_shape_is_required():
    x = randn(1, 1, 6, 6)
    with pytest.raises(PirError, match="missing required attribute 'kernel_shape'"):
        import_model(node_model("LpPool", {"x": x}, ["y"]))


def test_pool_symbolic_dims():
    import onnx
    from onnx import helper

    from pir.runtimes.reference import run_function

    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 3, "H", 8])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 21)])
    module = import_model(model)
    shape = module.funcs[0].return_op.operands[0].type.shape
    assert shape[0] == "N" and shape[1:] == (3, shape[2], 4) and not isinstance(shape[2], int)
    feeds = {"x": randn(2, 3, 6, 8)}
    want = feeds["x"].reshape(2, 3, 3, 2, 4, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(run_function(module, feeds)["y"], want)


def test_pool_input_rank_is_checked():
    x = randn(4, 6)
    model = node_model("AveragePool", {"x": x}, ["y"], kernel_shape=[3])
    with pytest.raises(PirError, match=r"must have rank >= 3 \(N, C, spatial...\)"):
        import_model(model)


def test_pool_window_too_large_is_an_error():
    x = randn(1, 1, 2, 2)
    model = node_model("MaxPool", {"x": x}, ["y"], kernel_shape=[3, 3])
    with pytest.raises(PirError, match="too small for a window of 3"):
        import_model(model)
