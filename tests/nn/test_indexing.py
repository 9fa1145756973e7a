"""Gather, GatherElements, GatherND, Scatter(Elements), ScatterND, TensorScatter and MaxUnpool:
import, round trip, run, and compare with ONNX Runtime; type rules and their diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_model, node_model

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.func import FuncOp

rng = np.random.default_rng(0)


def data(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def op_of(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return next(o for o in fn.walk() if o.name == name)


# -- gathers -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,axis,indices", [
    ((5, 4), 0, [[0, 1], [4, 3]]),
    ((5, 4), 1, [3, -1, 0]),
    ((2, 3, 4), -1, [[1]]),
    ((2, 3, 4), 1, 2),  # a scalar index drops the axis
])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_gather(shape, axis, indices, index_dtype):
    x, idx = data(*shape), np.array(indices, index_dtype)
    model = node_model("Gather", {"x": x, "i": idx}, ["y"], axis=axis)
    module = check_model(model, {"x": x, "i": idx})
    want = np.take(x, idx, axis=axis).shape
    assert op_of(module, "nn.gather").results[0].type.shape == want


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis):
    x = data(3, 4)
    idx = rng.integers(-3 if axis == 0 else -4, 3 if axis == 0 else 4, (2, 4) if axis == 0
                       else (3, 2)).astype(np.int64)
    model = node_model("GatherElements", {"x": x, "i": idx}, ["y"], axis=axis)
    module = check_model(model, {"x": x, "i": idx})
    assert op_of(module, "nn.gather_elements").results[0].type.shape == idx.shape


@pytest.mark.parametrize("shape,indices,batch_dims,opset", [
    ((2, 2), [[0, 0], [1, 1]], 0, 13),
    ((2, 2), [[1], [0]], 0, 11),
    ((2, 2, 2), [[[0, 1]], [[1, 0]]], 0, 13),
    ((2, 2, 2), [[1], [0]], 1, 13),
    ((2, 3, 4), [[[1, -1], [0, 2]], [[2, 3], [1, 0]]], 1, 13),
])
def test_gather_nd(shape, indices, batch_dims, opset):
    x, idx = data(*shape), np.array(indices, np.int64)
    kw = {"batch_dims": batch_dims} if batch_dims else {}
    model = node_model("GatherND", {"x": x, "i": idx}, ["y"], opset=opset, **kw)
    module = check_model(model, {"x": x, "i": idx})
    out = op_of(module, "nn.gather_nd").results[0].type.shape
    k = idx.shape[-1]
    assert out == idx.shape[:-1] + x.shape[batch_dims + k:]


# -- scatters ------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(reduction, axis):
    x = data(3, 4)
    # Duplicate indices are only defined with a reduction.
    if reduction == "none":
        idx = np.array([[2, 0, 1, 0], [0, 1, 2, 1]] if axis == 0 else [[3, 0], [1, -1], [0, 2]],
                       np.int64)
    else:
        idx = np.array([[1, 1, 0, -1], [1, 0, 0, 2]] if axis == 0 else [[1, 1], [0, 0], [3, 3]],
                       np.int64)
    upd = data(*idx.shape)
    model = node_model("ScatterElements", {"x": x, "i": idx, "u": upd}, ["y"], opset=18,
                       axis=axis, reduction=reduction)
    check_model(model, {"x": x, "i": idx, "u": upd})


@pytest.mark.parametrize("opset", [9, 10])
def test_deprecated_scatter_is_scatter_elements(opset):
    x, idx, upd = data(3, 3), np.array([[1, 0, 2], [0, 2, 1]], np.int64), data(2, 3)
    model = node_model("Scatter", {"x": x, "i": idx, "u": upd}, ["y"], opset=opset, axis=0)
    module = check_model(model, {"x": x, "i": idx, "u": upd})
    assert op_of(module, "nn.scatter_elements").reduction == "none"


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("indices,upd_shape", [
    ([[1], [3]], (2, 4, 4)),           # whole slices
    ([[0, 1, 2], [3, 3, 3]], (2,)),    # single elements
    ([[[0, 0], [2, 1]]], (1, 2, 4)),   # rows, with a batch of index tuples
])
def test_scatter_nd(reduction, indices, upd_shape):
    x, idx, upd = data(4, 4, 4), np.array(indices, np.int64), data(*upd_shape)
    model = node_model("ScatterND", {"x": x, "i": idx, "u": upd}, ["y"], opset=18,
                       reduction=reduction)
    check_model(model, {"x": x, "i": idx, "u": upd})


def test_scatter_nd_add_accumulates_duplicates():
    x, idx, upd = np.zeros(4, np.float32), np.array([[1], [1], [3]], np.int64), \
        np.array([1, 2, 5], np.float32)
    model = node_model("ScatterND", {"x": x, "i": idx, "u": upd}, ["y"], opset=16,
                       reduction="add")
    check_model(model, {"x": x, "i": idx, "u": upd},
                expected={"y": np.array([0, 3, 0, 5], np.float32)})


def _kv_update(cache, update, starts, axis, circular):
    """TensorScatter by the spec's pseudocode."""
    out = cache.copy()
    axis %= cache.ndim
    for prefix in np.ndindex(cache.shape[:axis]):
        for s in range(update.shape[axis]):
            pos = starts[prefix[0]] + s
            pos = pos % cache.shape[axis] if circular else pos
            out[prefix + (pos,)] = update[prefix + (s,)]
    return out


