"""Shape queries and generated tensors (Shape, Size, ConstantOfShape, Range, EyeLike, Trilu,
OneHot) and data-dependent ops (NonZero, Unique, Compress): import, round trip, run and
compare with ONNX Runtime; symbolic type rules and their diagnostics."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import check_model, node_model
from onnx import TensorProto, helper

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.builtin import ConstantOp
from pir.ir.dialects.func import FuncOp
from pir.runtimes.reference import run_function

rng = np.random.default_rng(1)
I64 = np.int64


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def op_of(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return next(o for o in fn.walk() if o.name == name)


def result_shape(module, name):
    return op_of(module, name).results[0].type.shape


def inferred(module, name):
    """The type rule's own result for the op (not merged with ONNX's inference)."""
    return op_of(module, name).infer()[0].shape


def sym_model(nodes, inputs, outputs, inits=None, opset=21):
    """A model whose graph inputs may have symbolic dims: (numpy dtype, dims) per input."""
    g_in = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), dims)
            for k, (dt, dims) in inputs.items()]
    g_out = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs]
    g_init = [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    graph = helper.make_graph(nodes, "sym", g_in, g_out, g_init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    return model


def only_constants(module) -> bool:
    fn = module.body.block.ops[0]
    return all(isinstance(o, ConstantOp) for o in fn.entry.ops[:-1])


@pytest.mark.parametrize("start,end", [(None, None), (1, None), (-1, None), (0, 2), (2, 1),
                                       (-10, 10)])
def test_shape_of_a_static_tensor_is_a_constant(start, end):
    x = randn(2, 3, 4)
    kwargs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    module = check_model(node_model("Shape", {"x": x}, ["y"], **kwargs), {"x": x})
    assert only_constants(module)  # nothing left to run: the importer knew the answer
    want = np.array(x.shape[slice(start, end)], I64)
    np.testing.assert_array_equal(run_function(module, {"x": x})["y"], want)


@pytest.mark.parametrize("start,end", [(None, None), (1, None), (0, 1), (-2, -1)])
def test_shape_of_a_symbolic_tensor_stays_an_op(start, end):
    kwargs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    model = sym_model([helper.make_node("Shape", ["x"], ["y"], **kwargs)],
                      {"x": (np.float32, ["B", "S", 4])}, ["y"])
    module = import_model(model)
    x = randn(5, 2, 4)
    want = np.array(x.shape[slice(start, end)], I64)
    assert inferred(module, "nn.shape") == want.shape
    np.testing.assert_array_equal(run_function(module, {"x": x})["y"], want)


def test_shape_of_the_static_dims_of_a_symbolic_tensor_is_a_constant():
    model = sym_model([helper.make_node("Shape", ["x"], ["y"], start=1)],
                      {"x": (np.float32, ["B", 3, 4])}, ["y"])
    module = import_model(model)
    assert only_constants(module)
    np.testing.assert_array_equal(run_function(module, {"x": randn(2, 3, 4)})["y"], [3, 4])


def test_size():
    x = randn(2, 3)
    module = check_model(node_model("Size", {"x": x}, ["y"]), {"x": x})
    assert only_constants(module)
    model = sym_model([helper.make_node("Size", ["x"], ["y"])], {"x": (np.float32, ["B", 3])},
                      ["y"])
    module = import_model(model)
    assert inferred(module, "nn.size") == ()
    assert run_function(module, {"x": randn(4, 3)})["y"] == 12


@pytest.mark.parametrize("value", [None, np.array([7], np.int32), np.array([1.5], np.float64)])
@pytest.mark.parametrize("shape", [[2, 3], [0], []])
def test_constant_of_shape(value, shape):
    s = np.array(shape, I64)
    kwargs = {} if value is None else {"value": helper.make_tensor(
        "v", helper.np_dtype_to_tensor_dtype(value.dtype), [1], value)}
    module = check_model(node_model("ConstantOfShape", {"s": s}, ["y"], **kwargs), {"s": s})
    assert op_of(module, "nn.constant_of_shape").results[0].type.dtype.numpy == \
        (np.float32 if value is None else value.dtype)


def test_constant_of_a_computed_shape_keeps_symbols():
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["y"],
                              value=helper.make_tensor("v", TensorProto.INT64, [1], [1]))]
    module = import_model(sym_model(nodes, {"x": (np.float32, ["B", "S"])}, ["y"]))
    assert inferred(module, "nn.constant_of_shape") == ("B", "S")
    np.testing.assert_array_equal(run_function(module, {"x": randn(2, 3)})["y"],
                                  np.ones((2, 3), I64))


@pytest.mark.parametrize("start,limit,delta,dtype", [
    (0, 5, 1, np.int64), (10, 4, -2, np.int32), (1.0, 2.0, 0.3, np.float32),
    (0.5, -1.0, -0.25, np.float64), (3, 3, 1, np.int64)])
def test_range(start, limit, delta, dtype):
    feeds = {k: np.array(v, dtype) for k, v in (("s", start), ("l", limit), ("d", delta))}
    module = check_model(node_model("Range", feeds, ["y"]), feeds)
    assert op_of(module, "nn.range").results[0].type.dtype.numpy == dtype


def test_range_of_constants_has_a_known_length_and_a_symbolic_limit_its_symbol():
    inits = {"s": np.array(0, I64), "d": np.array(1, I64)}
    nodes = [helper.make_node("Shape", ["x"], ["shp"], start=1, end=2),
             helper.make_node("Squeeze", ["shp"], ["n"]),
             helper.make_node("Range", ["s", "n", "d"], ["pos"])]
    module = import_model(sym_model(nodes, {"x": (np.float32, ["B", "S"])}, ["pos"], inits))
    assert inferred(module, "nn.range") == ("S",)
    np.testing.assert_array_equal(run_function(module, {"x": randn(2, 4)})["pos"], np.arange(4))


def test_range_in_half_precision_accumulates_in_float():
    feeds = {"s": np.array(2048, np.float16), "l": np.array(2060, np.float16),
             "d": np.array(1, np.float16)}
    module = import_model(node_model("Range", feeds, ["y"], opset=21))
    got = run_function(module, feeds)["y"]
    np.testing.assert_array_equal(got, np.arange(2048, 2060, dtype=np.float32).astype(np.float16))


@pytest.mark.parametrize("shape,k,dtype", [((3, 3), 0, None), ((3, 5), 1, TensorProto.INT32),
                                           ((4, 2), -1, TensorProto.DOUBLE), ((2, 2), 5, None)])
def test_eye_like(shape, k, dtype):
    x = randn(*shape)
    kwargs = {"k": k} if dtype is None else {"k": k, "dtype": dtype}
    check_model(node_model("EyeLike", {"x": x}, ["y"], **kwargs), {"x": x})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1, -7])
def test_trilu(upper, k):
    x = randn(2, 4, 5)
    inits = {} if k is None else {"k": np.array(k, I64)}
    check_model(node_model("Trilu", {"x": x}, ["y"], initializers=inits, upper=upper), {"x": x})


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("indices", [[[0, 2], [1, 4]], [[-1, 3], [5, -6]]])
def test_one_hot(axis, indices):
    idx = np.array(indices, I64)
    inits = {"depth": np.array(5, I64), "values": np.array([-1.0, 2.0], np.float32)}
    module = check_model(node_model("OneHot", {"i": idx}, ["y"], initializers=inits, axis=axis),
                         {"i": idx})
    want = [2, 2]
    want.insert(axis % 3, 5)
    assert result_shape(module, "nn.one_hot") == tuple(want)


@pytest.mark.parametrize("x", [np.array([[1, 0], [0, 3]], np.float32),
                               np.zeros((2, 3), np.int32), np.array([True, False, True])])
def test_non_zero(x):
    module = check_model(node_model("NonZero", {"x": x}, ["y"]), {"x": x})
    assert inferred(module, "nn.non_zero") == (x.ndim, None)


@pytest.mark.parametrize("sorted_", [0, 1])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_unique(sorted_, axis):
    x = np.array([[2, 1, 2], [0, 1, 0], [2, 1, 2], [1, 1, 1]], np.float32)
    kwargs = {"sorted": sorted_} if axis is None else {"sorted": sorted_, "axis": axis}
    outs = ["y", "indices", "inverse", "counts"]
    module = check_model(node_model("Unique", {"x": x}, outs, **kwargs), {"x": x})
    y = run_function(module, {"x": x})["y"]
    if axis == 0:
        assert y.shape == (3, 3)


def test_unique_with_only_its_first_output():
    x = np.array([3, 1, 3, 2], np.int64)
    module = check_model(node_model("Unique", {"x": x}, ["y"], sorted=0), {"x": x})
    np.testing.assert_array_equal(run_function(module, {"x": x})["y"], [3, 1, 2])


@pytest.mark.parametrize("axis,cond", [(None, [1, 0, 1]), (0, [0, 1, 1]), (1, [1, 0]),
                                       (-1, [0, 1, 1, 1])])
def test_compress(axis, cond):
    x = randn(3, 4)
    c = np.array(cond, bool)
    kwargs = {} if axis is None else {"axis": axis}
    check_model(node_model("Compress", {"x": x, "c": c}, ["y"], **kwargs), {"x": x, "c": c})
    inits_model = node_model("Compress", {"x": x}, ["y"], initializers={"c": c}, **kwargs)
    module = check_model(inits_model, {"x": x})
    n = int(c.sum())
    assert inferred(module, "nn.compress") == ((n,) if axis is None else
                                               tuple(n if i == axis % 2 else d
                                                     for i, d in enumerate(x.shape)))


# -- diagnostics -----------------------------------------------------------------------------


def test_eye_like_needs_a_matrix():
    x = randn(2, 3, 4)
    with pytest.raises(PirError, match=r"input must be 2-d, got tensor<2x3x4xf32>"):
        import_model(node_model("EyeLike", {"x": x}, ["y"]))


def test_range_needs_scalars():
    feeds = {"s": np.array([0], I64), "l": np.array(5, I64), "d": np.array(1, I64)}
    with pytest.raises(PirError, match="start, limit and delta must be scalars"):
        import_model(node_model("Range", feeds, ["y"]))


def test_one_hot_axis_out_of_range():
    idx = np.array([0, 1], I64)
    inits = {"depth": np.array(3, I64), "values": np.array([0, 1], np.float32)}
    with pytest.raises(PirError, match="axis 5 is out of range for rank 2"):
        import_model(node_model("OneHot", {"i": idx}, ["y"], initializers=inits, axis=5))
