"""Random ops and Dropout: shapes, element types, seeds, distributions (random values cannot
be compared with ONNX Runtime's), inference-mode Dropout against ONNX Runtime, diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_model, node_model, roundtrip
from onnx import TensorProto, helper

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.func import FuncOp
from pir.ir.parser import parse_module
from pir.runtimes.reference import run_function

rng = np.random.default_rng(0)


def run(model, feeds=None):
    """Import, check the text round trip, and run the re-parsed module once."""
    module = parse_module(roundtrip(import_model(model)))
    return module, run_function(module, feeds or {})


def generator_model(op_type, opset=22, **attrs):
    node = helper.make_node(op_type, [], ["y"], **attrs)
    graph = helper.make_graph([node], "gen", [], [helper.make_tensor_value_info(
        "y", TensorProto.UNDEFINED, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def ops_named(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return [o for o in fn.walk() if o.name == name]


@pytest.mark.parametrize("dtype,np_dtype", [(TensorProto.FLOAT, np.float32),
                                            (TensorProto.DOUBLE, np.float64),
                                            (TensorProto.FLOAT16, np.float16)])
@pytest.mark.parametrize("shape", [[2000], [40, 50], [10, 1, 30]])
def test_random_uniform(dtype, np_dtype, shape):
    module, out = run(generator_model("RandomUniform", shape=shape, low=-2.0, high=3.0,
                                      dtype=dtype, seed=1.0))
    y = out["y"]
    assert y.dtype == np_dtype and list(y.shape) == shape
    assert y.min() >= -2 and y.max() <= 3 and y.max() - y.min() > 4.5
    assert abs(float(y.mean()) - 0.5) < 4 * 1.45 / np.sqrt(y.size)  # 4 sigma
    assert len(ops_named(module, "nn.random_uniform")) == 1  # not folded into a constant


@pytest.mark.parametrize("shape", [[3000], [60, 50]])
def test_random_normal(shape):
    _, out = run(generator_model("RandomNormal", shape=shape, mean=5.0, scale=2.0, seed=2.0))
    y = out["y"]
    assert y.dtype == np.float32 and list(y.shape) == shape
    assert abs(float(y.mean()) - 5) < 0.2 and abs(float(y.std()) - 2) < 0.2


@pytest.mark.parametrize("op_type", ["RandomUniform", "RandomNormal"])
def test_seed_makes_runs_repeat_and_no_seed_does_not(op_type):
    seeded = generator_model(op_type, shape=[100], seed=3.0)
    assert np.array_equal(run(seeded)[1]["y"], run(seeded)[1]["y"])
    unseeded = generator_model(op_type, shape=[100])
    assert not np.array_equal(run(unseeded)[1]["y"], run(unseeded)[1]["y"])


@pytest.mark.parametrize("op_type", ["RandomUniformLike", "RandomNormalLike"])
@pytest.mark.parametrize("dtype,want", [(None, np.float64), (TensorProto.FLOAT, np.float32)])
def test_like_ops_take_shape_and_default_dtype_from_input(op_type, dtype, want):
    x = np.zeros((4, 7), np.float64)
    attrs = {"dtype": dtype} if dtype is not None else {}
    _, out = run(node_model(op_type, {"x": x}, ["y"], opset=22, seed=1.0, **attrs), {"x": x})
    assert out["y"].shape == (4, 7) and out["y"].dtype == want


@pytest.mark.parametrize("dtype,want", [(None, np.float32), (TensorProto.INT32, np.int32),
                                        (TensorProto.BOOL, np.bool_)])
def test_bernoulli(dtype, want):
    p = np.tile(np.array([0.0, 1.0, 0.5], np.float32), 2000)
    attrs = {"dtype": dtype} if dtype is not None else {}
    _, out = run(node_model("Bernoulli", {"p": p}, ["y"], opset=22, seed=5.0, **attrs),
                 {"p": p})
    y = out["y"].astype(np.float64)
    assert out["y"].dtype == want
    assert (y[0::3] == 0).all() and (y[1::3] == 1).all() and abs(y[2::3].mean() - 0.5) < 0.05


@pytest.mark.parametrize("dtype,want", [(None, np.int32), (TensorProto.INT64, np.int64)])
@pytest.mark.parametrize("sample_size", [1, 500])
def test_multinomial(dtype, want, sample_size):
    # row 0 always picks class 2; row 1 picks class 0 and 1 equally often
    logits = np.log(np.array([[1e-12, 1e-12, 1.0], [0.5, 0.5, 1e-12]], np.float32))
    attrs = {"dtype": dtype} if dtype is not None else {}
    _, out = run(node_model("Multinomial", {"x": logits}, ["y"], opset=22,
                            sample_size=sample_size, seed=0.0, **attrs), {"x": logits})
    y = out["y"]
    assert y.dtype == want and y.shape == (2, sample_size)
    assert (y[0] == 2).all() and set(np.unique(y[1])) <= {0, 1}
    if sample_size > 1:
        assert abs(float((y[1] == 0).mean()) - 0.5) < 0.1


# -- Dropout ----------------------------------------------------------------------------------

@pytest.mark.parametrize("opset,outputs", [(22, ["y"]), (22, ["y", "mask"]), (12, ["y"]),
                                           (10, ["y"]), (7, ["y"])])
def test_dropout_in_inference_is_identity(opset, outputs):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    check_model(node_model("Dropout", {"x": x}, outputs, opset=opset), {"x": x})


@pytest.mark.parametrize("opset,mask_dtype", [(10, np.bool_), (7, np.float32)])
def test_old_dropout_mask_is_all_ones(opset, mask_dtype):
    """Before opset 12 the inference mask was unspecified (ONNX Runtime gives zeros, ONNX's
    reference ones); the newest semantics, all kept, apply.  Before 10 it had x's type."""
    x = rng.standard_normal((3, 4)).astype(np.float32)
    _, out = run(node_model("Dropout", {"x": x}, ["y", "mask"], opset=opset), {"x": x})
    assert out["mask"].dtype == mask_dtype and (out["mask"] == 1).all()
    assert np.array_equal(out["y"], x)


