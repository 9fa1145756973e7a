"""Quantisation, random numbers, dropout and the window functions decompose and preserve
values; control flow, recurrences, Fourier transforms and training updates stay nn ops.

Numerical cases build a one-node ONNX model (or parse a hand-written module where the
importer would fold the op), run ``decompose`` and compare the reference runtime's outputs
before and after; quantised results must be identical.
"""

from __future__ import annotations

import contextlib
import io

import ml_dtypes
import numpy as np
import pytest
from helpers import check_pipeline, node_model, op_names

from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module
from pir.passes.decompose.registry import DECOMPOSE, KEPT, load_rules
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline

F32 = np.float32


def normal(*shape, scale=10.0, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(F32)


def ints(*shape, dtype=np.uint8, seed=0):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, shape, endpoint=True,
                                                dtype=dtype)


def computed(module) -> list[str]:
    return [n for n in op_names(module) if n not in ("builtin.constant", "func.return")]


def decomposed(module_or_model, inputs, pipeline="decompose"):
    module = module_or_model if hasattr(module_or_model, "funcs") else \
        import_model(module_or_model)
    out = check_pipeline(module, inputs, pipeline)
    left = [n for n in computed(out) if n.startswith("nn.")]
    assert not left, f"nn ops left after decompose: {left}"
    return out


def one(op_type, inputs, outputs=("y",), shapes=None, initializers=None, opset=21, **attrs):
    feeds = dict(inputs)
    return decomposed(node_model(op_type, feeds, list(outputs), shapes=shapes,
                                 initializers=initializers, opset=opset, **attrs), feeds)


def explain(module) -> str:
    load_rules()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        PassManager(parse_pipeline("decompose{explain}")).run(module)
    return err.getvalue().strip()


# -- quantisation ------------------------------------------------------------------------------

QUANTIZE = [
    ("u8-per-tensor", (2, 3, 4), np.array(0.1, F32), np.array(128, np.uint8), {}),
    ("i8-per-axis-symbolic", (2, 3, 4), np.array([0.1, 0.2, 0.3], F32),
     np.array([1, -2, 3], np.int8), {}),
    ("u16-last-axis", (2, 3, 4), np.array([0.01, 0.02, 0.03, 0.05], F32),
     np.array([100, 200, 300, 65000], np.uint16), {"axis": -1}),
    ("i16-f16-scale", (5,), np.array(0.03, np.float16), np.array(-7, np.int16), {}),
    ("no-zero-point", (3, 4), np.array(0.1, F32), None, {}),
    ("i4", (3, 4), np.array(0.7, F32), np.array(1, ml_dtypes.int4), {}),
    ("f8-saturate", (3, 4), np.array(0.01, F32), np.array(0, ml_dtypes.float8_e4m3fn), {}),
    ("f8-no-saturate", (3, 4), np.array(0.5, F32), np.array(0, ml_dtypes.float8_e5m2),
     {"saturate": 0}),
]


@pytest.mark.parametrize("name,x_shape,scale,zp,attrs", QUANTIZE, ids=[q[0] for q in QUANTIZE])
def test_quantize_linear(name, x_shape, scale, zp, attrs):
    feeds = {"x": normal(*x_shape), "s": scale}
    if zp is not None:
        feeds["z"] = zp
    shapes = {"x": ["B", *x_shape[1:]]} if "symbolic" in name else None
    one("QuantizeLinear", feeds, shapes=shapes, **attrs)


def test_quantize_linear_rounds_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0], F32)
    out = one("QuantizeLinear", {"x": x, "s": np.array(1.0, F32), "z": np.array(0, np.int8)})
    assert "prim.round" in computed(out)


