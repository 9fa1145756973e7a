"""Numerical checks of the generated CUDA C without a GPU: each program is fused, code-generated
for CUDA, and its kernels run by the host emulation (g++, real threads per block, barriers for
__syncthreads and the warp shuffles; see pir.codegen.cuda.emulate) through the cuda runtime's
calling convention; the outputs must match the reference runtime.  Outputs are poisoned (NaN)
before each launch, so an element no thread writes fails the test."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_helpers import emulate_and_compare, fused, needs_gxx, parse
from helpers import node_model

from pir.frontends.onnx.importer import import_model

pytestmark = needs_gxx


def _schedules(module) -> list[str]:
    from pir.ir.dialects.kernel import CudaKernelOp

    return [op.source.splitlines()[0] for op in module.walk() if isinstance(op, CudaKernelOp)]


def _sources(module) -> list[str]:
    from pir.ir.dialects.kernel import CudaKernelOp

    return [op.source for op in module.walk() if isinstance(op, CudaKernelOp)]


def _rms(n: int, d: int, dtype: str = "f32") -> str:
    return f"""module @rms {{
  func.func @main(%x: tensor<Nx{d}x{dtype}>, %w: tensor<{d}x{dtype}>) -> (tensor<Nx{d}x{dtype}>) {{
    %y = nn.rms_norm(%x, %w) {{epsilon = 1e-06}} : (tensor<Nx{d}x{dtype}>, tensor<{d}x{dtype}>) -> tensor<Nx{d}x{dtype}>
    func.return(%y) : (tensor<Nx{d}x{dtype}>) -> ()
  }}
}}
"""


def test_elementwise_vectorised_with_broadcast_bias():
    # bias add + GELU: float4 loads of x, the bias by one vector load per 4 lanes
    rng = np.random.default_rng(0)
    x, b = rng.standard_normal((3, 256), np.float32), rng.standard_normal(256, np.float32)
    model = node_model("Add", {"x": x, "b": b}, ["h"], shapes={"x": ["N", 256]})
    m, _ = emulate_and_compare(import_model(model), {"x": x, "b": b})
    assert "4-wide vector loads" in _schedules(m)[0]


def test_elementwise_tail_and_odd_sizes():
    # 3 x 7 = 21 elements: 5 float4 vectors and a scalar tail of 1; the row length (7) is not
    # a multiple of 4, so every lane computes its own index
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 7), np.float32)
    m, _ = emulate_and_compare(import_model(node_model("Gelu", {"x": x}, ["y"], opset=20)),
                               {"x": x}, rtol=2e-5, atol=2e-6)
    assert "vector" in _schedules(m)[0]


def test_broadcast_by_index_arithmetic():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 5), np.float32)
    y = rng.standard_normal((3, 1), np.float32)
    z = rng.standard_normal((5,), np.float32)
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Mul", ["x", "y"], ["t"]), helper.make_node("Sub", ["t", "z"],
                                                                         ["o"])]
    graph = helper.make_graph(nodes, "bcast", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5]),
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 1]),
        helper.make_tensor_value_info("z", TensorProto.FLOAT, [5])],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, [2, 3, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    emulate_and_compare(import_model(model), {"x": x, "y": y, "z": z})


@pytest.mark.parametrize("d", [64, 4096])
def test_rms_norm_rows(d):
    # 64: a warp per row; 4096: a block of 256 per row, the row kept in registers (x read
    # once) across the sum-of-squares pass and the output pass
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, d), np.float32)
    w = (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)
    m, _ = emulate_and_compare(parse(_rms(3, d)), {"x": x, "w": w}, rtol=1e-5, atol=1e-6)
    sched = _schedules(m)[0]
    assert ("a warp per row" if d == 64 else "a block of 256 per row") in sched
    assert "input read once" in sched


def test_rms_norm_bfloat16_accumulates_in_float32():
    import ml_dtypes

    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 128)).astype(ml_dtypes.bfloat16)
    w = (1 + 0.1 * rng.standard_normal(128)).astype(ml_dtypes.bfloat16)
    m, _ = emulate_and_compare(parse(_rms(4, 128, "bf16")), {"x": x, "w": w}, rtol=1e-2,
                               atol=1e-2)
    source = _sources(m)[0]
    assert "const __nv_bfloat16* __restrict__ in0" in source
    assert "float acc" in source  # the sum of squares accumulates in float32


@pytest.mark.parametrize("shape", [(5, 37), (2, 3, 1500)])
def test_softmax(shape):
    # 37: a warp per row, scalar loads (37 is odd); 1500: a block per row
    rng = np.random.default_rng(5)
    x = (3 * rng.standard_normal(shape)).astype(np.float32)
    emulate_and_compare(import_model(node_model("Softmax", {"x": x}, ["y"], axis=-1)),
                        {"x": x}, rtol=1e-5, atol=1e-7)


def test_softmax_symbolic_row_length():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 4, 9), np.float32)
    model = node_model("Softmax", {"x": x}, ["y"], axis=-1, shapes={"x": ["B", 4, "S"]})
    m, _ = emulate_and_compare(import_model(model), {"x": x}, rtol=1e-5, atol=1e-7)
    assert "a warp per row" in _schedules(m)[0]


def test_layer_norm_with_constant_weights():
    # scale and bias are initialisers: non-splat constants passed as kernel parameters
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 96), np.float32)
    s = rng.standard_normal(96).astype(np.float32)
    b = rng.standard_normal(96).astype(np.float32)
    model = node_model("LayerNormalization", {"x": x}, ["y"], opset=17,
                       initializers={"s": s, "b": b}, epsilon=1e-5)
    emulate_and_compare(import_model(model), {"x": x}, rtol=1e-4, atol=1e-5)


def test_reduction_over_a_leading_axis_is_a_serial_loop():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((7, 3, 5), np.float32)
    model = node_model("ReduceMax", {"x": x}, ["y"], opset=18, keepdims=0,
                       initializers={"axes": np.array([0], np.int64)})
    m, _ = emulate_and_compare(import_model(model), {"x": x})
    assert "pointwise" in _schedules(m)[0]


@pytest.mark.parametrize("case", ["transpose", "concat", "pad", "slice", "gather"])
def test_data_movement(case):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 6, 5), np.float32)
    y = rng.standard_normal((4, 2, 5), np.float32)
    feeds = {"x": x}
    if case == "transpose":
        model = node_model("Transpose", {"x": x}, ["o"], perm=[2, 0, 1])
    elif case == "concat":
        model = node_model("Concat", {"x": x, "y": y}, ["o"], axis=1)
        feeds["y"] = y
    elif case == "pad":
        model = node_model("Pad", {"x": x}, ["o"], initializers={
            "p": np.array([0, 1, 2, 1, 0, 3], np.int64), "v": np.array(0.5, np.float32)})
    elif case == "slice":
        model = node_model("Slice", {"x": x}, ["o"], initializers={
            "s": np.array([1, 0], np.int64), "e": np.array([6, 5], np.int64),
            "a": np.array([1, 2], np.int64), "t": np.array([2, 2], np.int64)})
    else:
        model = node_model("Gather", {"x": x}, ["o"], axis=1, initializers={
            "i": np.array([[5, 0], [2, 2]], np.int64)})
    emulate_and_compare(import_model(model), feeds)


_FULL = __import__("os").environ.get("PIR_CUDA_FULL") == "1"
_MODELS = ["gpt2", "bert", "llama", "t5", "whisper", "vit", "resnet", "mobilenet"]


@pytest.mark.skipif(not _FULL, reason="every test model on the emulation: make cuda-check")
@pytest.mark.parametrize("name", _MODELS)
def test_models_on_the_emulation(name):
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "tests" / "models"
    feeds = dict(np.load(root / f"{name}.inputs.npz"))
    emulate_and_compare(import_model(str(root / f"{name}.onnx")), feeds, rtol=1e-4,
                        atol=1e-5)


@pytest.mark.parametrize("bug", ["lane index", "grid"])
def test_the_emulation_catches_a_wrong_kernel(bug):
    """The check is not vacuous: a kernel that reads the wrong lane, or a launch that leaves
    rows unwritten, fails it."""
    from pir.codegen.cuda.codegen import codegen_cuda
    from pir.codegen.cuda.emulate import EmulatedInterpreter
    from pir.ir.dialects.kernel import CudaKernelOp
    from pir.runtimes.reference import run_function

    rng = np.random.default_rng(10)
    feeds = {"x": rng.standard_normal((8, 4096), np.float32),
             "w": np.ones(4096, np.float32)}
    m = fused(parse(_rms(8, 4096)))
    want = run_function(m, feeds)["y"]
    codegen_cuda(m)
    (op,) = [o for o in m.walk() if isinstance(o, CudaKernelOp)]
    if bug == "lane index":
        assert "c_in0[it * 4 + 1]" in op.source
        op.attributes["source"] = op.source.replace("c_in0[it * 4 + 1]", "c_in0[it * 4 + 0]")
    else:
        op.attributes["grid"] = op.grid + " - 1"  # the last row's block never runs
    got = EmulatedInterpreter(m).run(m.funcs[0], feeds)["y"]
    assert not np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=False)


@pytest.mark.parametrize("op,last", [("ArgMax", 0), ("ArgMin", 1)])
def test_argmax_ties_and_nan(op, last):
    x = np.array([[1, 3, 3, 0], [2, np.nan, 5, np.nan], [-1, -1, -4, -4]], np.float32)
    model = node_model(op, {"x": x}, ["y"], opset=13, axis=1, keepdims=1,
                       select_last_index=last)
    emulate_and_compare(import_model(model), {"x": x})


@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, True)])
def test_cumsum_in_a_group(exclusive, reverse):
    text = f"""module @m {{
  func.func @main(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>) {{
    %y = fusion.group(%x) ({{
    ^bb0(%x_1: tensor<3x5xf32>):
      %c = prim.cumsum(%x_1) {{axis = 1, exclusive = {str(exclusive).lower()}, reverse = {str(reverse).lower()}}} : (tensor<3x5xf32>) -> tensor<3x5xf32>
      %y_1 = prim.mul(%c, %x_1) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
      fusion.yield(%y_1) : (tensor<3x5xf32>) -> ()
    }}) {{kind = "injective"}} : (tensor<3x5xf32>) -> tensor<3x5xf32>
    func.return(%y) : (tensor<3x5xf32>) -> ()
  }}
}}
"""
    x = np.random.default_rng(11).standard_normal((3, 5)).astype(np.float32)
    emulate_and_compare(parse(text), {"x": x})