@pytest.mark.parametrize("ratio", [0.0, 0.25, 0.75])
def test_dropout_in_training(ratio):
    x = rng.uniform(1, 2, (100, 100)).astype(np.float32)
    model = node_model("Dropout", {"x": x}, ["y", "mask"], opset=22, seed=7,
                       initializers={"ratio": np.array(ratio, np.float32),
                                     "training_mode": np.array(True)})
    _, out = run(model, {"x": x})
    y, mask = out["y"], out["mask"]
    assert mask.dtype == np.bool_ and abs(1 - float(mask.mean()) - ratio) < 0.03
    np.testing.assert_allclose(y, np.where(mask, x / (1 - ratio), 0), rtol=1e-6)
    assert np.array_equal(run(model, {"x": x})[1]["mask"], mask)  # seeded: the same mask


def test_dropout_training_mode_false_is_identity():
    x = rng.standard_normal((5,)).astype(np.float32)
    model = node_model("Dropout", {"x": x}, ["y", "mask"], opset=22,
                       initializers={"ratio": np.array(0.5, np.float32),
                                     "training_mode": np.array(False)})
    check_model(model, {"x": x})


# -- diagnostics ------------------------------------------------------------------------------

def test_random_uniform_rejects_integer_dtype():
    with pytest.raises(PirError, match="element type i32"):
        import_model(generator_model("RandomUniform", shape=[2], dtype=TensorProto.INT32))


def test_multinomial_needs_a_matrix():
    x = np.zeros((2, 3, 4), np.float32)
    model = node_model("Multinomial", {"x": x}, ["y"], opset=22)
    with pytest.raises(PirError, match=r"input must be \[batch, classes\]"):
        import_model(model)


def test_dropout_ratio_must_be_scalar():
    x = np.zeros((2, 3), np.float32)
    model = node_model("Dropout", {"x": x, "r": np.zeros(2, np.float32)}, ["y"], opset=22)
    with pytest.raises(PirError, match="ratio must be a scalar"):
        import_model(model)