@pytest.mark.parametrize("x,zp,scale,attrs", [
    (ints(2, 3, 4, dtype=np.int8), np.array([1, 2, 3], np.int8), np.array([0.1, 0.2, 0.3], F32),
     {}),
    (ints(2, 3, 4), np.array(7, np.uint8), np.array(0.5, np.float16), {}),
    (ints(2, 3, 4, dtype=np.int32), None, np.array([0.1, 0.2, 0.3, 0.4], F32), {"axis": 2}),
    (ints(3, 4, dtype=np.uint16), np.array(3, np.uint16), np.array(0.01, F32),
     {"output_dtype": 10}),  # f16 result
], ids=["i8-per-axis", "u8-f16-scale", "i32-no-zero-point", "u16-to-f16"])
def test_dequantize_linear(x, zp, scale, attrs):
    feeds = {"x": x, "s": scale}
    if zp is not None:
        feeds["z"] = zp
    one("DequantizeLinear", feeds, opset=23, shapes={"x": ["B", *x.shape[1:]]}, **attrs)


@pytest.mark.parametrize("x", [normal(3, 4), np.abs(normal(2, 5)), -np.abs(normal(6)),
                               np.zeros((2, 2), F32)], ids=["mixed", "positive", "negative",
                                                            "zeros"])
def test_dynamic_quantize_linear(x):
    one("DynamicQuantizeLinear", {"x": x}, outputs=("y", "s", "z"))


@pytest.mark.parametrize("a_shape,b_shape,a_zp,b_zp", [
    ((2, 3, 4), (4, 5), np.array([1, 2, 3], np.uint8), np.array([1, 2, 3, 4, 5], np.uint8)),
    ((3, 4), (2, 4, 5), np.array(9, np.uint8), None),
    ((4,), (4, 5), None, np.array(4, np.uint8)),
    ((3, 4), (4, 2), None, None),
], ids=["per-row-and-column", "a-only", "b-only", "none"])
def test_matmul_integer(a_shape, b_shape, a_zp, b_zp):
    feeds = {"a": ints(*a_shape), "b": ints(*b_shape, seed=1)}
    names = ["a", "b", "", ""]
    for k, (name, zp) in enumerate((("az", a_zp), ("bz", b_zp))):
        if zp is not None:
            feeds[name] = zp
            names[2 + k] = name
    model = node_model("MatMulInteger", feeds, ["y"])
    model.graph.node[0].input[:] = names[:max(k + 1 for k, n in enumerate(names) if n)]
    decomposed(model, feeds)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_matmul(dtype):
    feeds = {"a": ints(2, 3, 4, dtype=dtype), "as": np.array(0.02, F32),
             "az": np.array(3, dtype), "b": ints(4, 5, dtype=dtype, seed=1),
             "bs": np.array(0.03, F32), "bz": np.array(5, dtype), "ys": np.array(0.05, F32),
             "yz": np.array(10, dtype)}
    one("QLinearMatMul", feeds, shapes={"a": ["B", 3, 4]})


def test_blocked_quantisation_stays():
    model = node_model("DequantizeLinear", {"x": ints(4, 6, dtype=np.int8),
                                            "s": np.ones((4, 2), F32)}, ["y"], opset=21,
                       axis=1, block_size=3)
    assert explain(import_model(model)) == \
        "decompose: nn.dequantize_linear stays: blocked quantisation (a scale per block) " \
        "is not decomposed"


# -- random numbers and dropout ----------------------------------------------------------------

def test_seeded_random_ops_draw_the_same_numbers():
    one("RandomUniform", {}, shape=[3, 4], seed=3.0, low=-1.0, high=2.0)
    one("RandomNormal", {}, shape=[5], seed=0.0, mean=1.0, scale=2.0, dtype=11)
    one("RandomNormalLike", {"x": normal(3, 4)}, shapes={"x": ["B", 4]}, seed=5.0)
    one("RandomUniformLike", {"x": normal(3, 4)}, seed=6.0)
    one("Bernoulli", {"x": np.random.default_rng(0).random((3, 4)).astype(F32)}, seed=5.0)


def test_unseeded_random_ops_stay():
    module = import_model(node_model("RandomUniform", {}, ["y"], shape=[2]))
    assert explain(module) == ("decompose: nn.random_uniform stays: no seed: the op draws "
                               "fresh numbers on every run, prim random ops take a seed")
    assert [n for n in computed(module)] == ["nn.random_uniform"]


