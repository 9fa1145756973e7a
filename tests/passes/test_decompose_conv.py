"""The convolution and pooling decompositions preserve values.

Each case builds a one-node ONNX model, imports it, runs ``decompose`` and checks that the
reference runtime gives the same outputs before and after (rtol 1e-5) on random inputs of
several shapes (symbolic batch dims included), and that no nn op is left; the ops that stay
say why under ``decompose{explain}``.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import helpers
from helpers import node_model, op_names

from pir.frontends.onnx.importer import import_model
from pir.passes.decompose.registry import KEPT, load_rules
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline

F32 = np.float32


def normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def ints(*shape, dtype=np.uint8, seed=0):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, shape, endpoint=True,
                                                dtype=dtype)


def computed(module) -> list[str]:
    return [n for n in op_names(module) if n not in ("builtin.constant", "func.return")]


def decomposed(op_type, inputs, outputs=("y",), **kwargs):
    # A conv output is a sum of dozens of O(1) products summed in another order: where they
    # cancel, the rounding error is ~1e-6 absolute, so atol is scaled to the terms.
    return helpers.decomposed(op_type, inputs, outputs, atol=1e-5, **kwargs)


def explain(op_type, inputs, outputs=("y",), shapes=None, opset=21, **attrs) -> str:
    """What ``decompose{explain}`` says about a one-node model (the op stays)."""
    module = import_model(node_model(op_type, inputs, list(outputs), shapes=shapes,
                                     opset=opset, **attrs))
    load_rules()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        PassManager(parse_pipeline("decompose{explain}")).run(module)
    assert any(n.startswith("nn.") for n in op_names(module))
    return err.getvalue().strip()


# -- convolutions ------------------------------------------------------------------------------

CONV = [
    ("plain", (2, 4, 7, 7), (6, 4, 3, 3), {}, True),
    ("grouped-strided-dilated", (2, 4, 7, 7), (6, 2, 3, 3),
     {"group": 2, "pads": [1, 0, 2, 1], "strides": [2, 1], "dilations": [1, 2]}, True),
    ("depthwise", (1, 4, 6, 6), (4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}, True),
    ("same-upper", (2, 4, 7, 7), (6, 4, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
     False),
    ("same-lower-1d", (2, 4, 9), (6, 4, 4), {"auto_pad": "SAME_LOWER", "strides": [2]}, True),
    ("valid-3d", (1, 2, 5, 4, 6), (3, 2, 2, 2, 3), {"auto_pad": "VALID"}, True),
]


@pytest.mark.parametrize("name,x_shape,w_shape,attrs,bias", CONV, ids=[c[0] for c in CONV])
def test_conv(name, x_shape, w_shape, attrs, bias):
    feeds = {"x": normal(*x_shape), "w": normal(*w_shape, seed=1)}
    if bias:
        feeds["b"] = normal(w_shape[0], seed=2)
    out = decomposed("Conv", feeds, shapes={"x": ["N", *x_shape[1:]]}, **attrs)
    assert computed(out).count("prim.conv") == 1


CONV_TRANSPOSE = [
    ("plain", (2, 3, 4, 4), (3, 5, 3, 3), {}),
    ("grouped-output-padding", (2, 4, 5, 5), (4, 3, 3, 3),
     {"group": 2, "strides": [2, 2], "pads": [1, 0, 0, 1], "output_padding": [1, 1]}),
    ("output-shape-dilated", (2, 4, 5, 5), (4, 3, 3, 2),
     {"strides": [2, 3], "dilations": [2, 1], "output_shape": [10, 16]}),
    ("same-upper-1d", (1, 2, 5), (2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2]}),
    ("crop-more-than-kernel", (1, 2, 6), (2, 2, 2), {"strides": [3], "pads": [2, 3]}),
]


@pytest.mark.parametrize("name,x_shape,w_shape,attrs", CONV_TRANSPOSE,
                         ids=[c[0] for c in CONV_TRANSPOSE])
def test_conv_transpose(name, x_shape, w_shape, attrs):
    feeds = {"x": normal(*x_shape), "w": normal(*w_shape, seed=1),
             "b": normal(w_shape[1] * attrs.get("group", 1), seed=2)}
    out = decomposed("ConvTranspose", feeds, shapes={"x": ["N", *x_shape[1:]]}, **attrs)
    conv = next(op for fn in out.funcs for op in fn.walk() if op.name == "prim.conv")
    assert conv.lhs_dilation == tuple(attrs.get("strides", [1] * (len(x_shape) - 2)))


@pytest.mark.parametrize("x_shape,w_shape,strides", [
    ((2, 16, 5, 7), (16, 8, 2, 2), [2, 2]),   # a detector's 2x upsampling
    ((1, 4, 3, 6), (4, 1, 3, 2), [3, 2]),     # one output channel, unequal taps
])
def test_conv_transpose_by_its_stride_is_a_1x1_conv_then_depth_to_space(
        x_shape, w_shape, strides):
    """kernel == stride, no pads: each output takes one tap, so the dilated form's other
    taps (all zeros) are not computed: a 1x1 conv of O * s * t channels and a reshape."""
    feeds = {"x": normal(*x_shape), "w": normal(*w_shape, seed=1),
             "b": normal(w_shape[1], seed=2)}
    out = decomposed("ConvTranspose", feeds, shapes={"x": ["N", x_shape[1], "H", "W"]},
                     strides=strides)
    (conv,) = [op for fn in out.funcs for op in fn.walk() if op.name == "prim.conv"]
    assert not any(d != 1 for d in conv.lhs_dilation or ())  # no zeros between pixels
    assert conv.operands[1].type.shape == (w_shape[1] * strides[0] * strides[1], w_shape[0],
                                           1, 1)


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_integer(per_channel):
    feeds = {"x": ints(2, 3, 6, 6), "w": ints(4, 3, 3, 3, seed=1),
             "xz": np.array(3, np.uint8),
             "wz": np.array([1, 2, 3, 4] if per_channel else 7, np.uint8)}
    decomposed("ConvInteger", feeds, shapes={"x": ["N", 3, 6, 6]}, pads=[1, 1, 1, 1])


@pytest.mark.parametrize("per_channel,bias", [(False, False), (True, True)])
def test_qlinear_conv(per_channel, bias):
    feeds = {"x": ints(2, 3, 6, 6), "xs": np.array(0.02, F32), "xz": np.array(3, np.uint8),
             "w": ints(4, 3, 3, 3, dtype=np.int8, seed=1),
             "ws": np.array([0.01, 0.02, 0.03, 0.015] if per_channel else 0.02, F32),
             "wz": np.zeros(4 if per_channel else (), np.int8),
             "ys": np.array(1.5, F32), "yz": np.array(100, np.uint8)}
    if bias:
        feeds["b"] = np.random.default_rng(0).integers(-300, 300, 4).astype(np.int32)
    decomposed("QLinearConv", feeds, strides=[2, 2])


@pytest.mark.parametrize("activation,past", [("none", False), ("silu", True)])
def test_causal_conv_with_state(activation, past):
    feeds = {"x": normal(2, 3, 6), "w": normal(3, 1, 4, seed=1), "b": normal(3, seed=2)}
    if past:
        feeds["p"] = normal(2, 3, 3, seed=3)
    decomposed("CausalConvWithState", feeds, outputs=("y", "state"), opset=27,
               shapes={"x": ["B", 3, 6], "p": ["B", 3, 3]}, activation=activation)


def test_conv_kept_cases_say_why():
    # with stride 2, SAME pads depend on the parity of H and W: no integer pads to give
    assert explain("Conv", {"x": normal(1, 2, 5, 5), "w": normal(3, 2, 3, 3)},
                   shapes={"x": [1, 2, "H", "W"]}, auto_pad="SAME_UPPER", strides=[2, 2]) == \
        "decompose: nn.conv stays: auto_pad SAME_UPPER needs static spatial dims"
    # declared kept: the op stays, with the reason docs and `pir ops` give
    feeds = {"x": normal(1, 2, 4, 4), "w": normal(3, 2, 3, 3), "off": normal(1, 18, 2, 2)}
    assert KEPT["nn.deform_conv"] == (
        "samples the input at data-dependent fractional positions (bilinear interpolation at "
        "offsets known only at run time)")
    assert explain("DeformConv", feeds, opset=19) == \
        f"decompose: nn.deform_conv stays: {KEPT['nn.deform_conv']}"


def test_causal_conv_with_mismatched_past_stays():
    feeds = {"x": normal(2, 3, 6), "w": normal(3, 1, 4, seed=1), "b": normal(3, seed=2),
             "p": normal(2, 3, 3, seed=3)}
    assert explain("CausalConvWithState", feeds, outputs=("y", "state"), opset=27,
                   shapes={"x": ["B", 3, 6]}) == (
        "decompose: nn.causal_conv_with_state stays: past_state [2, 3, 3] does not match "
        "input [B, 3, 6] in batch or channels")


# -- pooling -----------------------------------------------------------------------------------

POOLS = [
    ("MaxPool", (2, 3, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("MaxPool", (2, 3, 8, 7), {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1,
                               "dilations": [1, 2]}),
    ("MaxPool", (2, 3, 9), {"kernel_shape": [2], "auto_pad": "SAME_LOWER", "strides": [2]}),
    ("AveragePool", (2, 3, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                   "strides": [2, 2]}),
    ("AveragePool", (2, 3, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                   "strides": [2, 2], "count_include_pad": 1, "ceil_mode": 1}),
    ("AveragePool", (2, 3, 8), {"kernel_shape": [3], "auto_pad": "SAME_UPPER", "strides": [2]}),
    ("AveragePool", (1, 2, 4, 4, 4), {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}),
    ("LpPool", (2, 3, 6, 6), {"kernel_shape": [2, 2], "p": 3, "pads": [0, 1, 0, 1]}),
    ("LpPool", (2, 3, 6), {"kernel_shape": [3], "strides": [2]}),
]


@pytest.mark.parametrize("op_type,x_shape,attrs", POOLS,
                         ids=[f"{p[0]}-{i}" for i, p in enumerate(POOLS)])
def test_pool(op_type, x_shape, attrs):
    out = decomposed(op_type, {"x": normal(*x_shape)}, shapes={"x": ["N", *x_shape[1:]]},
                     **attrs)
    taps = int(np.prod(attrs["kernel_shape"]))
    assert computed(out).count("prim.slice") == taps


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
def test_a_pool_over_a_symbolic_axis_slices_its_static_axes(op_type):
    # PLCMOS pools [1, 4] windows over [frames, 257]: the static axis is strided slices
    # (affine loads), the symbolic one, which every window reads whole, no gather at all
    out = decomposed(op_type, {"x": normal(1, 2, 5, 17)}, shapes={"x": [1, 2, "T", 17]},
                     kernel_shape=[1, 4], strides=[1, 4])
    text = computed(out)
    assert text.count("prim.slice") == 4 and "prim.gather" not in text
    # a window along the symbolic axis gathers there, and still slices the static one
    out = decomposed(op_type, {"x": normal(1, 2, 7, 9)}, shapes={"x": [1, 2, "T", 9]},
                     kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 0])
    text = computed(out)
    taps = 6 * (2 if op_type == "AveragePool" else 1)  # the average counts its windows too
    assert text.count("prim.slice") == taps and text.count("prim.gather") == taps


def test_average_pool_divides_by_a_scalar_when_every_window_is_full():
    out = decomposed("AveragePool", {"x": normal(1, 2, 6, 6)}, kernel_shape=[2, 2],
                     strides=[2, 2])
    divisor = next(op for fn in out.funcs for op in fn.walk() if op.name == "prim.div")
    assert divisor.operands[1].owner.name == "prim.broadcast_in_dim"
    assert divisor.operands[1].owner.operands[0].type.shape == ()


@pytest.mark.parametrize("op_type,reduce", [("GlobalMaxPool", "prim.reduce_max"),
                                            ("GlobalAveragePool", "prim.reduce_sum")])
def test_global_pool(op_type, reduce):
    out = decomposed(op_type, {"x": normal(2, 3, 6, 5)}, shapes={"x": ["N", 3, 6, 5]})
    assert reduce in computed(out)
    decomposed(op_type, {"x": normal(2, 3, 4)})


def test_pool_kept_cases_say_why():
    assert explain("MaxPool", {"x": normal(1, 2, 4, 4)}, outputs=("y", "i"),
                   kernel_shape=[2, 2]) == \
        "decompose: nn.max_pool stays: the Indices result (the positions of the maxima) is " \
        "not decomposed"
    # (over symbolic dims with static pads a pool decomposes: test_decompose_pool_symbolic)
    assert explain("AveragePool", {"x": normal(1, 2, 4, 4)}, shapes={"x": [1, 2, "H", 4]},
                   kernel_shape=[2, 2], auto_pad="SAME_UPPER", strides=[2, 2]) == \
        "decompose: nn.average_pool stays: auto_pad SAME_UPPER with strides [2, 2] over " \
        "symbolic spatial dims has pads that depend on their size"


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("rows", [7, 8])
def test_a_pool_over_a_symbolic_axis_pads_its_end_only_for_ceil_mode(op_type, rows):
    # in floor mode no window ends past the explicit pads: no pad op, so no bounds test in
    # every tap (AECMOS's [2, 2] pools over [frames, 80]); ceil_mode may read stride - 1 past
    shapes = {"x": [1, 2, "T", 8]}
    out = decomposed(op_type, {"x": normal(1, 2, rows, 8)}, shapes=shapes,
                     kernel_shape=[2, 2], strides=[2, 2])
    assert "prim.pad" not in computed(out)
    out = decomposed(op_type, {"x": normal(1, 2, rows, 8)}, shapes=shapes,
                     kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    assert "prim.pad" in computed(out)
