"""Convolutions: Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv, CausalConvWithState,
imported from one-node ONNX models and checked against ONNX Runtime (or, for ops it lacks,
ONNX's own reference implementation)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_model, node_model
from onnx.reference import ReferenceEvaluator

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model

RNG = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def reference(model, feeds) -> dict[str, np.ndarray]:
    """ONNX's reference implementation's outputs, for what ONNX Runtime lacks."""
    names = [o.name for o in model.graph.output]
    return dict(zip(names, ReferenceEvaluator(model).run(None, feeds)))


def out_shape(module) -> tuple:
    """The declared shape of the function's (first) result."""
    fn = module.funcs[0]
    return fn.return_op.operands[0].type.shape


# -- Conv ----------------------------------------------------------------------------------

CONV_CASES = [  # (x shape, w shape, attributes)
    ((1, 3, 9), (4, 3, 3), {}),
    ((2, 3, 8, 8), (5, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 4, 9, 7), (6, 2, 3, 2), {"group": 2, "strides": [2, 1], "pads": [1, 0, 2, 1]}),
    ((1, 6, 8, 8), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}),  # depthwise
    ((1, 2, 10, 10), (3, 2, 3, 3), {"dilations": [2, 3], "strides": [2, 2]}),
    ((1, 2, 7, 8), (3, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 2, 7, 8), (3, 2, 4, 4), {"auto_pad": "SAME_LOWER", "strides": [2, 3]}),
    ((1, 2, 7, 8), (3, 2, 3, 2), {"auto_pad": "VALID", "strides": [2, 2]}),
    ((1, 2, 5, 6, 4), (4, 2, 3, 3, 2), {"pads": [1, 0, 1, 1, 0, 0], "strides": [1, 2, 1]}),
    ((2, 8, 6, 6), (4, 8, 1, 1), {}),  # 1x1
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv(x_shape, w_shape, attrs, bias):
    x, w = randn(*x_shape), randn(*w_shape)
    inits = {"w": w}
    if bias:
        inits["b"] = randn(w_shape[0])
    model = node_model("Conv", {"x": x}, ["y"], initializers=inits, **attrs)
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_conv_dtypes(dtype):
    x, w = randn(1, 2, 6, 6, dtype=dtype), randn(3, 2, 3, 3, dtype=dtype)
    model = node_model("Conv", {"x": x, "w": w}, ["y"], pads=[1, 1, 1, 1])
    feeds = {"x": x, "w": w}
    if dtype == np.float16:
        check_model(model, feeds, rtol=1e-2, atol=1e-2)
    else:  # ONNX Runtime has no f64 Conv
        check_model(model, feeds, rtol=1e-12, atol=1e-12, expected=reference(model, feeds))


def test_conv_symbolic_dims_give_unknown_spatial_sizes():
    import onnx
    from onnx import helper

    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["B", 3, "H", 8])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    w = onnx.numpy_helper.from_array(randn(4, 3, 3, 3), "w")
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], [w]),
                              opset_imports=[helper.make_opsetid("", 21)])
    module = import_model(model)
    shape = out_shape(module)
    assert shape[0] == "B" and shape[1] == 4 and shape[3] == 8
    feeds = {"x": randn(2, 3, 5, 8)}
    from pir.runtimes.reference import run_function
    assert run_function(module, feeds)["y"].shape == (2, 4, 5, 8)


# -- ConvTranspose -------------------------------------------------------------------------

