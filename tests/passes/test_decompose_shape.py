"""The decompositions of shape queries and generated tensors (shape, size, constant_of_shape,
range, eye_like, trilu, one_hot) preserve values, symbolic dims included; the ops whose
output size depends on the data stay nn ops."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import check_pipeline, node_model, op_names
from onnx import helper

from pir.frontends.onnx.importer import import_model
from pir.passes.decompose import Decompose
from pir.passes.decompose.registry import KEPT

I64 = np.int64
rng = np.random.default_rng(2)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def nn_ops(module) -> list[str]:
    return [n for n in op_names(module) if n.startswith("nn.")]


def decomposed(op_type, feeds, shapes=None, initializers=None, opset=21, **attrs):
    model = node_model(op_type, feeds[0], ["out"], shapes=shapes, initializers=initializers,
                       opset=opset, **attrs)
    module = import_model(model)
    for f in feeds:
        optimized = check_pipeline(module, f, "decompose")
    assert not nn_ops(optimized), f"{op_type}: nn ops left: {nn_ops(optimized)}"
    return optimized


# -- shape queries -------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs", [{}, {"start": 1}, {"start": -2, "end": -1}])
def test_shape_static_is_a_constant(attrs):
    out = decomposed("Shape", [{"x": randn(2, 3, 4)}], **attrs)
    assert op_names(out) == ["builtin.constant", "func.return"]


@pytest.mark.parametrize("attrs", [{}, {"start": 1}, {"end": 1}])
def test_shape_symbolic_counts_the_dims(attrs):
    decomposed("Shape", [{"x": randn(2, 3, 4)}, {"x": randn(5, 3, 7)}],
               shapes={"x": ["B", 3, "S"]}, **attrs)


@pytest.mark.parametrize("sym", [None, ["B", 3, "S"]])
def test_size(sym):
    feeds = [{"x": randn(2, 3, 4)}] + ([{"x": randn(5, 3, 1)}] if sym else [])
    decomposed("Size", feeds, shapes={"x": sym} if sym else None)


# -- generated tensors ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, np.array([2.5], np.float32), np.array([7], I64)])
def test_constant_of_shape(value):
    attrs = {"value": onnx.numpy_helper.from_array(value)} if value is not None else {}
    decomposed("ConstantOfShape", [{}], initializers={"shape": np.array([2, 3], I64)}, **attrs)


@pytest.mark.parametrize("start,limit,delta,dtype", [
    (0, 5, 1, I64), (3, -4, -2, np.int32), (1.5, 4.0, 0.25, np.float32), (10, 2, 3, I64),
    (0.5, 3.0, 0.5, np.float16),
])
def test_range_constant(start, limit, delta, dtype):
    inits = {k: np.array(v, dtype) for k, v in (("a", start), ("b", limit), ("c", delta))}
    decomposed("Range", [{}], initializers=inits)


def test_range_with_runtime_start_stays():
    """With a start known only at run time the length is unknown: the range stays."""
    model = node_model("Range", {"a": np.array(2, I64)}, ["out"],
                       initializers={"b": np.array(9, I64), "d": np.array(3, I64)})
    out = check_pipeline(import_model(model), {"a": np.array(2, I64)}, "decompose")
    assert nn_ops(out) == ["nn.range"]


def test_range_symbolic_positions():
    """range(0, S, 1) with S = shape(ids)[1] (position ids) is iota(S)."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["s"], start=1, end=2),
        helper.make_node("Squeeze", ["s"], ["n"]),
        helper.make_node("Range", ["zero", "n", "one"], ["pos"]),
    ]
    inits = [onnx.numpy_helper.from_array(np.array(v, I64), k)
             for k, v in (("zero", 0), ("one", 1))]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, ["B", "S"])],
        [helper.make_tensor_value_info("pos", onnx.TensorProto.UNDEFINED, None)], inits)
    module = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    for n in (3, 7):
        out = check_pipeline(module, {"ids": np.zeros((2, n), I64)}, "decompose")
    assert [n for n in op_names(out) if n.startswith("prim.")] == ["prim.iota"]


@pytest.mark.parametrize("k,dtype", [(0, None), (1, None), (-2, onnx.TensorProto.INT32),
                                     (5, onnx.TensorProto.BOOL)])
def test_eye_like(k, dtype):
    attrs = {"k": k} | ({"dtype": dtype} if dtype is not None else {})
    decomposed("EyeLike", [{"x": randn(3, 5)}], **attrs)


def test_eye_like_symbolic():
    decomposed("EyeLike", [{"x": randn(3, 5)}, {"x": randn(6, 2)}], shapes={"x": ["M", "N"]})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -1, 2])
def test_trilu(upper, k):
    inits = {"k": np.array(k, I64)} if k is not None else None
    decomposed("Trilu", [{"x": randn(2, 4, 5)}, {"x": randn(3, 4, 5)}],
               shapes={"x": ["B", 4, 5]}, initializers=inits, upper=upper)


def test_trilu_runtime_k():
    decomposed("Trilu", [{"x": randn(4, 5), "k": np.array(k, I64)} for k in (-2, 0, 3)])


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    idx = np.array([[0, -1, 3], [5, 2, -6]], I64)  # 5 and -6 are out of range: all "off"
    decomposed("OneHot", [{"i": idx}], initializers={
        "depth": np.array(5, I64), "values": np.array([-1.0, 2.0], np.float32)}, axis=axis)


def test_one_hot_float_indices_symbolic():
    feeds = [{"i": np.array(v, np.float32)} for v in ([1.7, -1.2, 3.0], [0.0, 2.9])]
    decomposed("OneHot", feeds, shapes={"i": ["N"]}, initializers={
        "depth": np.array(4.0, np.float32), "values": np.array([0, 1], I64)})


# -- ops that stay -------------------------------------------------------------------------------


@pytest.mark.parametrize("op,reason", [
    ("nn.non_zero", "its output size depends on the input's values"),
    ("nn.unique", "its output size depends on the input's values"),
])
def test_data_dependent_sizes_stay(op, reason):
    model = node_model("NonZero", {"x": np.array([[1, 0], [2, 3]], np.float32)}, ["out"])
    module = import_model(model)
    Decompose().apply(module)
    assert nn_ops(module) == ["nn.non_zero"]
    assert KEPT[op] == reason
