"""The activation and Clip decompositions preserve values.

Each case builds a one-node ONNX model, imports it, runs ``decompose`` and checks that the
reference runtime gives the same outputs before and after (rtol 1e-5) on random inputs of
several shapes, symbolic dims included, with large |x| where overflow would show, and that
no nn op is left.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import check_pipeline, decomposed, op_names
from onnx import helper

from pir.frontends.onnx.importer import import_model

F32, F16, F64 = np.float32, np.float16, np.float64


def data(shape, dtype=F32, scale=3.0, seed=0):
    """Random values of ``scale``, with the extremes -60 and 60 mixed in (overflow checks)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-scale, scale, size=shape)
    if x.size > 2:
        x.flat[:2] = [-60.0, 60.0]
    return x.astype(dtype)


def computed(module) -> list[str]:
    return [n for n in op_names(module) if n not in ("builtin.constant", "func.return")]


#: (ONNX op, attributes)
ACTIVATIONS = [
    ("Relu", {}), ("LeakyRelu", {}), ("LeakyRelu", {"alpha": 0.3}), ("Elu", {}),
    ("Elu", {"alpha": 0.5}), ("Selu", {}), ("Selu", {"alpha": 2.0, "gamma": 0.5}),
    ("Celu", {}), ("Celu", {"alpha": 2.5}), ("Sigmoid", {}), ("HardSigmoid", {}),
    ("HardSigmoid", {"alpha": 0.4, "beta": 0.3}), ("HardSwish", {}), ("Softplus", {}),
    ("Softsign", {}), ("Gelu", {}), ("Gelu", {"approximate": "tanh"}), ("Mish", {}),
    ("ThresholdedRelu", {}), ("ThresholdedRelu", {"alpha": 0.5}), ("Shrink", {}),
    ("Shrink", {"bias": 1.5, "lambd": 1.0}), ("Tanh", {}),
]
IDS = [op + "".join(f"-{k}={v}" for k, v in attrs.items()) for op, attrs in ACTIVATIONS]
SHAPES = [((3, 4), None), ((2, 3, 5), ["B", 3, 5]), ((), None)]


@pytest.mark.parametrize("op_type,attrs", ACTIVATIONS, ids=IDS)
@pytest.mark.parametrize("shape,sym", SHAPES, ids=["static", "symbolic", "scalar"])
def test_activation(op_type, attrs, shape, sym):
    decomposed(op_type, {"x": data(shape)}, shapes={"x": sym} if sym else None, **attrs)


@pytest.mark.parametrize("op_type,attrs", ACTIVATIONS, ids=IDS)
def test_activation_half_and_double(op_type, attrs):
    decomposed(op_type, {"x": data((4, 6), F16)}, **attrs)
    decomposed(op_type, {"x": data((4, 6), F64)}, **attrs)


def test_narrow_floats_compute_in_f32_once():
    out = decomposed("HardSwish", {"x": data((4, 6), F16)})
    names = computed(out)
    assert names[0] == "prim.cast" and names[-1] == "prim.cast" and names.count("prim.cast") == 2


def test_swish():
    # Swish is opset 24; alpha = 1 needs no multiply before the logistic
    for alpha, muls in [(1.0, 1), (0.5, 2)]:
        out = decomposed("Swish", {"x": data((3, 4))}, opset=24, alpha=alpha)
        assert computed(out).count("prim.mul") == muls


def test_softplus_does_not_overflow():
    x = np.array([-100.0, -30.0, -1e-3, 0.0, 1e-3, 30.0, 88.0, 100.0], F32)
    out = decomposed("Softplus", {"x": x})
    assert "prim.log1p" in computed(out)


@pytest.mark.parametrize("dtype", [np.int32, np.int8])
def test_relu_of_integers(dtype):
    decomposed("Relu", {"x": (data((3, 4)) * 3).astype(dtype)})


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64])
def test_shrink_of_integers(dtype):
    x = np.arange(-6, 6).astype(dtype) if np.dtype(dtype).kind == "i" else np.arange(12,
                                                                                    dtype=dtype)
    decomposed("Shrink", {"x": x}, bias=1.5, lambd=2.0)


SLOPES = [((3, 4), (4,), None), ((2, 3, 4), (3, 1), {"x": ["B", 3, 4]}),
          ((2, 3, 4), (2, 3, 4), None), ((3, 4), (1,), {"x": ["B", 4]})]


@pytest.mark.parametrize("sx,ss,sym", SLOPES, ids=["row", "symbolic", "same", "scalar"])
def test_prelu(sx, ss, sym):
    decomposed("PRelu", {"x": data(sx), "slope": data(ss, seed=1)}, shapes=sym)


def test_prelu_integers_and_half():
    decomposed("PRelu", {"x": (data((3, 4)) * 3).astype(np.int32),
                         "slope": np.array([1, 2, 3, -1], np.int32)})
    decomposed("PRelu", {"x": data((3, 4), F16), "slope": data((4,), F16, seed=1)})


# -- clip ---------------------------------------------------------------------------------


def clip_model(x, lo, hi, sym=None):
    """Clip with optional bounds ("" inputs where absent), as initializers."""
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in (("lo", lo), ("hi", hi))
             if v is not None]
    node = helper.make_node("Clip", ["x", "lo" if lo is not None else "",
                                     "hi" if hi is not None else ""], ["y"])
    dtype = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph([node], "clip", [helper.make_tensor_value_info(
        "x", dtype, sym or x.shape)], [helper.make_tensor_value_info("y", dtype, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


CLIPS = [(-0.5, 1.0), (None, 1.0), (-0.5, None), (1.0, -1.0)]


@pytest.mark.parametrize("lo,hi", CLIPS, ids=["both", "max", "min", "min>max"])
@pytest.mark.parametrize("shape,sym", SHAPES[:2], ids=["static", "symbolic"])
def test_clip(lo, hi, shape, sym):
    x = data(shape)
    x.flat[2] = np.nan
    bounds = [None if v is None else np.array(v, F32) for v in (lo, hi)]
    out = check_pipeline(import_model(clip_model(x, *bounds, sym)), {"x": x}, "decompose")
    assert computed(out).count("prim.max") == (lo is not None)
    assert computed(out).count("prim.min") == (hi is not None)


def test_clip_of_integers_with_rank1_bounds():
    x = np.arange(-8, 8, dtype=np.int64).reshape(4, 4)
    out = decomposed("Clip", {"x": x}, initializers={"lo": np.array([-3], np.int64),
                                                    "hi": np.array([5], np.int64)})
    assert "prim.reshape" in computed(out)


def test_clip_bounds_as_inputs():
    # bounds that are graph inputs, not constants
    x = data((3, 4))
    decomposed("Clip", {"x": x, "lo": np.array(-1.0, F32), "hi": np.array(0.5, F32)},
               shapes={"x": ["B", 4]})


def test_clip_without_bounds_is_a_copy_that_keeps_the_output_name():
    x = data((3, 4))
    out = check_pipeline(import_model(clip_model(x, None, None)), {"x": x}, "decompose")
    assert computed(out) == ["prim.reshape"]  # check_pipeline checked the output names