CONV_TRANSPOSE_CASES = [  # (x shape, w shape, attributes)
    ((1, 2, 5), (2, 3, 3), {}),
    ((1, 2, 4, 4), (2, 3, 3, 3), {"strides": [2, 2]}),
    ((1, 2, 4, 5), (2, 3, 3, 3), {"strides": [2, 3], "pads": [1, 0, 1, 2]}),
    ((1, 2, 4, 4), (2, 3, 3, 3), {"strides": [2, 2], "output_padding": [1, 1]}),
    ((1, 2, 4, 4), (2, 3, 3, 3), {"strides": [2, 2], "dilations": [2, 1]}),
    ((1, 4, 3, 3), (4, 2, 3, 3), {"group": 2, "strides": [2, 2]}),
    ((1, 6, 4, 4), (6, 1, 2, 2), {"group": 6, "strides": [2, 2]}),  # depthwise upsampling
    ((1, 2, 3, 3), (2, 2, 3, 3), {"strides": [2, 2], "output_shape": [7, 8]}),
    ((1, 2, 3, 4), (2, 2, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 1, 3, 3, 2), (1, 2, 2, 3, 2), {"strides": [1, 2, 2]}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_TRANSPOSE_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose(x_shape, w_shape, attrs, bias):
    x, w = randn(*x_shape), randn(*w_shape)
    inits = {"w": w}
    if bias:
        inits["b"] = randn(w_shape[1] * attrs.get("group", 1))
    model = node_model("ConvTranspose", {"x": x}, ["y"], initializers=inits, **attrs)
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-5)


def test_conv_transpose_same_lower_matches_onnx_spec():
    # ONNX's spec puts the extra pad of SAME_LOWER at the beginning.
    x, w = randn(1, 1, 3, 3), randn(1, 1, 3, 3)
    model = node_model("ConvTranspose", {"x": x}, ["y"], initializers={"w": w},
                       strides=[2, 2], auto_pad="SAME_LOWER")
    check_model(model, {"x": x}, rtol=1e-5, expected=reference(model, {"x": x}))


# -- ConvInteger and QLinearConv -----------------------------------------------------------

@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 1, 1, 1], "strides": [2, 2]},
                                   {"group": 2, "auto_pad": "SAME_UPPER"}])
def test_conv_integer(attrs):
    x = RNG.integers(0, 255, (1, 2, 6, 6), dtype=np.uint8)
    w = RNG.integers(0, 255, (4, 2 // attrs.get("group", 1), 3, 3), dtype=np.uint8)
    inits = {"w": w, "x_zero_point": np.array(128, np.uint8), "w_zero_point": np.array(3, np.uint8)}
    model = node_model("ConvInteger", {"x": x}, ["y"], initializers=inits, **attrs)
    check_model(model, {"x": x})


def test_conv_integer_without_zero_points():
    x = RNG.integers(0, 20, (1, 1, 5, 5), dtype=np.uint8)
    w = RNG.integers(0, 20, (2, 1, 2, 2), dtype=np.uint8)
    check_model(node_model("ConvInteger", {"x": x, "w": w}, ["y"]), {"x": x, "w": w})


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_q_linear_conv(per_channel, bias):
    x = RNG.integers(0, 255, (1, 3, 7, 7), dtype=np.uint8)
    # ONNX Runtime's u8 x s8 kernels on CPUs without AVX-512 VNNI add pairs of products in
    # 16 bits with saturation (vpmaddubsw): 255 * 100 * 2 overflows, so its result is off by
    # a few units there.  Weights under 64 keep every pair exact, and ORT a true reference.
    w = RNG.integers(-63, 64, (4, 3, 3, 3), dtype=np.int8)
    inits = {
        "x_scale": np.array(0.02, np.float32), "x_zero_point": np.array(120, np.uint8),
        "w": w,
        "w_scale": (np.array([0.01, 0.02, 0.015, 0.03], np.float32) if per_channel
                    else np.array(0.02, np.float32)),
        "w_zero_point": np.zeros(4, np.int8) if per_channel else np.array(0, np.int8),
        "y_scale": np.array(0.3, np.float32), "y_zero_point": np.array(100, np.uint8),
    }
    if bias:
        inits["b"] = RNG.integers(-500, 500, 4).astype(np.int32)
    # x is a graph input, so the initializers follow it in QLinearConv's input order.
    model = node_model("QLinearConv", {"x": x}, ["y"], initializers=inits, pads=[1, 1, 1, 1])
    check_model(model, {"x": x}, atol=1)


# -- DeformConv ----------------------------------------------------------------------------

@pytest.mark.parametrize("mask,groups", [(False, (1, 1)), (True, (1, 2)), (True, (2, 1))])
def test_deform_conv(mask, groups):
    group, offset_group = groups
    x, w = randn(1, 4, 5, 5), randn(2, 4 // group, 2, 2)
    out = 5  # 5 + 1 + 0 - 2 + 1 with pads (1, 1, 0, 0)
    inputs = {"x": x, "w": w,
              "offset": randn(1, offset_group * 2 * 4, out, out)}
    inputs["b"] = randn(2)
    if mask:
        inputs["mask"] = RNG.uniform(0, 1, (1, offset_group * 4, out, out)).astype(np.float32)
    model = node_model("DeformConv", inputs, ["y"], opset=22, pads=[1, 1, 0, 0], group=group,
                       offset_group=offset_group)
    check_model(model, inputs, rtol=1e-4, atol=1e-5)


# -- CausalConvWithState (newer than ONNX Runtime: compared with ONNX's reference) ------------

@pytest.mark.parametrize("length,k,past,bias,activation", [
    (6, 4, False, False, "none"), (6, 3, True, True, "silu"), (1, 4, True, False, "swish"),
    (2, 4, False, True, "none"), (5, 1, False, False, "none")])
def test_causal_conv_with_state(length, k, past, bias, activation):
    inputs = {"input": randn(2, 3, length), "weight": randn(3, 1, k)}
    names = ["input", "weight", "bias" if bias else "", "past_state" if past else ""]
    if bias:
        inputs["bias"] = randn(3)
    if past:
        inputs["past_state"] = randn(2, 3, k - 1)
    import onnx
    from onnx import helper
    node = helper.make_node("CausalConvWithState", names, ["output", "present_state"],
                            activation=activation)
    vi = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, a.shape)
          for n, a in inputs.items()]
    outs = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None)
            for n in ("output", "present_state")]
    model = helper.make_model(helper.make_graph([node], "g", vi, outs),
                              opset_imports=[helper.make_opsetid("", 27)])
    module = check_model(model, inputs, expected=reference(model, inputs))
    assert module.funcs[0].return_op.operands[1].type.shape == (2, 3, k - 1)


