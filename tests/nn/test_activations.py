"""Activation functions and Clip: import, round trip, run, and compare with ONNX Runtime; type
rules and their diagnostics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import check_model, node_model

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.func import FuncOp

rng = np.random.default_rng(0)


def uniform(*shape, lo=-4.0, hi=4.0, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def op_of(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return next(o for o in fn.walk() if o.name == name)


# (ONNX op, nn op, attributes, opset)
CASES = [
    ("Relu", "nn.relu", {}, 14),
    ("LeakyRelu", "nn.leaky_relu", {}, 16),
    ("LeakyRelu", "nn.leaky_relu", {"alpha": 0.3}, 16),
    ("Elu", "nn.elu", {}, 21),
    ("Elu", "nn.elu", {"alpha": 0.5}, 21),
    ("Selu", "nn.selu", {}, 21),
    ("Selu", "nn.selu", {"alpha": 2.0, "gamma": 3.0}, 21),
    ("Celu", "nn.celu", {}, 21),
    ("Celu", "nn.celu", {"alpha": 2.0}, 21),
    ("Sigmoid", "nn.sigmoid", {}, 21),
    ("HardSigmoid", "nn.hard_sigmoid", {}, 21),
    ("HardSigmoid", "nn.hard_sigmoid", {"alpha": 0.5, "beta": 0.6}, 21),
    ("HardSwish", "nn.hard_swish", {}, 21),
    ("Softplus", "nn.softplus", {}, 21),
    ("Softsign", "nn.softsign", {}, 21),
    ("Gelu", "nn.gelu", {}, 20),
    ("Gelu", "nn.gelu", {"approximate": "tanh"}, 20),
    ("Mish", "nn.mish", {}, 21),
    ("ThresholdedRelu", "nn.thresholded_relu", {}, 21),
    ("ThresholdedRelu", "nn.thresholded_relu", {"alpha": 2.0}, 21),
    ("Shrink", "nn.shrink", {}, 21),
    ("Shrink", "nn.shrink", {"lambd": 1.5, "bias": 0.5}, 21),
    ("Tanh", "nn.tanh", {}, 21),
]


@pytest.mark.parametrize("op_type,name,attrs,opset", CASES,
                         ids=[f"{c[0]}-{'-'.join(c[2]) or 'default'}" for c in CASES])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), ()])
def test_activation_matches_ort(op_type, name, attrs, opset, shape):
    x = uniform(*shape)
    module = check_model(node_model(op_type, {"x": x}, ["y"], opset=opset, **attrs), {"x": x})
    op = op_of(module, name)
    assert op.results[0].type == module.body.block.ops[0].entry.args[0].type
    for key, value in attrs.items():  # the node's attributes reach the op under their names
        assert getattr(op, key) == pytest.approx(value)


@pytest.mark.parametrize("dtype,op_types", [(np.float16, ("Relu", "Sigmoid", "Tanh", "LeakyRelu")),
                                             (np.float64, ("Relu", "Sigmoid", "Tanh"))])
def test_activation_other_float_types(dtype, op_types):
    x = uniform(4, 5, dtype=dtype)
    for op_type in op_types:
        check_model(node_model(op_type, {"x": x}, ["y"]), {"x": x}, rtol=1e-3, atol=1e-3)


def test_relu_and_shrink_on_integers():
    x = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    check_model(node_model("Relu", {"x": x}, ["y"]), {"x": x})
    check_model(node_model("Shrink", {"x": x}, ["y"], lambd=1.5, bias=1.0), {"x": x})


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_swish(alpha):
    # Swish is opset 24, newer than ONNX Runtime: compare with its formula.
    x = uniform(3, 4)
    attrs = {} if alpha == 1.0 else {"alpha": alpha}
    want = (x / (1 + np.exp(-alpha * x.astype(np.float64)))).astype(np.float32)
    check_model(node_model("Swish", {"x": x}, ["y"], opset=24, **attrs), {"x": x},
                expected={"y": want})


def test_sigmoid_and_softplus_do_not_overflow():
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], np.float32)
    check_model(node_model("Sigmoid", {"x": x}, ["y"]), {"x": x},
                expected={"y": np.array([0, 1 / (1 + math.exp(50)), 0.5, 1, 1], np.float32)})
    check_model(node_model("Softplus", {"x": x}, ["y"]), {"x": x},
                expected={"y": np.array([0, math.log1p(math.exp(-50)), math.log(2), 50, 1000],
                                        np.float32)})


@pytest.mark.parametrize("xs,ss", [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (3, 1)),
                                   ((3, 4), ())])
def test_prelu_broadcasts_slope(xs, ss):
    x, slope = uniform(*xs), uniform(*ss, lo=0, hi=1)
    module = check_model(node_model("PRelu", {"x": x, "slope": slope}, ["y"]),
                         {"x": x, "slope": slope})
    assert op_of(module, "nn.p_relu").results[0].type.shape == xs


# -- Clip -----------------------------------------------------------------------------------


@pytest.mark.parametrize("lo,hi", [(-1.0, 1.0), (-1.0, None), (None, 0.5), (None, None),
                                   (2.0, 1.0)])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.int64])
def test_clip_optional_bounds(lo, hi, dtype):
    x = (uniform(3, 4) * 3).astype(dtype)
    inputs = {"x": x}
    inits = {key: np.array(b, dtype) for key, b in (("min", lo), ("max", hi)) if b is not None}
    model = node_model("Clip", inputs, ["y"], opset=13, initializers=inits)
    if lo is None and hi is not None:  # an absent min before a present max is an empty name
        model.graph.node[0].input[:] = ["x", "", "max"]
    module = check_model(model, inputs)
    op = op_of(module, "nn.clip")
    assert (op.min is None) == (lo is None) and (op.max is None) == (hi is None)


@pytest.mark.parametrize("attrs", [{"min": -0.5, "max": 0.5}, {"min": 0.0}, {"max": 1.0}, {}])
def test_clip_attributes_of_old_opsets(attrs):
    x = uniform(3, 4)
    model = node_model("Clip", {"x": x}, ["y"], opset=7, **attrs)
    module = check_model(model, {"x": x})
    op = op_of(module, "nn.clip")
    assert (op.min is None) == ("min" not in attrs) and (op.max is None) == ("max" not in attrs)


# -- diagnostics ----------------------------------------------------------------------------


def test_clip_bounds_must_be_scalars():
    x = uniform(3, 4)
    model = node_model("Clip", {"x": x}, ["y"], opset=13,
                       initializers={"min": np.zeros(3, np.float32)})
    with pytest.raises(PirError, match=r"nn.clip.*min bound must be a scalar, got tensor<3xf32>"):
        import_model(model)


def test_gelu_approximation_must_be_known():
    x = uniform(3)
    model = node_model("Gelu", {"x": x}, ["y"], opset=20, approximate="erf")
    with pytest.raises(PirError, match="approximate must be 'none' or 'tanh', got 'erf'"):
        import_model(model)


def test_prelu_slope_must_broadcast_to_x():
    feeds = {"x": uniform(3, 1), "slope": uniform(3, 4)}
    with pytest.raises(PirError, match=r"nn.p_relu.*slope of shape tensor<3x4xf32> does not "
                                       r"broadcast to x's shape tensor<3x1xf32>"):
        import_model(node_model("PRelu", feeds, ["y"]))


def test_float_activation_rejects_integers():
    x = rng.integers(0, 4, (3,)).astype(np.int32)
    with pytest.raises(PirError, match="operand 'x' has element type i32"):
        import_model(node_model("Sigmoid", {"x": x}, ["y"]))
