"""Integer products of a quantized model compiled (pir.codegen.tvm.weights, int_range):
MatMulInteger and ConvInteger by weights computed from constants (``cast(w) - zero point``)
become kernels whose weights are evaluated and packed at codegen, narrowed to the smallest
integer type, and computed in float32 exactly where codegen proves every partial sum below
2**24, else in int32.  Results are integers: they must equal the reference exactly."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("tvm")

from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.codegen.tvm.int_range import float32_exact, value_range  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.ir.types import DType  # noqa: E402
from pir.ir.verifier import verify_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from helpers import AVX512  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _model(node: onnx.NodeProto, inputs: list, output, inits: dict) -> onnx.ModelProto:
    graph = helper.make_graph([node], "q", inputs, [output],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def _matmul_integer(k: int, n: int, w: np.ndarray, w_zp: int) -> onnx.ModelProto:
    """y [rows, n] i32 = MatMulInteger(a [rows, k] u8, w u8 constant, a_zp input, w_zp)."""
    node = helper.make_node("MatMulInteger", ["a", "w", "a_zp", "w_zp"], ["y"])
    inputs = [helper.make_tensor_value_info("a", TensorProto.UINT8, ["rows", k]),
              helper.make_tensor_value_info("a_zp", TensorProto.UINT8, [])]
    out = helper.make_tensor_value_info("y", TensorProto.INT32, ["rows", n])
    return _model(node, inputs, out, {"w": w, "w_zp": np.array(w_zp, np.uint8)})


def _compile(model):
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    before = parse_module(print_module(module))
    codegen_module(module, AVX512)
    verify_module(module)
    return parse_module(print_module(module)), before


def _product_kernel(module) -> TvmKernelOp:
    (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)
                 and any(o.name in ("prim.dot_general", "prim.conv")
                         for o in op.body.block.ops)]
    return kernel


def _dot_dtype(kernel) -> DType:
    (dot,) = [o for o in kernel.body.block.ops if o.name in ("prim.dot_general", "prim.conv")]
    return dot.results[0].type.dtype


@pytest.mark.parametrize("rows", [1, 5, 20])
def test_a_matmul_integer_by_quantized_weights_is_an_exact_float32_kernel(rows):
    rng = np.random.default_rng(0)
    w = rng.integers(90, 150, (96, 40)).astype(np.uint8)  # minus 119: [-29, 30]
    module, before = _compile(_matmul_integer(96, 40, w, 119))
    # nothing runs on the host: the product and the weights' centring are one kernel
    assert not [op for op in module.funcs[0].entry.ops if op.name == "prim.dot_general"]
    kernel = _product_kernel(module)
    packed = [o for o in kernel.body.block.ops if o.name == "builtin.constant"
              and len(o.results[0].type.shape) == 3]  # [N/BN, K, BN] panels
    # the weights shifted by 128 (decompose takes the zero points out of the product):
    # [-38, 21] fits int8
    assert [c.results[0].type.dtype for c in packed] == [DType.I8]
    assert _dot_dtype(kernel) == DType.F32  # 255 * 96 * 30 < 2**24: exact in float32
    # the model's uint8 weights are gone from the file, not kept beside the packed ones
    assert not [k for k, a in module.resources.items() if a.shape == (96, 40)]
    feeds = {"a": rng.integers(0, 256, (rows, 96)).astype(np.uint8),
             "a_zp": np.array(131, np.uint8)}
    got = TvmInterpreter(module).run(module.funcs[0], feeds)["y"]
    want = run_function(before, feeds)["y"]
    exact = (feeds["a"].astype(np.int64) - 131) @ (w.astype(np.int64) - 119)
    np.testing.assert_array_equal(want, exact)
    np.testing.assert_array_equal(got, exact)


def test_sums_float32_cannot_hold_exactly_stay_int32():
    """255 * 255 * 1024 is past 2**24: the bound fails and the kernel computes in int32,
    whose sums are odd integers no float32 holds."""
    w = np.full((1024, 32), 255, np.uint8)
    w[::2] = 254
    module, before = _compile(_matmul_integer(1024, 32, w, 0))
    kernel = _product_kernel(module)
    assert _dot_dtype(kernel) == DType.I32
    feeds = {"a": np.full((3, 1024), 255, np.uint8), "a_zp": np.array(0, np.uint8)}
    feeds["a"][:, 1] = 254
    got = TvmInterpreter(module).run(module.funcs[0], feeds)["y"]
    exact = feeds["a"].astype(np.int64) @ w.astype(np.int64)
    assert (exact > 1 << 24).all() and (exact % 2 == 1).any()
    np.testing.assert_array_equal(got, exact)
    np.testing.assert_array_equal(run_function(before, feeds)["y"], exact)


def test_weights_with_two_free_dims_and_a_unit_row_dim():
    """The product of a DynamicQuantizeLSTM's input projection: x [T, 1, K] by the int8
    weights of both directions [2, K, N] -> [T, 1, 2, N]; the kernel's rows are the steps."""
    rng = np.random.default_rng(3)
    w = rng.integers(-64, 64, (2, 48, 32)).astype(np.int8)
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, ["T", 1, 48])
    nodes = [helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT32),
             helper.make_node("Cast", ["w"], ["wi"], to=TensorProto.INT32),
             helper.make_node("Unsqueeze", ["xi", "axis"], ["xu"]),
             helper.make_node("MatMul", ["xu", "wi"], ["m"]),  # [T, 2, 1, 32]
             helper.make_node("Transpose", ["m"], ["y"], perm=[0, 2, 1, 3])]
    inits = {"w": w, "axis": np.array([1], np.int64)}
    graph = helper.make_graph(nodes, "q", [x], [helper.make_tensor_value_info(
        "y", TensorProto.INT32, ["T", 1, 2, 32])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    module, before = _compile(model)
    feeds = {"x": rng.integers(0, 256, (7, 1, 48)).astype(np.uint8)}
    got = TvmInterpreter(module).run(module.funcs[0], feeds)["y"]
    exact = np.einsum("tk,dkn->tdn", feeds["x"][:, 0].astype(np.int64), w)[:, None]
    np.testing.assert_array_equal(run_function(before, feeds)["y"], exact)
    np.testing.assert_array_equal(got, exact)


def test_a_conv_integer_with_symbolic_width_computes_in_float32():
    rng = np.random.default_rng(4)
    w = rng.integers(100, 140, (16, 8, 3, 3)).astype(np.uint8)
    node = helper.make_node("ConvInteger", ["x", "w", "x_zp", "w_zp"], ["y"], pads=[1, 1, 1, 1])
    inputs = [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 8, 6, "W"]),
              helper.make_tensor_value_info("x_zp", TensorProto.UINT8, [])]
    out = helper.make_tensor_value_info("y", TensorProto.INT32, [1, 16, 6, "W"])
    module, before = _compile(_model(node, inputs, out, {"w": w,
                                                         "w_zp": np.array(120, np.uint8)}))
    assert _dot_dtype(_product_kernel(module)) == DType.F32
    for width in (5, 11):
        feeds = {"x": rng.integers(0, 256, (1, 8, 6, width)).astype(np.uint8),
                 "x_zp": np.array(7, np.uint8)}
        got = TvmInterpreter(module).run(module.funcs[0], feeds)["y"]
        np.testing.assert_array_equal(got, run_function(before, feeds)["y"])


