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


#: the activations' quantizer: per tensor, uint8 around 128
XS, XZ = np.float32(0.02), 128


def _qdq_model(op, w, ws, w_axis, x_shape, extra=(), **attrs) -> onnx.ModelProto:
    """x -> QuantizeLinear -> DequantizeLinear (per tensor), w -> DequantizeLinear (scales
    ``ws`` along ``w_axis``, zero points 0), then ``op(xd, wd, *extra)``; ``extra``: more
    initializers (name, array) the op takes after its two operands."""
    wz = np.zeros(np.shape(ws), np.int8)
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("w", w), ("ws", ws), ("wz", wz), ("xs", np.array(XS)),
              ("xz", np.array(XZ, np.uint8)), *extra]]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=w_axis),
             helper.make_node(op, ["xd", "wd", *(n for n, _ in extra)], ["y"], **attrs)]
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def _centred_x(x: np.ndarray) -> np.ndarray:
    """x quantized as the model does, minus its zero point, in float64 (exact)."""
    return np.clip(np.rint(x / XS) + XZ, 0, 255).astype(np.float64) - XZ


def test_the_product_is_taken_on_the_integers():
    rng = np.random.default_rng(0)
    k, n = 96, 32
    w = rng.integers(-127, 128, size=(k, n)).astype(np.int8)
    for per_column in (False, True):
        ws = (rng.uniform(0.001, 0.01, size=n) if per_column
              else np.array(0.004)).astype(np.float32)
        model = _qdq_model("MatMul", w, ws, 1, ["B", 7, k])
        module = import_model(model)
        x = np.random.default_rng(1).normal(size=(2, 7, 96)).astype(np.float32)
        fused = check_pipeline(module, {"x": x}, "decompose", rtol=1e-5, atol=1e-5)
        got = run_function(fused, {"x": x})["y"]
        # exactly the integer computation, the product of the centred integers in float64
        # times the scales (the float product of the dequantized values rounds each of the
        # 96 terms: it is not)
        want = (_centred_x(x) @ w.astype(np.float64)).astype(np.float32) * (XS * ws)
        np.testing.assert_array_equal(got, want)
        check_pipeline(module, {"x": x}, FUSE, rtol=1e-5, atol=1e-5)


def test_a_qdq_conv_is_taken_on_the_integers():
    """The same for a convolution: per-tensor activations, per-output-channel weights."""
    rng = np.random.default_rng(2)
    w = rng.integers(-127, 128, size=(8, 4, 3, 3)).astype(np.int8)
    ws = rng.uniform(0.001, 0.01, size=8).astype(np.float32)
    bias = rng.normal(size=8).astype(np.float32)
    model = _qdq_model("Conv", w, ws, 0, ["B", 4, "H", "W"], extra=[("bias", bias)],
                       kernel_shape=[3, 3])
    module = import_model(model)
    x = rng.normal(size=(2, 4, 9, 11)).astype(np.float32)
    fused = check_pipeline(module, {"x": x}, "decompose", rtol=1e-5, atol=1e-5)
    win = np.lib.stride_tricks.sliding_window_view(_centred_x(x), (3, 3), axis=(2, 3))
    acc = np.einsum("bchwij,ocij->bohw", win, w.astype(np.float64))
    scale = (XS * ws).reshape(1, 8, 1, 1)
    want = acc.astype(np.float32) * scale + bias.reshape(1, 8, 1, 1)
    np.testing.assert_array_equal(run_function(fused, {"x": x})["y"], want)
    check_pipeline(module, {"x": x}, FUSE, rtol=1e-5, atol=1e-5)
