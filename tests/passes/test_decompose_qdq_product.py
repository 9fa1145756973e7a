"""A product of two dequantized operands (a QDQ model's MatMul) decomposes into the product
of their centred integers (exact in float32 below 2**24), scaled once: what onnxruntime's
optimized run computes with its integer kernels.  The float product of the dequantized
values rounds every term, and a quantizer after it then flips quanta."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from helpers import check_pipeline
from pir.frontends.onnx.importer import import_model
from pir.runtimes.reference.interpreter import run_function

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _qdq_matmul(per_column: bool) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    k, n = 96, 32
    w = rng.integers(-127, 128, size=(k, n)).astype(np.int8)
    ws = (rng.uniform(0.001, 0.01, size=n) if per_column else np.array(0.004)).astype(np.float32)
    wz = np.zeros(n if per_column else (), np.int8)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(ws, "ws"),
             numpy_helper.from_array(wz, "wz"),
             numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
             numpy_helper.from_array(np.array(128, np.uint8), "xz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=1),
             helper.make_node("MatMul", ["xd", "wd"], ["y"])]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["B", 7, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def _exact(model, x):
    """The product of the centred integers in float64 (exact), times the scales."""
    a = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    xq = np.clip(np.rint(x / a["xs"]) + 128, 0, 255).astype(np.float64) - 128
    acc = xq @ a["w"].astype(np.float64)
    return (acc.astype(np.float32) * (a["xs"] * a["ws"])).astype(np.float32)


def test_the_product_is_taken_on_the_integers():
    for per_column in (False, True):
        model = _qdq_matmul(per_column)
        module = import_model(model)
        x = np.random.default_rng(1).normal(size=(2, 7, 96)).astype(np.float32)
        fused = check_pipeline(module, {"x": x}, "decompose", rtol=1e-5, atol=1e-5)
        got = run_function(fused, {"x": x})["y"]
        # exactly the integer computation (the float product of the dequantized values
        # rounds each of the 96 terms: it is not)
        np.testing.assert_array_equal(got, _exact(model, x))
        check_pipeline(module, {"x": x}, FUSE, rtol=1e-5, atol=1e-5)


def test_a_qdq_conv_is_taken_on_the_integers():
    """The same for a convolution: per-tensor activations, per-output-channel weights."""
    rng = np.random.default_rng(2)
    w = rng.integers(-127, 128, size=(8, 4, 3, 3)).astype(np.int8)
    ws = rng.uniform(0.001, 0.01, size=8).astype(np.float32)
    bias = rng.normal(size=8).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(ws, "ws"),
             numpy_helper.from_array(np.zeros(8, np.int8), "wz"),
             numpy_helper.from_array(bias, "bias"),
             numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
             numpy_helper.from_array(np.array(128, np.uint8), "xz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd", "bias"], ["y"], kernel_shape=[3, 3])]
    graph = helper.make_graph(nodes, "qconv", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["B", 4, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    module = import_model(model)
    x = rng.normal(size=(2, 4, 9, 11)).astype(np.float32)
    fused = check_pipeline(module, {"x": x}, "decompose", rtol=1e-5, atol=1e-5)
    xq = np.clip(np.rint(x / np.float32(0.02)) + 128, 0, 255).astype(np.float64) - 128
    win = np.lib.stride_tricks.sliding_window_view(xq, (3, 3), axis=(2, 3))
    acc = np.einsum("bchwij,ocij->bohw", win, w.astype(np.float64))
    scale = (np.float32(0.02) * ws).reshape(1, 8, 1, 1)
    want = acc.astype(np.float32) * scale + bias.reshape(1, 8, 1, 1)
    np.testing.assert_array_equal(run_function(fused, {"x": x})["y"], want)
    check_pipeline(module, {"x": x}, FUSE, rtol=1e-5, atol=1e-5)
