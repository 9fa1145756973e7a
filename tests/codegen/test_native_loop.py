"""Scans whose body is compiled kernels only run every iteration in one native call
(pir.runtimes.tvm.native_loop), equal to ONNX Runtime; the others keep the per-iteration
plan, equal too."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper as oh

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("tvm")

from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from pir.runtimes.tvm.ffi_abi import native_loops  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"
F32 = onnx.TensorProto.FLOAT


def _recurrent(op_type: str, hidden: int, direction: str, size: int = 24):
    """An ONNX GRU or LSTM over x [T, 1, size] with T symbolic, its Y and last Y_h."""
    gates = 3 if op_type == "GRU" else 4
    dirs = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(hidden)
    inits = [oh.make_tensor(n, F32, s, (rng.standard_normal(s) * 0.3).astype(np.float32))
             for n, s in (("W", (dirs, gates * hidden, size)),
                          ("R", (dirs, gates * hidden, hidden)), ("B", (dirs, 2 * gates * hidden)))]
    node = oh.make_node(op_type, ["x", "W", "R", "B"], ["y", "y_h"], hidden_size=hidden,
                        direction=direction)
    graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("x", F32, ["T", 1, size])],
                          [oh.make_tensor_value_info("y", F32, None),
                           oh.make_tensor_value_info("y_h", F32, None)], inits)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])


def _compiled(model):
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    codegen_module(module, "llvm")
    return module


def _check(model, module, lengths, size=24):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    interp = TvmInterpreter(module)
    rng = np.random.default_rng(5)
    for t in lengths:
        feeds = {"x": rng.standard_normal((t, 1, size)).astype(np.float32)}
        want = sess.run(None, feeds)
        for _ in range(2):  # the first run plans the body; the second runs it natively
            got = interp.run(module.funcs[0], feeds)
            for name, w in zip(("y", "y_h"), want):
                np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-5)
    return interp


def _native_runs(interp) -> list[int]:
    return [loop.runs for loop in interp._scan_loops.values() if loop is not None]


def test_the_loop_builds_here():
    assert native_loops() is not None  # (a C compiler is what TVM links its kernels with)


@pytest.mark.parametrize("op_type,direction", [("GRU", "forward"), ("GRU", "bidirectional"),
                                               ("LSTM", "reverse"), ("LSTM", "bidirectional")])
def test_a_recurrent_layer_runs_its_steps_natively_and_like_ort(op_type, direction):
    model = _recurrent(op_type, 16, direction)  # rows of 16 floats: 64 bytes
    module = _compiled(model)
    interp = _check(model, module, [7, 3, 1])
    scans = 2 if direction == "bidirectional" else 1
    runs = _native_runs(interp)
    # every scan of every second run (and of the first at a length seen before) ran in C
    assert len(runs) == scans and all(r >= 3 for r in runs), runs


def test_rows_that_are_no_multiple_of_64_bytes_keep_the_plan_per_iteration():
    model = _recurrent("GRU", 5, "forward")  # rows of 20 bytes: TVM needs 64-byte alignment
    module = _compiled(model)
    interp = _check(model, module, [6, 2])
    assert interp._scan_loops and _native_runs(interp) == []


def test_a_run_that_keeps_every_value_runs_the_body_per_iteration():
    # `pir run --check` compares each op's values: the body's must exist, so no native loop
    model = _recurrent("GRU", 16, "forward")
    module = _compiled(model)
    interp = TvmInterpreter(module, keep_values=True)
    x = np.random.default_rng(2).standard_normal((5, 1, 24)).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})
    for _ in range(2):
        got = interp.run(module.funcs[0], {"x": x})
        np.testing.assert_allclose(got["y"], want[0], rtol=1e-5, atol=1e-5)
    assert not interp._scan_loops


def test_a_profile_times_a_native_scan_as_one_entry():
    model = _recurrent("GRU", 16, "forward")
    module = _compiled(model)
    prof: dict = {}
    interp = TvmInterpreter(module, profile=prof)
    x = np.random.default_rng(3).standard_normal((9, 1, 24)).astype(np.float32)
    interp.run(module.funcs[0], {"x": x})  # the first run plans the body, per iteration
    kernel_calls = sum(n for (what, _), (n, _) in prof.items() if what == "kernel")
    prof.clear()
    interp.run(module.funcs[0], {"x": x})
    assert prof[("op", "nn.scan (native loop)")][0] == 1
    # the body's kernels ran inside it: fewer kernel entries than the 9 iterations made
    assert sum(n for (what, _), (n, _) in prof.items() if what == "kernel") < kernel_calls - 8


def test_a_scan_along_axis_1_runs_natively_at_any_batch():
    # wespeaker's feature extractor frames a [1, frames, 160] signal along axis 1: its rows
    # are contiguous at batch 1 and read in place; at batch 2 they are moved first
    body = oh.make_graph(
        [oh.make_node("Add", ["s_in", "e"], ["s_out"]), oh.make_node("Tanh", ["s_out"], ["o"])],
        "body", [oh.make_tensor_value_info("s_in", F32, ["B", 16]),
                 oh.make_tensor_value_info("e", F32, ["B", 16])],
        [oh.make_tensor_value_info("s_out", F32, ["B", 16]),
         oh.make_tensor_value_info("o", F32, ["B", 16])])
    node = oh.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1,
                        scan_input_axes=[1], scan_output_axes=[1], scan_input_directions=[1])
    graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("s0", F32, ["B", 16]),
                                        oh.make_tensor_value_info("x", F32, ["B", "T", 16])],
                          [oh.make_tensor_value_info("s", F32, None),
                           oh.make_tensor_value_info("ys", F32, None)])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 16)])
    module = _compiled(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    interp = TvmInterpreter(module)
    rng = np.random.default_rng(8)
    for batch in (1, 2, 3):
        feeds = {"s0": rng.standard_normal((batch, 16)).astype(np.float32),
                 "x": rng.standard_normal((batch, 6, 16)).astype(np.float32)}
        want = sess.run(None, feeds)
        before = sum(_native_runs(interp))
        for _ in range(2):
            got = interp.run(module.funcs[0], feeds)
            np.testing.assert_allclose(got["s"], want[0], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got["ys"], want[1], rtol=1e-5, atol=1e-6)
        assert sum(_native_runs(interp)) > before, batch
