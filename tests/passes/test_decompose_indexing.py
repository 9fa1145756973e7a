"""The gather/scatter decompositions (gather, gather_elements, gather_nd, scatter_elements,
scatter_nd, tensor_scatter, max_unpool, compress, reverse_sequence) preserve values.

Each case builds a one-node ONNX model, imports it, runs ``decompose`` and checks that the
reference runtime gives the same outputs before and after, with negative indices both as
constants and as run-time inputs, and that no nn op is left.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_pipeline, node_model, op_names

from pir.frontends.onnx.importer import import_model

I64, I32 = np.int64, np.int32
rng = np.random.default_rng(1)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def nn_ops(module) -> list[str]:
    return [n for n in op_names(module) if n.startswith("nn.")]


def decomposed(op_type, feeds, shapes=None, initializers=None, outputs=("out",), opset=21,
               **attrs):
    """Check decompose on a one-node model for each feed dict; assert no nn op is left."""
    model = node_model(op_type, feeds[0], list(outputs), shapes=shapes,
                       initializers=initializers, opset=opset, **attrs)
    module = import_model(model)
    for f in feeds:
        optimized = check_pipeline(module, f, "decompose")
    assert not nn_ops(optimized), f"{op_type}: nn ops left: {nn_ops(optimized)}"
    return optimized


# -- gather --------------------------------------------------------------------------------------

IDX = np.array([[0, -1], [2, -3]], I64)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("where", ["constant", "input"])
def test_gather(axis, where):
    x = randn(3, 4, 5)
    if where == "constant":
        decomposed("Gather", [{"x": x}], initializers={"i": IDX}, axis=axis)
    else:
        decomposed("Gather", [{"x": x, "i": IDX.astype(I32)}], axis=axis)


def test_gather_scalar_index():
    decomposed("Gather", [{"x": randn(3, 4)}], initializers={"i": np.array(-2, I64)}, axis=1)


def test_gather_symbolic_dims():
    feeds = [{"x": randn(2, 4), "i": np.array([3, -1, 0], I64)},
             {"x": randn(5, 4), "i": np.array([-4, 1, 0], I64)}]
    decomposed("Gather", feeds, shapes={"x": ["B", 4], "i": ["N"]}, axis=1)


def test_gather_runtime_indices_into_symbolic_dim():
    """A negative index into a symbolic dim S needs S at run time: the sum of ones broadcast
    to (S,)."""
    feeds = [{"x": randn(6, 3), "i": np.array([-1, 2], I64)},
             {"x": randn(4, 3), "i": np.array([0, -4], I64)}]
    out = decomposed("Gather", feeds, shapes={"x": ["S", 3]}, axis=0)
    assert "prim.reduce_sum" in op_names(out)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis):
    x = randn(3, 4, 5)
    shape = [3, 4, 5]
    shape[axis] = 2  # fewer indices than the axis holds
    idx = rng.integers(-x.shape[axis], x.shape[axis], size=shape)
    decomposed("GatherElements", [{"x": x, "i": idx}], axis=axis)


def test_gather_elements_symbolic_indices():
    x = randn(4, 3)
    feeds = [{"x": x, "i": rng.integers(-4, 4, size=(n, 3))} for n in (2, 5)]
    decomposed("GatherElements", feeds, shapes={"i": ["N", 3]}, axis=0)


@pytest.mark.parametrize("data,indices,batch_dims", [
    ((4, 5), [[0, -1], [3, 2], [-4, 0]], 0),
    ((4, 5, 2), [[1], [-1]], 0),
    ((2, 3, 4), [[[1, 2]], [[0, -1]]], 1),
    ((2, 3, 4), [[[1], [-2], [3]], [[0], [3], [-1]]], 2),
])
def test_gather_nd(data, indices, batch_dims):
    decomposed("GatherND", [{"x": randn(*data), "i": np.array(indices, I64)}],
               batch_dims=batch_dims)


def test_gather_nd_symbolic_indices():
    feeds = [{"x": randn(4, 5, 3), "i": rng.integers(-4, 4, size=(n, 2))} for n in (1, 6)]
    decomposed("GatherND", feeds, shapes={"i": ["N", 2]})


# -- scatter -------------------------------------------------------------------------------------


def unique_positions(n, count, size=None):
    """``count`` distinct positions in [0, n), half of them counted from the end."""
    picks = rng.permutation(n)[:count]
    picks = np.where(np.arange(count) % 2 == 1, picks - n, picks)
    return picks.reshape(size or (count,)).astype(I64)


@pytest.mark.parametrize("reduction", ["none", "add"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(reduction, axis):
    data = randn(4, 5, 3)
    n = data.shape[axis]
    # a random permutation along the axis, cut to 2: distinct positions in every column, as
    # reduction "none" needs; every other one counted from the end
    idx = np.take(np.argsort(rng.random(data.shape), axis=axis), [0, 1], axis=axis)
    idx = np.where(rng.random(idx.shape) < 0.5, idx - n, idx).astype(I64)
    feeds = {"x": data, "i": idx, "u": randn(*idx.shape)}
    decomposed("ScatterElements", [feeds], axis=axis, reduction=reduction)


def test_scatter_elements_add_repeats_accumulate():
    feeds = {"x": randn(5), "i": np.array([1, 1, -4, 3], I64), "u": randn(4)}
    decomposed("ScatterElements", [feeds], reduction="add")


@pytest.mark.parametrize("reduction", ["none", "add"])
@pytest.mark.parametrize("data,k", [((6, 3), 1), ((4, 5, 2), 2), ((3, 4), 2)])
def test_scatter_nd(reduction, data, k):
    x = randn(*data)
    n = 3
    flat = unique_positions(int(np.prod(data[:k])), n)
    idx = np.stack(np.unravel_index(np.where(flat < 0, flat + np.prod(data[:k]), flat),
                                    data[:k]), axis=-1).astype(I64)
    idx[::2] -= np.array(data[:k])  # negative components for every other tuple
    feeds = {"x": x, "i": idx, "u": randn(n, *data[k:])}
    decomposed("ScatterND", [feeds], reduction=reduction)


@pytest.mark.parametrize("mode,starts", [("linear", [0, 2]), ("circular", [3, 1]),
                                         ("linear", None)])
def test_tensor_scatter(mode, starts):
    feeds = {"cache": randn(2, 3, 5, 4), "update": randn(2, 3, 3, 4)}
    if starts is not None:
        feeds["starts"] = np.array(starts, I64)
    decomposed("TensorScatter", [feeds], opset=24, mode=mode, axis=-2)


@pytest.mark.parametrize("with_shape", [False, True])
def test_max_unpool(with_shape):
    x = randn(1, 2, 2, 2)
    # positions of the maxima of 2x2 windows in a 4x4 input, flattened over N, C, H, W
    rows, cols = np.meshgrid(np.arange(2), np.arange(2), indexing="ij")
    inner = (rows * 2 + rng.integers(0, 2, (2, 2))) * 4 + cols * 2 + rng.integers(0, 2, (2, 2))
    idx = np.stack([inner, inner + 16])[None].astype(I64)
    inits = {"shape": np.array([1, 2, 5, 6], I64)} if with_shape else None
    decomposed("MaxUnpool", [{"x": x, "i": idx}], initializers=inits, kernel_shape=[2, 2],
               strides=[2, 2], opset=22)


def test_max_unpool_overlapping_windows_repeat_an_index():
    """Overlapping windows can pick one maximum twice; the stored value is that maximum."""
    x = np.array([[[3.0, 3.0, 5.0]]], np.float32)
    idx = np.array([[[1, 1, 3]]], I64)
    decomposed("MaxUnpool", [{"x": x, "i": idx}], kernel_shape=[2], strides=[1], opset=22)


# -- other reads at computed positions -----------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress(axis):
    cond = np.array([True, False, True], bool)  # shorter than the axis is allowed
    attrs = {"axis": axis} if axis is not None else {}
    decomposed("Compress", [{"x": randn(3, 4)}], initializers={"c": cond}, **attrs)


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis, time_axis):
    shape = [4, 4, 2]
    shape[batch_axis] = 3
    lens = np.array([4, 0, 2], I64)
    decomposed("ReverseSequence", [{"x": randn(*shape), "lens": lens}],
               batch_axis=batch_axis, time_axis=time_axis)
