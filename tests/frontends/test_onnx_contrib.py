"""onnxruntime's transformer contrib ops (com.microsoft): FusedMatMul, the GELUs, BiasAdd,
SkipLayerNormalization.  Each is imported, round-tripped, run on the reference runtime and
compared with onnxruntime (BiasAdd has no CPU kernel there: its formula instead); the fused
pipeline keeps the results; a node that breaks the op's declaration is an error naming it."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_pipeline, op_names
from ms_helpers import check_ort, ms_model, run_pir

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model

rng = np.random.default_rng(0)


def normal(*shape):
    return rng.standard_normal(shape).astype(np.float32)


X = normal(2, 3, 8)
BIAS = normal(8)


@pytest.mark.parametrize("op, inits, attrs", [
    ("Gelu", {}, {}),
    ("BiasGelu", {"bias": BIAS}, {}),
    ("FastGelu", {"bias": BIAS}, {}),
    ("FastGelu", {}, {}),
    ("QuickGelu", {}, {}),
    ("QuickGelu", {}, {"alpha": 1.25}),
])
def test_gelus(op, inits, attrs):
    module = check_ort(ms_model(op, {"x": X}, ["y"], inits, **attrs), {"x": X}, atol=1e-6)
    check_pipeline(module, {"x": X}, "decompose,canonicalize,cse,dce,fuse", atol=1e-6)


def test_gelu_forms():
    names = lambda op, **a: op_names(import_model(ms_model(op, {"x": X}, ["y"], **a)))
    assert names("Gelu") == ["nn.gelu", "func.return"]
    assert names("QuickGelu") == ["nn.swish", "func.return"]
    module = import_model(ms_model("FastGelu", {"x": X}, ["y"], {"b": BIAS}))
    (gelu,) = [op for op in module.walk() if op.name == "nn.gelu"]
    assert gelu.approximate == "tanh"


def test_bias_add_is_x_plus_bias_plus_skip():
    skip = normal(2, 3, 8)
    model = ms_model("BiasAdd", {"x": X, "skip": skip}, ["y"], {"bias": BIAS},
                     order=["x", "bias", "skip"])
    _, got = run_pir(model, {"x": X, "skip": skip})
    np.testing.assert_array_equal(got["y"], (X + BIAS) + skip)


@pytest.mark.parametrize("a_shape, b_shape, attrs", [
    ((2, 4, 3), (2, 3, 5), {"alpha": 0.5}),
    ((2, 3, 4), (2, 5, 3), {"alpha": 2.0, "transA": 1, "transB": 1}),
    ((4, 2, 3), (2, 3, 5), {"transBatchA": 1}),  # A [4, 2, 3] read as [2, 4, 3]
    ((6, 2, 3, 4), (6, 2, 3, 5), {"transBatchA": 1, "transA": 1, "transBatchB": 1}),
    ((6, 2, 3, 4), (5, 2, 3, 4), {"transBatchA": 1, "transBatchB": 1, "transB": 1}),
    ((3, 4), (4,), {"transB": 1}),  # a vector is not transposed
])
def test_fused_matmul(a_shape, b_shape, attrs):
    a, b = normal(*a_shape), normal(*b_shape)
    check_ort(ms_model("FusedMatMul", {"a": a, "b": b}, ["y"], **attrs), {"a": a, "b": b},
              rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("outputs, inits", [
    (["y", "mean", "inv_std", "sum"], ["gamma", "beta", "bias"]),
    (["y"], ["gamma", "beta", "bias"]),
    (["y", "", "", "sum"], ["gamma"]),
    (["y"], ["gamma", "", "bias"]),
])
def test_skip_layer_norm(outputs, inits):
    skip = normal(2, 3, 8)
    params = {"gamma": normal(8), "beta": normal(8), "bias": BIAS}
    used = {k: params[k] for k in inits if k}
    model = ms_model("SkipLayerNormalization", {"x": X, "skip": skip}, outputs, used,
                     order=["x", "skip", *inits], epsilon=1e-5)
    module = check_ort(model, {"x": X, "skip": skip}, atol=2e-6)
    check_pipeline(module, {"x": X, "skip": skip}, "decompose,canonicalize,cse,dce,fuse",
                   atol=2e-6)


def test_skip_layer_norm_default_epsilon():
    skip = normal(2, 3, 8)
    model = ms_model("SkipLayerNormalization", {"x": X, "skip": skip}, ["y"], {"g": normal(8)})
    (ln,) = [op for op in import_model(model).walk() if op.name == "nn.layer_norm"]
    assert ln.epsilon == pytest.approx(1e-12)
    check_ort(model, {"x": X, "skip": skip}, atol=2e-6)


@pytest.mark.parametrize("model, message", [
    (ms_model("QuickGelu", {"x": X}, ["y"], beta=1.0),
     "ONNX node '/QuickGelu' (QuickGelu): attributes that com.microsoft::QuickGelu does not "
     "define: beta"),
    (ms_model("BiasGelu", {"x": X}, ["y"]),
     "ONNX node '/BiasGelu' (BiasGelu): missing required input 1 (B)"),
    (ms_model("FastGelu", {"x": X}, ["y"], {"b": BIAS, "c": BIAS}),
     "ONNX node '/FastGelu' (FastGelu): 3 inputs, com.microsoft::FastGelu takes at most 2"),
])
def test_node_checks(model, message):
    with pytest.raises(PirError) as e:
        import_model(model)
    assert message in str(e.value)


def test_an_unsupported_contrib_op_is_listed():
    with pytest.raises(PirError, match=r"unsupported ONNX ops: com\.microsoft::NGramRepeatBlock"):
        import_model(ms_model("NGramRepeatBlock", {"x": X}, ["y"]))
