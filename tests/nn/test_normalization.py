"""Softmax and relatives, normalisations and losses: import, round trip, run, and compare with
ONNX Runtime; type rules and their diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_model, node_model

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.core import OPS
from pir.ir.dialects.func import FuncOp
from pir.ir.types import DType, TensorType

rng = np.random.default_rng(1)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def op_of(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return next(o for o in fn.walk() if o.name == name)


# -- softmax family -------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_family(op_type, axis):
    x = randn(2, 3, 4) * 10
    x[0, 0, :2] = 5.0  # a tie: Hardmax picks the first
    check_model(node_model(op_type, {"x": x}, ["y"], axis=axis), {"x": x})


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax", "Hardmax"])
def test_softmax_family_of_opset_11_over_the_last_axis(op_type):
    x = randn(3, 5)
    module = check_model(node_model(op_type, {"x": x}, ["y"], opset=11), {"x": x})
    assert "axis" not in op_of(module, "nn." + _snake(op_type)).attributes  # newest default


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax", "Hardmax"])
def test_softmax_family_of_opset_11_coerces_to_2d(op_type):
    if not all(f"nn.{n}" in OPS for n in ("flatten", "reshape", "shape")):
        pytest.skip("needs nn.flatten and nn.reshape (the shape family)")
    x = randn(2, 3, 4)
    check_model(node_model(op_type, {"x": x}, ["y"], opset=11, axis=1), {"x": x})


def _snake(op_type):
    return {"Softmax": "softmax", "LogSoftmax": "log_softmax", "Hardmax": "hardmax"}[op_type]


# -- normalisations -------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_norm(axis, with_bias):
    x = randn(2, 3, 4)
    norm_shape = x.shape[axis:] if axis >= 0 else x.shape[axis:]
    inits = {"scale": randn(*norm_shape)}
    if with_bias:
        inits["bias"] = randn(*norm_shape)
    model = node_model("LayerNormalization", {"x": x}, ["y"], opset=17, initializers=inits,
                       axis=axis, epsilon=1e-3)
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5)


def test_layer_norm_mean_and_inv_std_dev_outputs():
    x = randn(3, 4, 5).astype(np.float16)
    model = node_model("LayerNormalization", {"x": x}, ["y", "mean", "inv_std"], opset=17,
                       initializers={"scale": randn(5).astype(np.float16)})
    module = check_model(model, {"x": x}, rtol=2e-3, atol=2e-3)
    op = op_of(module, "nn.layer_norm")
    assert [r.type for r in op.stats] == [TensorType(DType.F32, (3, 4, 1))] * 2  # stash_type


@pytest.mark.parametrize("axis", [1, -1])
def test_rms_norm(axis):
    x = randn(2, 3, 4)
    model = node_model("RMSNormalization", {"x": x}, ["y"], opset=23,
                       initializers={"scale": randn(*x.shape[axis:])}, axis=axis)
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5)


def _bn_params(c):
    return {"scale": randn(c), "b": randn(c), "mean": randn(c),
            "var": rng.uniform(0.5, 2.0, c).astype(np.float32)}


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (2, 3, 4, 5)])
def test_batch_norm_inference(shape):
    x = randn(*shape)
    model = node_model("BatchNormalization", {"x": x}, ["y"], opset=15,
                       initializers=_bn_params(shape[1]), epsilon=1e-3)
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", [7, 9])
def test_batch_norm_of_old_opsets(opset):
    x = randn(2, 3, 4)
    model = node_model("BatchNormalization", {"x": x}, ["y"], opset=opset,
                       initializers=_bn_params(3))
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5)


def test_batch_norm_training_mode_gives_running_statistics():
    x, p = randn(4, 3, 5), _bn_params(3)
    model = node_model("BatchNormalization", {"x": x}, ["y", "rm", "rv"], opset=15,
                       initializers=p, training_mode=1, momentum=0.8)
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    c = (slice(None), None)
    y = (x - mean[c]) / np.sqrt(var[c] + 1e-5) * p["scale"][c] + p["b"][c]
    want = {"y": y, "rm": p["mean"] * 0.8 + mean * 0.2, "rv": p["var"] * 0.8 + var * 0.2}
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5,
                expected={k: v.astype(np.float32) for k, v in want.items()})


def test_instance_norm():
    x = randn(2, 3, 4, 5)
    model = node_model("InstanceNormalization", {"x": x}, ["y"],
                       initializers={"scale": randn(3), "b": randn(3)}, epsilon=1e-2)
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5)


def _group_norm(x, groups, scale, bias, epsilon=1e-5):
    """GroupNormalization-21 in numpy (ONNX Runtime has no kernel for it)."""
    g = x.reshape(x.shape[0], groups, -1)
    normed = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + epsilon))
    c = (slice(None),) + (None,) * (x.ndim - 2)
    return (normed.reshape(x.shape) * scale[c] + bias[c]).astype(x.dtype)


@pytest.mark.parametrize("groups,shape", [(1, (2, 4, 3, 3)), (2, (2, 4, 5)), (4, (3, 4, 2))])
def test_group_norm(groups, shape):
    x, scale, bias = randn(*shape), randn(4), randn(4)
    model = node_model("GroupNormalization", {"x": x}, ["y"], opset=21,
                       initializers={"scale": scale, "bias": bias}, num_groups=groups,
                       epsilon=1e-3)
    want = _group_norm(x, groups, scale, bias, 1e-3)
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5, expected={"y": want})


def test_group_norm_of_opset_18_has_per_group_parameters():
    x, scale, bias = randn(2, 4, 3), randn(2), randn(2)
    model = node_model("GroupNormalization", {"x": x}, ["y"], opset=18,
                       initializers={"scale": scale, "bias": bias}, num_groups=2)
    want = _group_norm(x, 2, np.repeat(scale, 2), np.repeat(bias, 2))
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5, expected={"y": want})


@pytest.mark.parametrize("axis,p", [(-1, 2), (0, 1), (1, 2)])
def test_lp_normalization(axis, p):
    x = randn(3, 4)
    check_model(node_model("LpNormalization", {"x": x}, ["y"], axis=axis, p=p), {"x": x})


@pytest.mark.parametrize("axes", [None, [1], [0, 2, 3], [-1]])
def test_mean_variance_normalization(axes):
    x = randn(2, 3, 4, 5)
    attrs = {} if axes is None else {"axes": axes}
    model = node_model("MeanVarianceNormalization", {"x": x}, ["y"], **attrs)
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("size", [1, 3, 5])
def test_lrn(size):
    x = randn(2, 6, 3, 3)
    model = node_model("LRN", {"x": x}, ["y"], size=size, alpha=1e-2, beta=0.6, bias=1.5)
    check_model(model, {"x": x}, rtol=1e-5, atol=1e-6)


def test_lrn_of_even_size_has_a_window_leaning_forward():
    # ONNX allows an even size (ONNX Runtime does not): the window is [c - 1, c + 2] for 4.
    x = randn(1, 5, 2)
    model = node_model("LRN", {"x": x}, ["y"], size=4, alpha=0.5, beta=0.75, bias=1.0)
    sq = np.pad(x * x, [(0, 0), (1, 2), (0, 0)])
    window = sum(sq[:, i:i + 5] for i in range(4))
    want = (x / (1.0 + 0.5 / 4 * window) ** 0.75).astype(np.float32)
    check_model(model, {"x": x}, rtol=1e-5, atol=1e-6, expected={"y": want})


# -- losses ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [None, 1, -3])
@pytest.mark.parametrize("op_type", ["SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"])
def test_losses(op_type, reduction, weighted, ignore_index):
    x, labels = randn(3, 4, 2), rng.integers(0, 4, (3, 2)).astype(np.int64)
    labels[0, 0] = ignore_index if ignore_index is not None else 0  # -3 is out of range: ignored
    inits = {"w": rng.uniform(0.5, 1.5, 4).astype(np.float32)} if weighted else {}
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    model = node_model(op_type, {"x": x, "labels": labels}, ["loss"], opset=13,
                       initializers=inits, **attrs)
    module = check_model(model, {"x": x, "labels": labels}, rtol=1e-5, atol=1e-6)
    loss = module.body.block.ops[0].return_op.operands[0]
    assert loss.type.shape == ((3, 2) if reduction == "none" else ())


def test_softmax_cross_entropy_log_prob_output():
    x, labels = randn(2, 5), np.array([4, 0], np.int32)
    model = node_model("SoftmaxCrossEntropyLoss", {"x": x, "labels": labels},
                       ["loss", "log_prob"], opset=13)
    module = check_model(model, {"x": x, "labels": labels})
    assert op_of(module, "nn.softmax_cross_entropy_loss").log_prob.type.shape == (2, 5)


# -- diagnostics ----------------------------------------------------------------------------------


def test_layer_norm_scale_of_the_wrong_size_is_an_error():
    x = randn(2, 3, 4)
    model = node_model("LayerNormalization", {"x": x}, ["y"], opset=17,
                       initializers={"scale": randn(5)})
    with pytest.raises(PirError, match="dims 4 and 5 do not broadcast"):
        import_model(model)


def test_group_norm_groups_must_divide_channels():
    x = randn(2, 6, 3)
    model = node_model("GroupNormalization", {"x": x}, ["y"], opset=21,
                       initializers={"scale": randn(6), "bias": randn(6)}, num_groups=4)
    with pytest.raises(PirError, match="6 channels do not split into 4 groups"):
        import_model(model)


def test_loss_target_of_the_wrong_rank_is_an_error():
    x, target = randn(3, 4, 2), np.zeros((3,), np.int64)
    model = node_model("NegativeLogLikelihoodLoss", {"x": x, "t": target}, ["loss"], opset=13)
    with pytest.raises(PirError, match="the target must have rank 2"):
        import_model(model)


def test_batch_norm_parameter_per_channel_is_checked():
    x = randn(2, 3, 4)
    params = _bn_params(3)
    params["scale"] = randn(4)
    model = node_model("BatchNormalization", {"x": x}, ["y"], opset=15, initializers=params)
    with pytest.raises(PirError, match="scale has 4 values for 3 channels"):
        import_model(model)


def test_lp_normalization_p_must_be_1_or_2():
    x = randn(2, 3)
    with pytest.raises(PirError, match="p must be 1 or 2, got 3"):
        import_model(node_model("LpNormalization", {"x": x}, ["y"], p=3))


# -- long rows: sums accumulated in f64 ---------------------------------------------------------

def _confident_rows(n: int = 100_000) -> np.ndarray:
    """Rows of logits with one confident class: every other exp(x - max) is ~5e-8, under
    half an ulp of the 1.0 of the confident class, so a sequential f32 denominator drops
    them all (0.5% of the sum here)."""
    x = np.random.default_rng(3).uniform(-5.2, -4.8, (2, n)).astype(np.float32)
    x[:, 0] = 12.0
    return x


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [0, 1])
def test_softmax_family_over_long_axes(op_type, axis):
    x = _confident_rows()
    x = np.ascontiguousarray(x.T) if axis == 0 else x
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(axis, keepdims=True)
    log_sum = np.log(np.exp(shifted).sum(axis, keepdims=True))
    want = np.exp(shifted - log_sum) if op_type == "Softmax" else shifted - log_sum
    model = node_model(op_type, {"x": x}, ["y"], axis=axis)
    check_model(model, {"x": x}, rtol=0, atol=2e-7 * np.abs(want).max(),
                expected={"y": want.astype(np.float32)})


def test_layer_norm_and_rms_norm_of_long_rows():
    # rows of 1.0 and 3e-8s, whose mean one sequential f32 accumulator gets 3e-3 wrong (numpy's
    # pairwise sum along the row got it right here: this guards the f64 statistics)
    x = np.full((2, 100_000), 3e-8, np.float32)
    x[:, 0] = 1.0
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(1, keepdims=True)
    layer = centred / np.sqrt((centred * centred).mean(1, keepdims=True) + 1e-5)
    rms = x64 / np.sqrt((x64 * x64).mean(1, keepdims=True) + 1e-5)
    model = node_model("LayerNormalization", {"x": x}, ["y"], opset=17, axis=-1, epsilon=1e-5,
                       initializers={"s": np.ones(100_000, np.float32)})
    check_model(model, {"x": x}, rtol=1e-5, atol=1e-6, expected={"y": layer.astype(np.float32)})
    model = node_model("RMSNormalization", {"x": x}, ["y"], opset=23, axis=-1, epsilon=1e-5,
                       initializers={"s": np.ones(100_000, np.float32)})
    check_model(model, {"x": x}, rtol=1e-6, atol=1e-7, expected={"y": rms.astype(np.float32)})
