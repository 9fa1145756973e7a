"""Decomposition of the softmax family, normalisations and losses into prim ops: the reference
runtime gives the same results before and after `decompose` on random inputs of several shapes
(symbolic batch, sequence and spatial dims included), and no nn op is left."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_pipeline, node_model, op_names

from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module
from pir.ir.types import DType
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline

rng = np.random.default_rng(11)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def decomposes_fully(model, feeds_list, rtol=1e-5, atol=1e-6):
    """Import ``model``; for each feed dict, check `decompose` keeps the results; assert that
    only prim and builtin ops remain.  Returns the last decomposed module."""
    module = import_model(model)
    for feeds in feeds_list:
        out = check_pipeline(module, feeds, "decompose", rtol=rtol, atol=atol)
        left = [n for n in op_names(out) if n.startswith("nn.")]
        assert not left, f"not decomposed: {left}"
    return out


# -- softmax family -------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_family_with_symbolic_dims(op_type, axis):
    x = randn(2, 3, 4) * 10
    x[0, 0, :2] = 5.0  # a tie: Hardmax marks the first
    model = node_model(op_type, {"x": x}, ["y"], axis=axis, shapes={"x": ["B", 3, "S"]})
    out = decomposes_fully(model, [{"x": x}, {"x": randn(5, 3, 1)}, {"x": randn(1, 3, 9) * 50}])
    assert "prim.reduce_max" in op_names(out) or "prim.argmax" in op_names(out)


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
def test_softmax_is_stable_for_large_inputs(op_type):
    x = np.array([[1e4, 1e4 + 1, -1e4], [-np.inf, 0.0, 1.0]], np.float32)
    decomposes_fully(node_model(op_type, {"x": x}, ["y"]), [{"x": x}])


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
def test_softmax_in_half_precision(op_type):
    x = randn(3, 16, dtype=np.float16)
    decomposes_fully(node_model(op_type, {"x": x}, ["y"]), [{"x": x}], rtol=1e-3, atol=1e-3)


# -- layer_norm, rms_norm -------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [2, 3, -1])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_norm_over_static_axes_of_a_symbolic_batch_and_sequence(axis, with_bias):
    x = randn(2, 3, 4, 8)
    norm_shape = x.shape[axis:]
    inits = {"scale": randn(*norm_shape)}
    if with_bias:
        inits["bias"] = randn(*norm_shape)
    model = node_model("LayerNormalization", {"x": x}, ["y"], opset=17, initializers=inits,
                       axis=axis, epsilon=1e-3, shapes={"x": ["B", "S", 4, 8]})
    out = decomposes_fully(model, [{"x": x}, {"x": randn(1, 5, 4, 8)}], rtol=1e-4, atol=1e-5)
    assert "prim.rsqrt" in op_names(out)


def test_layer_norm_scale_of_static_size_against_a_symbolic_axis_stays(capsys):
    x = randn(2, 3, 4)
    model = node_model("LayerNormalization", {"x": x}, ["y"], opset=17, axis=1,
                       initializers={"scale": randn(3, 4)}, shapes={"x": ["B", "S", 4]})
    module = import_model(model)
    PassManager(parse_pipeline("decompose{explain=true}")).run(module)
    assert op_names(module) == ["builtin.constant", "nn.layer_norm", "func.return"]
    assert ("nn.layer_norm stays: a parameter of shape [3, 4] is not known to broadcast to "
            "['B', 'S', 4]") in capsys.readouterr().err


def test_layer_norm_over_a_symbolic_axis():
    x = randn(2, 6)
    model = node_model("LayerNormalization", {"x": x}, ["y"], opset=17,
                       initializers={"scale": randn(1)}, shapes={"x": [2, "S"]})
    decomposes_fully(model, [{"x": x}, {"x": randn(2, 3)}], rtol=1e-4, atol=1e-5)


def test_layer_norm_mean_and_inv_std_dev_results_in_stash_type():
    x = randn(3, 4, 16).astype(np.float16)
    model = node_model("LayerNormalization", {"x": x}, ["y", "mean", "inv_std"], opset=17,
                       initializers={"scale": randn(16).astype(np.float16)},
                       shapes={"x": ["B", 4, 16]})
    out = decomposes_fully(model, [{"x": x}], rtol=1e-3, atol=1e-3)
    ret = out.funcs[0].return_op
    assert [v.type.dtype for v in ret.operands] == [DType.F16, DType.F32, DType.F32]


@pytest.mark.parametrize("axis", [1, -1])
def test_rms_norm(axis):
    x = randn(2, 3, 8)
    model = node_model("RMSNormalization", {"x": x}, ["y"], opset=23, epsilon=1e-4,
                       initializers={"scale": randn(*x.shape[axis:])}, axis=axis,
                       shapes={"x": ["B", 3, 8]})
    decomposes_fully(model, [{"x": x}, {"x": randn(7, 3, 8)}], rtol=1e-4, atol=1e-5)


def test_rms_norm_of_half_precision_computes_in_f32():
    x = randn(4, 32).astype(np.float16)
    model = node_model("RMSNormalization", {"x": x}, ["y"], opset=23,
                       initializers={"scale": randn(32).astype(np.float16)})
    out = decomposes_fully(model, [{"x": x}], rtol=1e-3, atol=1e-3)
    assert op_names(out).count("prim.cast") >= 2  # in to f32, out to f16


# -- batch_norm, instance_norm, group_norm --------------------------------------------------------


def _bn_params(c):
    return {"scale": randn(c), "b": randn(c), "mean": randn(c),
            "var": rng.uniform(0.5, 2.0, c).astype(np.float32)}


@pytest.mark.parametrize("shape", [["N", 3], ["N", 3, "L"], ["N", 3, "H", "W"]])
def test_batch_norm_inference(shape):
    concrete = [2 if isinstance(d, str) else d for d in shape]
    x = randn(*concrete)
    model = node_model("BatchNormalization", {"x": x}, ["y"], opset=15,
                       initializers=_bn_params(3), epsilon=1e-3, shapes={"x": shape})
    other = randn(*[5 if isinstance(d, str) else d for d in shape])
    decomposes_fully(model, [{"x": x}, {"x": other}], rtol=1e-4, atol=1e-5)


def test_batch_norm_training_mode_with_running_statistics():
    x = randn(4, 3, 5)
    model = node_model("BatchNormalization", {"x": x}, ["y", "rm", "rv"], opset=15,
                       initializers=_bn_params(3), training_mode=1, momentum=0.8,
                       shapes={"x": ["N", 3, 5]})
    decomposes_fully(model, [{"x": x}, {"x": randn(2, 3, 5)}], rtol=1e-4, atol=1e-5)


def test_instance_norm_with_symbolic_spatial_dims():
    x = randn(2, 3, 4, 5)
    model = node_model("InstanceNormalization", {"x": x}, ["y"], epsilon=1e-2,
                       initializers={"scale": randn(3), "b": randn(3)},
                       shapes={"x": ["N", 3, "H", "W"]})
    decomposes_fully(model, [{"x": x}, {"x": randn(1, 3, 2, 7)}], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("groups,shape", [(1, ["N", 4, 3, 3]), (2, ["N", 4, "L"]), (4, [3, 4, 2])])
def test_group_norm(groups, shape):
    x = randn(*[2 if isinstance(d, str) else d for d in shape])
    model = node_model("GroupNormalization", {"x": x}, ["y"], opset=21, num_groups=groups,
                       initializers={"scale": randn(4), "bias": randn(4)}, epsilon=1e-3,
                       shapes={"x": shape})
    other = randn(*[3 if isinstance(d, str) else d for d in shape])
    decomposes_fully(model, [{"x": x}, {"x": other}], rtol=1e-4, atol=1e-5)


def test_group_norm_of_opset_18_has_per_group_parameters():
    x = randn(2, 4, 3)
    model = node_model("GroupNormalization", {"x": x}, ["y"], opset=18, num_groups=2,
                       initializers={"scale": randn(2), "bias": randn(2)})
    decomposes_fully(model, [{"x": x}], rtol=1e-4, atol=1e-5)


# -- lp_normalization, mean_variance_normalization, lrn -------------------------------------------


@pytest.mark.parametrize("axis,p", [(-1, 2), (0, 1), (1, 2), (1, 1)])
def test_lp_normalization(axis, p):
    x = randn(3, 4)
    x[1] = 0  # a zero vector (along axis 1) stays zero
    model = node_model("LpNormalization", {"x": x}, ["y"], axis=axis, p=p,
                       shapes={"x": ["B", 4]})
    decomposes_fully(model, [{"x": x}, {"x": randn(6, 4)}])


@pytest.mark.parametrize("axes", [None, [1], [0, 2, 3], [-1]])
def test_mean_variance_normalization(axes):
    x = randn(2, 3, 4, 5)
    attrs = {} if axes is None else {"axes": axes}
    model = node_model("MeanVarianceNormalization", {"x": x}, ["y"],
                       shapes={"x": ["N", 3, "H", 5]}, **attrs)
    decomposes_fully(model, [{"x": x}, {"x": randn(3, 3, 2, 5)}], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("size", [1, 3, 4, 5])
def test_lrn(size):
    x = randn(2, 6, 3, 3)
    model = node_model("LRN", {"x": x}, ["y"], size=size, alpha=1e-2, beta=0.6, bias=1.5,
                       shapes={"x": ["N", 6, "H", "W"]})
    out = decomposes_fully(model, [{"x": x}, {"x": randn(1, 6, 2, 5)}])
    assert op_names(out).count("prim.slice") == size


def test_lrn_with_a_symbolic_channel_dim_stays(capsys):
    x = randn(1, 5, 2)
    model = node_model("LRN", {"x": x}, ["y"], size=3, shapes={"x": [1, "C", 2]})
    module = import_model(model)
    PassManager(parse_pipeline("decompose{explain=true}")).run(module)
    assert op_names(module) == ["nn.lrn", "func.return"]
    assert "nn.lrn stays: the channel dim must be static" in capsys.readouterr().err


# -- losses ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [None, 1, -3])
@pytest.mark.parametrize("op_type", ["SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"])
def test_losses(op_type, reduction, weighted, ignore_index):
    def feeds(n, d):
        labels = rng.integers(0, 4, (n, d)).astype(np.int64)
        labels[0, 0] = ignore_index if ignore_index is not None else 0  # -3: out of range
        return {"x": randn(n, 4, d), "labels": labels}

    first = feeds(3, 2)
    inits = {"w": rng.uniform(0.5, 1.5, 4).astype(np.float32)} if weighted else {}
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    model = node_model(op_type, first, ["loss"], opset=13, initializers=inits,
                       shapes={"x": ["N", 4, "D"], "labels": ["N", "D"]}, **attrs)
    out = decomposes_fully(model, [first, feeds(5, 1)])
    assert ("prim.gather" in op_names(out)) == weighted


def test_softmax_cross_entropy_log_prob_result_with_i32_labels():
    x, labels = randn(2, 5), np.array([4, 0], np.int32)
    model = node_model("SoftmaxCrossEntropyLoss", {"x": x, "labels": labels},
                       ["loss", "log_prob"], opset=13)
    decomposes_fully(model, [{"x": x, "labels": labels}])


def test_a_result_declared_more_precisely_than_its_input_keeps_its_type():
    """Imported models may name a dim of a result (S) apart from the input's (unk__3): the
    decomposition restates the declared type with a reshape."""
    module = parse_module("""
module {
  func.func @main(%x: tensor<Bxunk__3x4xf32>, %g: tensor<4xf32>) -> (tensor<BxSx4xf32>) {
    %y = nn.layer_norm(%x, %g) : (tensor<Bxunk__3x4xf32>, tensor<4xf32>) -> tensor<BxSx4xf32>
    func.return(%y) : (tensor<BxSx4xf32>) -> ()
  }
}""")
    out = check_pipeline(module, {"x": randn(2, 3, 4), "g": randn(4)}, "decompose")
    y = out.funcs[0].return_op.operands[0]
    assert y.op.name == "prim.reshape" and str(y.type) == "tensor<BxSx4xf32>"
