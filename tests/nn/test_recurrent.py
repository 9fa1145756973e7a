"""RNN, GRU and LSTM: import, round trip, run, compare with ONNX Runtime; type rules and their
diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_model, node_model, run_ort

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.func import FuncOp
from pir.runtimes.reference import run_function

rng = np.random.default_rng(0)
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6


def weights(op_type, dirs, hidden=HIDDEN, bias=True, scale=0.5):
    g = GATES[op_type]
    w = {"W": rng.uniform(-scale, scale, (dirs, g * hidden, INPUT)).astype(np.float32),
         "R": rng.uniform(-scale, scale, (dirs, g * hidden, hidden)).astype(np.float32)}
    if bias:
        w["B"] = rng.uniform(-scale, scale, (dirs, 2 * g * hidden)).astype(np.float32)
    return w


def recurrent_model(op_type, inputs, outputs, **attrs):
    """A node with inputs in ONNX order; ``inputs`` maps name -> array or None (absent)."""
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    names = [n if inputs.get(n) is not None else "" for n in order[:8 if op_type == "LSTM" else 6]]
    while names and not names[-1]:
        names.pop()
    feeds = {n: inputs[n] for n in names if n}
    model = node_model(op_type, feeds, [o for o in outputs if o], opset=22, hidden_size=HIDDEN,
                       **attrs)
    node = model.graph.node[0]
    for field, values in (("input", names), ("output", outputs)):
        node.ClearField(field)
        getattr(node, field).extend(values)
    return model, feeds


def check(op_type, inputs, outputs=("Y", "Y_h"), rtol=1e-4, atol=1e-5, expected=None, **attrs):
    if op_type == "LSTM" and outputs == ("Y", "Y_h"):
        outputs = ("Y", "Y_h", "Y_c")
    model, feeds = recurrent_model(op_type, inputs, list(outputs), **attrs)
    return check_model(model, feeds, rtol=rtol, atol=atol, expected=expected)


def batch_first_expected(op_type, inputs, **attrs):
    """ONNX Runtime has no layout = 1: run the layout-0 model on transposed inputs instead."""
    seq_first = {k: (v.swapaxes(0, 1) if k in ("X", "initial_h", "initial_c") else v)
                 for k, v in inputs.items()}
    outputs = ["Y", "Y_h"] + (["Y_c"] if op_type == "LSTM" else [])
    model, feeds = recurrent_model(op_type, seq_first, outputs, **attrs)
    got = run_ort(model, feeds)
    return {k: (v.transpose(2, 0, 1, 3) if k == "Y" else v.swapaxes(0, 1)) for k, v in got.items()}


def x_input(layout=0):
    shape = (SEQ, BATCH, INPUT) if layout == 0 else (BATCH, SEQ, INPUT)
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("op_type", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_directions_and_layouts(op_type, direction, layout):
    dirs = 2 if direction == "bidirectional" else 1
    inputs = {"X": x_input(layout), **weights(op_type, dirs)}
    state = (dirs, BATCH, HIDDEN) if layout == 0 else (BATCH, dirs, HIDDEN)
    inputs["initial_h"] = rng.standard_normal(state).astype(np.float32)
    expected = None
    if layout == 1:
        expected = batch_first_expected(op_type, inputs, direction=direction)
    module = check(op_type, inputs, direction=direction, layout=layout, expected=expected)
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    op = next(o for o in fn.walk() if o.name == f"nn.{op_type.lower()}")
    y_shape = (SEQ, dirs, BATCH, HIDDEN) if layout == 0 else (BATCH, SEQ, dirs, HIDDEN)
    assert op.results[0].type.shape == y_shape and op.results[1].type.shape == state


@pytest.mark.parametrize("op_type", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_sequence_lens(op_type, direction):
    dirs = 2 if direction == "bidirectional" else 1
    inputs = {"X": x_input(), **weights(op_type, dirs),
              "sequence_lens": np.array([5, 2, 3], np.int32)}
    check(op_type, inputs, direction=direction)


@pytest.mark.parametrize("op_type", ["RNN", "GRU", "LSTM"])
def test_without_bias_and_with_clip(op_type):
    inputs = {"X": 3 * x_input(), **weights(op_type, 1, bias=False, scale=2.0)}
    check(op_type, inputs, clip=0.7)


@pytest.mark.parametrize("op_type,activations,alpha,beta", [
    ("RNN", ["Relu"], [], []),
    ("RNN", ["LeakyRelu", "HardSigmoid"], [0.2, 0.3], [0.6]),
    ("GRU", ["HardSigmoid", "Softsign"], [0.3], [0.4]),
    ("GRU", ["Sigmoid", "Tanh", "Sigmoid", "Softplus"], [], []),
    ("LSTM", ["HardSigmoid", "Tanh", "Elu"], [0.25, 0.8], [0.45]),
    ("LSTM", ["Sigmoid", "ThresholdedRelu", "Tanh"], [0.1], []),
])
def test_activations(op_type, activations, alpha, beta):
    per_dir = {"RNN": 1, "GRU": 2, "LSTM": 3}[op_type]
    direction = "bidirectional" if len(activations) > per_dir else "forward"
    dirs = 2 if direction == "bidirectional" else 1
    attrs = {"activations": activations, "direction": direction}
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    check(op_type, {"X": x_input(), **weights(op_type, dirs)}, **attrs)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_linear_before_reset(linear_before_reset):
    check("GRU", {"X": x_input(), **weights("GRU", 1)}, linear_before_reset=linear_before_reset)


@pytest.mark.parametrize("input_forget", [0, 1])
def test_lstm_peepholes_and_initial_cell(input_forget):
    inputs = {"X": x_input(), **weights("LSTM", 2),
              "initial_h": rng.standard_normal((2, BATCH, HIDDEN)).astype(np.float32),
              "initial_c": rng.standard_normal((2, BATCH, HIDDEN)).astype(np.float32),
              "P": rng.uniform(-0.5, 0.5, (2, 3 * HIDDEN)).astype(np.float32)}
    check("LSTM", inputs, direction="bidirectional", input_forget=input_forget)


@pytest.mark.parametrize("outputs", [("Y",), ("", "Y_h"), ("", "", "Y_c")])
def test_optional_outputs(outputs):
    module = check("LSTM", {"X": x_input(), **weights("LSTM", 1)}, outputs=outputs)
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    assert len(fn.return_op.operands) == 1


def test_double_precision_agrees_with_single():
    """ONNX Runtime has no f64 recurrent kernels: compare with our own f32 run instead."""
    inputs = {"X": x_input(), **weights("GRU", 1)}
    model, feeds = recurrent_model("GRU", inputs, ["Y", "Y_h"])
    single = run_function(import_model(model), feeds)
    doubled = {k: v.astype(np.float64) for k, v in inputs.items()}
    expected = {k: v.astype(np.float64) for k, v in single.items()}
    check("GRU", doubled, rtol=1e-5, atol=1e-6, expected=expected)


# -- diagnostics ------------------------------------------------------------------------------

def test_x_must_have_rank_3():
    inputs = {"X": rng.standard_normal((SEQ, INPUT)).astype(np.float32), **weights("RNN", 1)}
    model, _ = recurrent_model("RNN", inputs, ["Y"])
    with pytest.raises(PirError, match="x must have rank 3"):
        import_model(model)


def test_weights_must_match_direction_and_hidden_size():
    inputs = {"X": x_input(), **weights("GRU", 1)}
    model, _ = recurrent_model("GRU", inputs, ["Y"], direction="bidirectional")
    with pytest.raises(PirError, match="dim must be num_directions = 2"):
        import_model(model)


def test_unknown_activation_is_named():
    inputs = {"X": x_input(), **weights("RNN", 1)}
    model, _ = recurrent_model("RNN", inputs, ["Y"], activations=["Swish"])
    with pytest.raises(PirError, match="unknown activation 'Swish'"):
        import_model(model)
