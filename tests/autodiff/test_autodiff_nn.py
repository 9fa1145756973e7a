"""nn ops differentiate through their decomposition: one-node ONNX models in float64, checked
against finite differences (reverse and forward, orders 1 and 2), and weights held as
constants differentiated in place."""

from __future__ import annotations

import numpy as np
import pytest

from ad_harness import check_grads
from helpers import node_model
from pir.frontends.onnx.importer import import_model
from pir.passes.autodiff import differentiate
from pir.runtimes.reference import run_function

RNG = np.random.default_rng(3)


def r(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape)


# (ONNX op, inputs, attributes)
NODES = [
    ("MatMul", {"a": r(2, 3), "b": r(3, 4)}, {}),
    ("MatMul", {"a": r(2, 2, 3), "b": r(3, 2)}, {}),  # batched, rhs broadcast
    ("Gemm", {"a": r(2, 3), "b": r(4, 3), "c": r(4)}, {"transB": 1, "alpha": 0.5}),
    ("Softmax", {"x": r(2, 4)}, {"axis": -1}),
    ("LayerNormalization", {"x": r(2, 4), "s": r(4), "b": r(4)}, {"axis": -1, "stash_type": 11}),
    ("Gelu", {"x": r(2, 3, low=-2, high=2)}, {}),
    ("Gelu", {"x": r(2, 3, low=-2, high=2)}, {"approximate": "tanh"}),
    ("Conv", {"x": r(1, 2, 5, 5), "w": r(3, 2, 3, 3)}, {"pads": [1, 0, 1, 1], "strides": [2, 1]}),
    ("Conv", {"x": r(1, 4, 4, 4), "w": r(4, 2, 2, 2), "b": r(4)}, {"group": 2}),
    ("MaxPool", {"x": r(1, 1, 4, 4)}, {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("ReduceMean", {"x": r(2, 3)}, {"keepdims": 0}),
]


@pytest.mark.parametrize("op_type,inputs,attrs", NODES,
                         ids=[f"{n[0]}-{i}" for i, n in enumerate(NODES)])
def test_nn_op_differentiates_through_its_decomposition(op_type, inputs, attrs):
    opset = 20 if op_type == "Gelu" else 21
    module = import_model(node_model(op_type, inputs, ["y"], opset=opset, **attrs))
    floats = [k for k, v in inputs.items() if v.dtype.kind == "f"]
    check_grads(module, inputs, wrt=floats)
    grad = module.lookup("d_rev")
    assert not [op.name for op in grad.walk() if op.name.startswith("nn.")]
    assert any(op.name.startswith("nn.") for op in module.lookup("main").walk()), \
        "the function differentiated is left as it was"


def _ops(fn):
    return [(op.name, [v.name for v in op.operands]) for op in fn.walk()]


def test_weights_held_as_constants_differentiate_in_place():
    """--wrt names a constant (an ONNX initializer): the result keeps it a constant, and its
    gradient matches differences of the same model with the weight as an input."""
    x, w, b = r(3, 4), r(5, 4), r(5)
    as_consts = import_model(node_model("Gemm", {"x": x}, ["y"], transB=1,
                                        initializers={"w": w, "b": b}))
    as_inputs = import_model(node_model("Gemm", {"x": x, "w": w, "b": b}, ["y"], transB=1))
    before = _ops(as_consts.lookup("main"))
    fn = differentiate(as_consts, ["w", "b"], seed="input")
    assert [a.name for a in fn.args] == ["x", "cot_y"]
    assert _ops(as_consts.lookup("main")) == before  # still nn.gemm of two constants
    cot = r(3, 5)
    got = run_function(as_consts, {"x": x, "cot_y": cot}, func="main_grad")
    h = 1e-6
    for name, value in (("w", w), ("b", b)):
        v = r(*value.shape)
        feeds = {"x": x, "w": w, "b": b}
        plus = run_function(as_inputs, {**feeds, name: value + h * v})["y"]
        minus = run_function(as_inputs, {**feeds, name: value - h * v})["y"]
        fd = np.sum(cot * (plus - minus)) / (2 * h)
        ad = np.sum(got[f"grad_{name}"] * v)
        assert abs(ad - fd) <= 1e-6 * max(abs(fd), 1e-3), (name, ad, fd)


def test_equal_constants_are_not_merged_while_differentiating():
    """Two biases with equal values: cse would merge them; the gradient of one must not
    pick up the other's uses."""
    x = r(2, 3)
    zeros = np.zeros(3)
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Add", ["x", "b1"], ["h"]),
             helper.make_node("Add", ["h", "b2"], ["h2"]),
             helper.make_node("Mul", ["h2", "b2"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 3])],
        [numpy_helper.from_array(zeros, "b1"), numpy_helper.from_array(zeros.copy(), "b2")])
    module = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    differentiate(module, ["b1"], seed="ones")
    got = run_function(module, {"x": x}, func="main_grad")["grad_b1"]
    # y = (x + b1 + b2) * b2 with b2 = 0: dy/db1 = b2 = 0 (merged, it would read b1's path
    # into b2's and give x summed instead)
    np.testing.assert_allclose(got, np.zeros(3), atol=0)