def test_value_ranges_follow_casts_centring_and_a_quantizers_clamp():
    text = """module {
  func.func @main(%a: tensor<4xui8>, %z: tensor<ui8>, %f: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
    %c0 = builtin.constant() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
    %c255 = builtin.constant() {value = dense<255.0> : tensor<4xf32>} : () -> tensor<4xf32>
    %ai = prim.cast(%a) {dtype = i32} : (tensor<4xui8>) -> tensor<4xi32>
    %zi = prim.cast(%z) {dtype = i32} : (tensor<ui8>) -> tensor<i32>
    %zb = prim.broadcast_in_dim(%zi) {broadcast_dimensions = []} : (tensor<i32>) -> tensor<4xi32>
    %centred = prim.sub(%ai, %zb) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    %lo = prim.max(%f, %c0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %hi = prim.min(%lo, %c255) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %r = prim.round(%hi) : (tensor<4xf32>) -> tensor<4xf32>
    %q = prim.cast(%r) {dtype = i32} : (tensor<4xf32>) -> tensor<4xi32>
    func.return(%centred, %q, %i) : (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) -> ()
  }
}"""
    module = parse_module(text)
    centred, q, i = module.funcs[0].entry.terminator.operands
    assert value_range(centred) == (-255, 255)
    assert value_range(q) == (0, 255)
    assert value_range(i) == (-(1 << 31), (1 << 31) - 1)  # an input: its type's range
    w = np.full((64, 3), 1000, np.int32)  # 255 * 64 * 1000 = 16.3M: just below 2**24
    assert float32_exact(centred, w)
    assert not float32_exact(centred, w + 30)  # 255 * 64 * 1030 = 16.8M: past it
    assert not float32_exact(i, np.ones((2, 2), np.int32))
