"""nn.lstm and nn.gru in prim ops (rules_recurrence): unrolled over a short static sequence,
a scan of prim steps over a run-time or long one; every direction and layout, optional
operands, zero peepholes, the GRU's linear_before_reset, against the reference rule and ONNX
Runtime, compiled; and the cases that stay, each with its reason."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_pipeline, node_model, run_ort

from pir.frontends.onnx.importer import import_model
from pir.passes.decompose import kept_reasons

DECOMPOSE = "decompose,canonicalize,fold,cse,dce,shapes"
SEQ, BATCH, INPUT, HIDDEN = 3, 2, 5, 4
rng = np.random.default_rng(7)


GATES = {"LSTM": 4, "GRU": 3}


def _lstm_model(dirs: int, seq: int = SEQ, layout: int = 0, bias: bool = True,
                states: bool = True, peepholes: np.ndarray | None = None,
                shapes: dict | None = None, op_type: str = "LSTM", **attrs):
    g = GATES[op_type]
    x_shape = (seq, BATCH, INPUT) if layout == 0 else (BATCH, seq, INPUT)
    state_shape = (dirs, BATCH, HIDDEN) if layout == 0 else (BATCH, dirs, HIDDEN)
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32),
             "W": rng.uniform(-0.5, 0.5, (dirs, g * HIDDEN, INPUT)).astype(np.float32),
             "R": rng.uniform(-0.5, 0.5, (dirs, g * HIDDEN, HIDDEN)).astype(np.float32)}
    names = ["X", "W", "R"]
    if bias:
        feeds["B"] = rng.uniform(-0.5, 0.5, (dirs, 2 * g * HIDDEN)).astype(np.float32)
    names.append("B" if bias else "")
    names.append("")  # sequence_lens
    state_names = ["initial_h", "initial_c"] if op_type == "LSTM" else ["initial_h"]
    if states:
        for n in state_names:
            feeds[n] = rng.standard_normal(state_shape).astype(np.float32)
    names += state_names if states else [""] * len(state_names)
    inits = {}
    if peepholes is not None:
        inits["P"] = peepholes
        names.append("P")
    while not names[-1]:
        names.pop()
    outputs = ["Y", "Y_h", "Y_c"] if op_type == "LSTM" else ["Y", "Y_h"]
    model = node_model(op_type, feeds, outputs, opset=22, initializers=inits,
                       shapes=shapes, hidden_size=HIDDEN, layout=layout, **attrs)
    node = model.graph.node[0]
    node.ClearField("input")
    node.input.extend(names)
    return model, feeds


def _ops(module) -> set[str]:
    return {op.name for op in module.walk()}


@pytest.mark.parametrize("direction,dirs", [("forward", 1), ("reverse", 1),
                                            ("bidirectional", 2)])
@pytest.mark.parametrize("layout", [0, 1])
def test_a_short_lstm_unrolls_into_prim_ops_equal_to_the_reference(direction, dirs, layout):
    model, feeds = _lstm_model(dirs, layout=layout, direction=direction)
    module = import_model(model)
    optimized = check_pipeline(module, feeds, DECOMPOSE, rtol=1e-5, atol=1e-6)
    assert "nn.lstm" not in _ops(optimized)
    assert "prim.dot_general" in _ops(optimized)


@pytest.mark.parametrize("bias,states", [(False, False), (True, False), (False, True)])
def test_absent_bias_and_states_are_zeros(bias, states):
    model, feeds = _lstm_model(1, bias=bias, states=states)
    optimized = check_pipeline(import_model(model), feeds, DECOMPOSE, rtol=1e-5, atol=1e-6)
    assert "nn.lstm" not in _ops(optimized)


def test_zero_peepholes_unroll_and_others_stay():
    zero = np.zeros((1, 3 * HIDDEN), np.float32)
    model, feeds = _lstm_model(1, peepholes=zero)
    assert "nn.lstm" not in _ops(check_pipeline(import_model(model), feeds, DECOMPOSE))
    model, feeds = _lstm_model(1, peepholes=np.full((1, 3 * HIDDEN), 0.1, np.float32))
    module = check_pipeline(import_model(model), feeds, DECOMPOSE)
    assert "nn.lstm" in _ops(module)


@pytest.mark.parametrize("case", ["symbolic", "long"])
@pytest.mark.parametrize("direction,dirs", [("forward", 1), ("bidirectional", 2)])
def test_a_run_time_or_long_sequence_is_a_scan_of_prim_steps(case, direction, dirs):
    kwargs: dict = {"shapes": {"X": ["S", BATCH, INPUT]}} if case == "symbolic" else {"seq": 17}
    model, feeds = _lstm_model(dirs, direction=direction, **kwargs)
    optimized = check_pipeline(import_model(model), feeds, DECOMPOSE, rtol=1e-5, atol=1e-6)
    ops = _ops(optimized)
    assert "nn.lstm" not in ops
    assert [op.name for op in optimized.walk()].count("nn.scan") == dirs
    (scan, *_) = [op for op in optimized.walk() if op.name == "nn.scan"]
    body = {op.name for op in scan.regions[0].block.ops}
    assert {"prim.dot_general", "prim.logistic", "prim.tanh"} <= body


@pytest.mark.parametrize("case,why", [
    ("clip", "clip"),
    ("activations", "default"),
])
def test_what_is_not_written_in_prim_ops_stays_nn_lstm_with_its_reason(case, why):
    kwargs: dict = {"clip": 0.5} if case == "clip" else {
        "activations": ["HardSigmoid", "Tanh", "Tanh"]}
    model, feeds = _lstm_model(1, **kwargs)
    module = check_pipeline(import_model(model), feeds, DECOMPOSE)
    assert "nn.lstm" in _ops(module)
    reasons = kept_reasons(import_model(model))
    assert why in reasons["nn.lstm"]


@pytest.mark.parametrize("shapes", [None, {"X": ["S", BATCH, INPUT]}], ids=["unrolled", "scan"])
@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("direction,dirs", [("forward", 1), ("reverse", 1),
                                            ("bidirectional", 2)])
def test_a_gru_is_prim_ops_equal_to_the_reference(shapes, linear_before_reset, direction,
                                                  dirs):
    model, feeds = _lstm_model(dirs, op_type="GRU", shapes=shapes, direction=direction,
                               linear_before_reset=linear_before_reset)
    optimized = check_pipeline(import_model(model), feeds, DECOMPOSE, rtol=1e-5, atol=1e-6)
    assert "nn.gru" not in _ops(optimized)
    assert ("nn.scan" in _ops(optimized)) == (shapes is not None)


@pytest.mark.parametrize("bias,states", [(False, False), (True, True)])
def test_a_batch_first_gru_with_and_without_its_optional_operands(bias, states):
    model, feeds = _lstm_model(1, op_type="GRU", layout=1, bias=bias, states=states)
    optimized = check_pipeline(import_model(model), feeds, DECOMPOSE, rtol=1e-5, atol=1e-6)
    assert "nn.gru" not in _ops(optimized)


@pytest.mark.parametrize("op_type", ["LSTM", "GRU"])
@pytest.mark.parametrize("shapes", [None, {"X": ["S", BATCH, INPUT]}], ids=["unrolled", "scan"])
def test_the_recurrence_compiles_and_equals_onnx_runtime(shapes, op_type):
    pytest.importorskip("tvm")
    from pir.codegen.tvm.codegen import codegen_module
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline
    from pir.runtimes.tvm import TvmInterpreter

    model, feeds = _lstm_model(2, direction="bidirectional", shapes=shapes, op_type=op_type)
    module = import_model(model)
    PassManager(parse_pipeline(DECOMPOSE + ",fuse")).run(module)
    report = codegen_module(module, "llvm")
    assert not report.kept and f"nn.{op_type.lower()}" not in _ops(module), report.lines()
    interp = TvmInterpreter(module)
    for _ in range(2):  # (the second run follows the plans of the scan's body)
        got = interp.run(module.funcs[0], feeds)
        for name, want in run_ort(model, feeds).items():
            np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-5, err_msg=name)