# -- errors --------------------------------------------------------------------------------

def test_conv_channel_mismatch_is_an_error():
    x, w = randn(1, 3, 5, 5), randn(4, 2, 3, 3)
    model = node_model("Conv", {"x": x, "w": w}, ["y"])
    with pytest.raises(PirError, match="the input has 3 channels, but the weight"):
        import_model(model)


def test_conv_weight_rank_is_checked():
    x, w = randn(1, 3, 5, 5), randn(4, 3, 3)
    model = node_model("Conv", {"x": x, "w": w}, ["y"], kernel_shape=[3, 3])
    with pytest.raises(PirError, match="must have the input's rank 4"):
        import_model(model)


def test_conv_kernel_larger_than_input_is_an_error():
    x, w = randn(1, 1, 2, 2), randn(1, 1, 3, 3)
    model = node_model("Conv", {"x": x, "w": w}, ["y"])
    with pytest.raises(PirError, match="too small for a window of 3"):
        import_model(model)


def test_deform_conv_offset_size_must_match_the_output():
    inputs = {"x": randn(1, 1, 5, 5), "w": randn(1, 1, 2, 2), "offset": randn(1, 8, 3, 3)}
    model = node_model("DeformConv", inputs, ["y"], opset=22)
    with pytest.raises(PirError, match=r"offset .* has spatial dims \(3, 3\), but the output"):
        import_model(model)


def test_conv_strides_length_is_checked():
    x, w = randn(1, 1, 5, 5), randn(1, 1, 3, 3)
    model = node_model("Conv", {"x": x, "w": w}, ["y"], strides=[1, 1, 1])
    with pytest.raises(PirError, match="'strides' has 3 values, expected 2"):
        import_model(model)
