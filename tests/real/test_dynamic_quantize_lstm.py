"""onnxruntime's dynamic quantizer writes com.microsoft::DynamicQuantizeLSTM (the
`dynamic_quantize_lstm` reproducer of /work/shared/repro/real): through every stage.

import, the reference run, the default pipeline, the fused pipeline with llvm kernels on the
tvm runtime, and CUDA kernels compiled by nvcc (when it is on PATH).  The model is rebuilt
here with onnx.helper (the reproducer's graph; its int8 weights in [-64, 63], so that
onnxruntime's AVX2 u8s8 kernel does not saturate and is exact here); the reproducer itself is
checked too when /work/shared holds it.
"""

from __future__ import annotations

import pathlib
import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.passes.manager import PassManager
from pir.passes.pipeline import DEFAULT_PIPELINE, parse_pipeline
from pir.runtimes.reference import run_function

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"
REPRO = pathlib.Path("/work/shared/repro/real/dynamic_quantize_lstm")
TOL = 1e-4  # the reproducers' measure: max |got - ref| / max |ref|


def _model(seed: int = 0) -> tuple[onnx.ModelProto, dict, dict]:
    """The reproducer's graph: DynamicQuantizeLSTM(hidden 3) over x [5, 1, 4], int8 W and R
    with one scale and zero point each, a bias; its input and onnxruntime's output."""
    rng = np.random.default_rng(seed)
    inits = {"w": rng.integers(-64, 64, (1, 4, 12)).astype(np.int8),
             "r": rng.integers(-64, 64, (1, 3, 12)).astype(np.int8),
             "b": (rng.standard_normal((1, 24)) * 0.1).astype(np.float32),
             "w_scale": np.array([0.01], np.float32), "w_zp": np.array([0], np.int8),
             "r_scale": np.array([0.01], np.float32), "r_zp": np.array([0], np.int8)}
    node = helper.make_node("DynamicQuantizeLSTM", ["x", "w", "r", "b", "", "", "", "",
                                                    "w_scale", "w_zp", "r_scale", "r_zp"],
                            ["y"], domain="com.microsoft", hidden_size=3)
    graph = helper.make_graph([node], "dqlstm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                             [5, 1, 1, 3])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    feeds = {"x": rng.standard_normal((5, 1, 4)).astype(np.float32)}
    return model, feeds, _ort(model, feeds)


def _ort(model, feeds):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return {"y": sess.run(["y"], feeds)[0]}


def _error(got: dict, want: dict) -> float:
    return max(float(np.abs(got[k] - w).max() / max(np.abs(w).max(), 1e-30))
               for k, w in want.items())


def _pipeline(module, text: str):
    module = parse_module(print_module(module))
    PassManager(parse_pipeline(text)).run(module)
    return parse_module(print_module(module))  # what the next command reads


def every_stage(model: onnx.ModelProto, feeds: dict, want: dict) -> dict[str, float]:
    """The reproducer's stages (README of /work/shared/repro/real); returns each run's error."""
    from pir.codegen.cuda.codegen import codegen_cuda
    from pir.codegen.tvm.codegen import codegen_module
    from pir.ir.dialects.kernel import CudaKernelOp
    from pir.runtimes.tvm import TvmInterpreter

    errors = {}
    module = parse_module(print_module(import_model(model)))
    errors["ref"] = _error(run_function(module, feeds), want)
    optimized = _pipeline(module, DEFAULT_PIPELINE)
    errors["opt"] = _error(run_function(optimized, feeds), want)
    fused = _pipeline(module, FUSE)
    kernels = parse_module(print_module(fused))
    report = codegen_module(kernels, "llvm")
    assert report.kernels > 0, report
    kernels = parse_module(print_module(kernels))
    errors["llvm"] = _error(TvmInterpreter(kernels).run(kernels.funcs[0], feeds), want)
    cuda = parse_module(print_module(fused))
    assert codegen_cuda(cuda, "sm_90", "native").kernels > 0
    sources = {op.symbol: op.source for op in cuda.walk() if isinstance(op, CudaKernelOp)}
    if shutil.which("nvcc"):
        from pir.codegen.cuda.nvcc import compile_units, translation_units

        failed = [r.log for r in compile_units(translation_units(sources), ("sm_90",))
                  if not r.ok]
        assert not failed, failed
    return errors


def test_every_stage_matches_onnxruntime():
    model, feeds, want = _model()
    errors = every_stage(model, feeds, want)
    assert max(errors.values()) <= TOL, errors


@pytest.mark.skipif(not REPRO.with_suffix(".onnx").exists(),
                    reason="the reproducer is not in /work/shared")
def test_the_reproducer_at_every_stage():
    """Its .npz holds onnxruntime's output from a machine whose u8s8 products are exact (no
    AVX2 saturation): pir's exact integer products match it."""
    data = np.load(REPRO.with_suffix(".npz"))
    feeds = {k[3:]: data[k] for k in data.files if k.startswith("in_")}
    want = {k[4:]: data[k] for k in data.files if k.startswith("out_")}
    errors = every_stage(onnx.load(str(REPRO.with_suffix(".onnx"))), feeds, want)
    assert max(errors.values()) <= TOL, errors



def test_products_in_consecutive_regions_by_weights_from_groups_before_them():
    """The walk over a block's regions (codegen's _program_blocks), as text2tashkeel's
    bidirectional quantized LSTMs have it: each region's product reads centred weights from
    a group before the regions.  Forming the first product dropped its (now dead) weights'
    group from the block being walked, and the walk skipped the op after it: the second
    region's product ran on numpy at every step."""
    from pir.codegen.tvm.codegen import codegen_module

    w = "dense<3> : tensor<32x32xi8>"
    text = f"""module {{
  func.func @main(%c: tensor<i1>, %x: tensor<4x32xi32>) -> (tensor<4x32xi32>, tensor<4x32xi32>) {{
    %w1 = builtin.constant() {{value = {w}}} : () -> tensor<32x32xi8>
    %w2 = builtin.constant() {{value = {w.replace("3>", "5>")}}} : () -> tensor<32x32xi8>
    %c1 = fusion.group(%w1) ({{
    ^bb0(%a: tensor<32x32xi8>):
      %a1 = prim.cast(%a) {{dtype = i32}} : (tensor<32x32xi8>) -> tensor<32x32xi32>
      fusion.yield(%a1) : (tensor<32x32xi32>) -> ()
    }}) {{kind = "elementwise"}} : (tensor<32x32xi8>) -> tensor<32x32xi32>
    %c2 = fusion.group(%w2) ({{
    ^bb0(%b: tensor<32x32xi8>):
      %b1 = prim.cast(%b) {{dtype = i32}} : (tensor<32x32xi8>) -> tensor<32x32xi32>
      fusion.yield(%b1) : (tensor<32x32xi32>) -> ()
    }}) {{kind = "elementwise"}} : (tensor<32x32xi8>) -> tensor<32x32xi32>
    %y1 = nn.if(%c) ({{
      %p = prim.dot_general(%x, %c1) {{lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]}} : (tensor<4x32xi32>, tensor<32x32xi32>) -> tensor<4x32xi32>
      nn.yield(%p) : (tensor<4x32xi32>) -> ()
    }}, {{
      nn.yield(%x) : (tensor<4x32xi32>) -> ()
    }}) : (tensor<i1>) -> tensor<4x32xi32>
    %y2 = nn.if(%c) ({{
      %q = prim.dot_general(%x, %c2) {{lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]}} : (tensor<4x32xi32>, tensor<32x32xi32>) -> tensor<4x32xi32>
      nn.yield(%q) : (tensor<4x32xi32>) -> ()
    }}, {{
      nn.yield(%x) : (tensor<4x32xi32>) -> ()
    }}) : (tensor<i1>) -> tensor<4x32xi32>
    func.return(%y1, %y2) : (tensor<4x32xi32>, tensor<4x32xi32>) -> ()
  }}
}}"""
    module = parse_module(text)
    before = parse_module(text)
    codegen_module(module, "llvm")
    host = [op for op in module.walk() if op.name == "prim.dot_general"
            and op.parent.parent.parent.name != "kernel.tvm"]
    assert not host, [op.results[0].name for op in host]
    from pir.runtimes.tvm import TvmInterpreter

    feeds = {"c": np.array(True), "x": np.arange(128, dtype=np.int32).reshape(4, 32) % 7}
    got = TvmInterpreter(module).run(module.funcs[0], feeds)
    want = run_function(before, feeds)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def test_both_directions_of_a_bidirectional_lstm_over_run_time_steps_are_compiled():
    """text2tashkeel's models, end to end: each direction's recurrence is a scan over the
    run-time steps, and every product of both (the input projection, each step's H R) is
    a kernel; the result is onnxruntime's."""
    from pir.codegen.tvm.codegen import codegen_module
    from pir.runtimes.tvm import TvmInterpreter

    rng = np.random.default_rng(5)
    inits = {"w": rng.integers(-64, 64, (2, 4, 32)).astype(np.int8),
             "r": rng.integers(-64, 64, (2, 8, 32)).astype(np.int8),
             "w_scale": np.array([0.01, 0.02], np.float32), "w_zp": np.zeros(2, np.int8),
             "r_scale": np.array([0.01, 0.02], np.float32), "r_zp": np.zeros(2, np.int8)}
    node = helper.make_node("DynamicQuantizeLSTM", ["x", "w", "r", "", "", "", "", "",
                                                    "w_scale", "w_zp", "r_scale", "r_zp"],
                            ["y"], domain="com.microsoft", hidden_size=8,
                            direction="bidirectional")
    graph = helper.make_graph(
        [node], "bilstm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", 1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["T", 2, 1, 8])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    kernels = _pipeline(import_model(model), FUSE)
    codegen_module(kernels, "llvm")
    host = [op for op in kernels.walk() if op.name == "prim.dot_general"
            and op.parent.parent.parent.name != "kernel.tvm"]
    assert not host, [op.results[0].name for op in host]
    feeds = {"x": rng.standard_normal((20, 1, 4)).astype(np.float32)}
    got = TvmInterpreter(kernels).run(kernels.funcs[0], feeds)
    assert _error(got, _ort(model, feeds)) <= TOL