def test_dropout_in_inference_is_the_identity():
    out = one("Dropout", {"x": normal(3, 4)}, outputs=("y", "mask"), shapes={"x": ["B", 4]})
    # the output keeps its name through a copy; the mask is a broadcast true
    assert sorted(computed(out)) == ["prim.broadcast_in_dim", "prim.reshape"]
    assert [v.name for v in out.funcs[0].return_op.operands] == ["y", "mask"]


def test_dropout_in_training_with_a_seed():
    one("Dropout", {"x": normal(3, 4)}, outputs=("y", "mask"),
        initializers={"r": np.array(0.3, F32), "t": np.array(True)}, seed=7)


def test_dropout_with_a_runtime_training_flag_stays():
    module = import_model(node_model("Dropout", {"x": normal(3, 4), "r": np.array(0.3, F32),
                                                 "t": np.array(True)}, ["y"]))
    assert explain(module) == "decompose: nn.dropout stays: training_mode is not a constant"


# -- window functions ---------------------------------------------------------------------------

def window_module(op: str, size: int, periodic: bool, dtype: str = "f32"):
    n = size
    return parse_module(f"""module {{
  func.func @main() -> (tensor<{n}x{dtype}>) {{
    %n = builtin.constant() {{value = dense<{size}> : tensor<i64>}} : () -> tensor<i64>
    %w = nn.{op}(%n) {{output_datatype = {dtype}, periodic = {str(periodic).lower()}}} : (tensor<i64>) -> tensor<{n}x{dtype}>
    func.return(%w) : (tensor<{n}x{dtype}>) -> ()
  }}
}}""")


@pytest.mark.parametrize("op", ["hann_window", "hamming_window", "blackman_window"])
@pytest.mark.parametrize("size,periodic", [(10, True), (9, False), (1, False)])
def test_window(op, size, periodic):
    out = decomposed(window_module(op, size, periodic), {})
    assert "prim.iota" in computed(out) or size == 1


def test_window_in_f64():
    decomposed(window_module("hann_window", 16, True, "f64"), {})


# -- kept ops ----------------------------------------------------------------------------------

def test_kept_declarations():
    load_rules()
    for name in ("nn.if", "nn.loop", "nn.scan"):
        assert KEPT[name].startswith("control flow")
    assert "loop" in KEPT["nn.rnn"]
    for name in ("nn.lstm", "nn.gru"):  # unrolled, or a scan of prim steps
        assert name in DECOMPOSE and name not in KEPT
    for name in ("nn.dft", "nn.stft"):
        assert "FFT" in KEPT[name]
    for name in ("nn.adagrad", "nn.adam", "nn.momentum"):
        assert "training" in KEPT[name]
    assert {"nn.det", "nn.deform_conv", "nn.multinomial", "nn.mel_weight_matrix"} <= set(KEPT)


def test_control_flow_stays_and_its_regions_are_decomposed():
    module = parse_module("""module {
  func.func @main(%c: tensor<i1>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> (tensor<2x4xf32>) {
    %r = nn.if(%c) ({
      %p = nn.matmul(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
      nn.yield(%p) : (tensor<2x4xf32>) -> ()
    }, {
      %q = nn.gemm(%a, %b) {alpha = 2.0} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
      nn.yield(%q) : (tensor<2x4xf32>) -> ()
    }) : (tensor<i1>) -> tensor<2x4xf32>
    func.return(%r) : (tensor<2x4xf32>) -> ()
  }
}""")
    feeds = {"a": normal(2, 3), "b": normal(3, 4, seed=1)}
    for cond in (True, False):
        out = check_pipeline(module, dict(feeds, c=np.array(cond)), "decompose")
    names = computed(out)
    assert names.count("nn.if") == 1 and names.count("prim.dot_general") == 2
    assert not [n for n in names if n.startswith("nn.") and n not in ("nn.if", "nn.yield")]