@pytest.mark.parametrize("mode,starts", [("linear", [0, 2]), ("circular", [3, 4]),
                                         ("linear", None)])
@pytest.mark.parametrize("axis,shape,upd", [(-2, (2, 3, 5, 4), (2, 3, 2, 4)),
                                            (1, (2, 5, 3), (2, 2, 3))])
def test_tensor_scatter(mode, starts, axis, shape, upd):
    cache, update = data(*shape), data(*upd)
    inputs = {"cache": cache, "update": update}
    if starts is not None:
        inputs["idx"] = np.array(starts, np.int64)
    model = node_model("TensorScatter", inputs, ["y"], opset=24, mode=mode, axis=axis)
    want = _kv_update(cache, update, starts or [0, 0], axis, mode == "circular")
    check_model(model, inputs, expected={"y": want})


@pytest.mark.parametrize("kernel,strides,pads,shape", [
    ([2, 2], [2, 2], [0, 0, 0, 0], (1, 2, 4, 4)),
    ([3, 3], [2, 2], [1, 1, 1, 1], (2, 1, 5, 5)),
    ([2], [1], [0, 0], (1, 3, 6)),
])
def test_max_unpool_inverts_max_pool(kernel, strides, pads, shape):
    import onnx
    from onnx import helper

    # MaxPool gives the values and the flat indices that MaxUnpool scatters back.
    x = data(*shape)
    pool = helper.make_node("MaxPool", ["x"], ["v", "i"], kernel_shape=kernel, strides=strides,
                            pads=pads)
    graph = helper.make_graph([pool], "p", [helper.make_tensor_value_info("x", 1, shape)],
                              [helper.make_tensor_value_info("v", 1, None),
                               helper.make_tensor_value_info("i", onnx.TensorProto.INT64, None)])
    from helpers import run_ort

    pooled = run_ort(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]),
                     {"x": x})
    v, i = pooled["v"], pooled["i"]
    model = node_model("MaxUnpool", {"v": v, "i": i}, ["y"], kernel_shape=kernel,
                       strides=strides, pads=pads)
    module = check_model(model, {"v": v, "i": i})
    assert op_of(module, "nn.max_unpool").results[0].type.shape == shape


def test_max_unpool_with_output_shape_pads_with_zeros():
    v = np.array([[[[1, 2], [3, 4]]]], np.float32)
    i = np.array([[[[5, 7], [13, 15]]]], np.int64)
    model = node_model("MaxUnpool", {"v": v, "i": i}, ["y"], kernel_shape=[2, 2],
                       strides=[2, 2], initializers={"shape": np.array([1, 1, 5, 5], np.int64)})
    want = np.zeros((1, 1, 5, 5), np.float32)
    want[0, 0, 1, 1], want[0, 0, 1, 3], want[0, 0, 3, 1], want[0, 0, 3, 3] = 1, 2, 3, 4
    module = check_model(model, {"v": v, "i": i}, expected={"y": want})
    assert op_of(module, "nn.max_unpool").results[0].type.shape == (1, 1, 5, 5)


# -- diagnostics ---------------------------------------------------------------------------


def test_gather_elements_rank_mismatch_is_an_error():
    model = node_model("GatherElements", {"x": data(3, 4), "i": np.zeros((3,), np.int64)},
                       ["y"], axis=0)
    with pytest.raises(PirError, match=r"indices must have rank 2"):
        import_model(model)


def test_gather_axis_out_of_range_is_an_error():
    model = node_model("Gather", {"x": data(3, 4), "i": np.zeros((2,), np.int64)}, ["y"], axis=2)
    with pytest.raises(PirError, match=r"axis 2 is out of range for rank 2"):
        import_model(model)


def test_gather_index_out_of_range_fails_at_run_time():
    from pir.runtimes.reference import run_function

    x, idx = data(3, 4), np.array([0, 3], np.int64)
    module = import_model(node_model("Gather", {"x": x, "i": idx}, ["y"], axis=0))
    with pytest.raises(PirError, match=r"nn.gather.*index 3 is out of range"):
        run_function(module, {"x": x, "i": idx})


def test_scatter_nd_updates_shape_is_checked():
    x, idx, upd = data(4, 4), np.array([[1], [2]], np.int64), data(2, 3)
    model = node_model("ScatterND", {"x": x, "i": idx, "u": upd}, ["y"], opset=18)
    with pytest.raises(PirError, match=r"updates tensor<2x3xf32> must have shape"):
        import_model(model)


def test_scatter_elements_bad_reduction_is_an_error():
    x, idx, upd = data(3), np.array([0], np.int64), data(1)
    model = node_model("ScatterElements", {"x": x, "i": idx, "u": upd}, ["y"], opset=18,
                       reduction="mean")
    with pytest.raises(PirError, match=r"reduction must be one of .* got 'mean'"):
        import_model(model)


def test_tensor_scatter_on_the_batch_axis_is_an_error():
    model = node_model("TensorScatter", {"c": data(4, 3), "u": data(2, 3)}, ["y"], opset=24,
                       axis=0)
    with pytest.raises(PirError, match=r"axis cannot be 0"):
        import_model(model)
