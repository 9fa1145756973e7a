"""onnxruntime's quantizer ops (com.microsoft): DynamicQuantizeLSTM, DynamicQuantizeMatMul,
MatMulIntegerToFloat, MatMulInteger16 and the QLinear* ops, against onnxruntime.

int8 weights are drawn from [-64, 63]: onnxruntime's u8s8 GEMM on x86 with AVX2 but no VNNI
(vpmaddubsw) saturates pairs of products at int16, so with full-range int8 weights it is off
the exact sum that pir, and onnxruntime on VNNI or ARM machines, compute (docs/onnx.md).  Such
weights are checked against the exact formula instead."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from helpers import check_pipeline, op_names
from ms_helpers import check_ort, ms_model, run_ort, run_pir
from onnx import TensorProto, numpy_helper

from pir.errors import PirError

from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.builtin import ConstantOp
from pir.ir.types import DType

rng = np.random.default_rng(0)
FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def normal(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def ints(shape, dtype, lo=None, hi=None):
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def weights(shape, dtype):
    return ints(shape, dtype, -64, 63) if dtype == np.int8 else ints(shape, dtype)


def scalar(v, dtype=np.float32):
    return np.array(v, dtype)


# -- the matrix products ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column, zero_point, bias", [
    (False, True, True), (True, True, False), (False, False, False)])
def test_dynamic_quantize_matmul(dtype, per_column, zero_point, bias):
    a = normal(3, 5, 8)
    inits = {"B": weights((8, 6), dtype),
             "b_scale": rng.uniform(0.01, 0.03, 6).astype(np.float32) if per_column
             else scalar(0.02)}
    if zero_point:
        zp = 0 if dtype == np.int8 else 3
        inits["b_zp"] = np.full(6, zp, dtype) if per_column else scalar(zp, dtype)
    if bias:
        inits["bias"] = normal(6)
    order = ["a", "B", "b_scale", "b_zp" if zero_point else "", "bias" if bias else ""]
    module = check_ort(ms_model("DynamicQuantizeMatMul", {"a": a}, ["y"], inits, order=order),
                       {"a": a}, rtol=0, atol=0)  # exact: integers, then one rescale
    check_pipeline(module, {"a": a}, FUSE, rtol=0, atol=0)


def test_int8_weights_stay_int8():
    """The quantised weights reach the integer product as they are, not dequantised to f32
    constants at import."""
    model = ms_model("DynamicQuantizeMatMul", {"a": normal(4, 300)}, ["y"],
                     {"B": weights((300, 256), np.int8), "s": scalar(0.02)})
    module = import_model(model)
    consts = {op.results[0].name: op.results[0].type.dtype for op in module.walk()
              if isinstance(op, ConstantOp)}
    assert consts["B"] == DType.I8
    assert not any(t == DType.F32 and n != "s" for n, t in consts.items())
    assert "nn.matmul_integer" in op_names(module)


def test_full_range_int8_weights_are_exact():
    """Against the formula (onnxruntime's AVX2 u8s8 kernel saturates on these)."""
    a, b = normal(4, 16), ints((16, 6), np.int8)
    _, got = run_pir(ms_model("DynamicQuantizeMatMul", {"a": a}, ["y"],
                              {"B": b, "s": scalar(0.02)}), {"a": a})
    lo, hi = min(a.min(), 0), max(a.max(), 0)
    scale = np.float32(hi - lo) / np.float32(255)
    zp = np.rint(np.clip(-lo / scale, 0, 255))
    q = np.clip(np.rint(a / scale) + zp, 0, 255).astype(np.int32) - np.int32(zp)
    want = (q @ b.astype(np.int32)).astype(np.float32) * (scale * np.float32(0.02))
    np.testing.assert_array_equal(got["y"], want)


@pytest.mark.parametrize("per_column, bias", [(False, True), (True, False)])
def test_matmul_integer_to_float(per_column, bias):
    a = ints((3, 5, 8), np.uint8)
    inits = {"B": weights((8, 6), np.int8), "a_scale": scalar(0.1),
             "b_scale": rng.uniform(0.01, 0.03, 6).astype(np.float32) if per_column
             else scalar(0.02), "a_zp": scalar(128, np.uint8),
             "b_zp": np.zeros(6, np.int8) if per_column else scalar(0, np.int8)}
    if bias:
        inits["bias"] = normal(6)
    module = check_ort(ms_model("MatMulIntegerToFloat", {"a": a}, ["y"], inits), {"a": a},
                       rtol=0, atol=0)
    check_pipeline(module, {"a": a}, FUSE, rtol=0, atol=0)


def test_matmul_integer16():
    a, b = ints((2, 4, 8), np.int16, -3000, 3000), ints((8, 5), np.int16, -3000, 3000)
    model = ms_model("MatMulInteger16", {"a": a, "b": b}, ["y"],
                     out_types={"y": TensorProto.INT32})
    module = check_ort(model, {"a": a, "b": b})
    check_pipeline(module, {"a": a, "b": b}, FUSE)


# -- QLinear* ---------------------------------------------------------------------------------

_ONNX_TYPE = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}


def _qparams(dtype, *names):
    out = {}
    for n in names:
        out[f"{n}_scale"] = scalar(rng.uniform(0.002, 0.1))
        out[f"{n}_zp"] = scalar(ints((), dtype), dtype)
    return out


def _qcheck(model, feeds):
    """Bit-exact against onnxruntime, and after the fused pipeline."""
    module = check_ort(model, feeds)
    check_pipeline(module, feeds, FUSE)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("seed", range(3))
def test_qlinear_binary(op, dtype, seed):
    feeds = {"a": ints((4, 64), dtype), "b": ints((4, 64), dtype)}
    p = _qparams(dtype, "a", "b", "c")
    order = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "c_scale", "c_zp"]
    _qcheck(ms_model(op, feeds, ["y"], p, order=order,
                     out_types={"y": _ONNX_TYPE[dtype]}), feeds)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_binary_broadcast_without_zero_points(op, dtype):
    """An absent zero point is 0 in the operands' type (onnxruntime's type inference refuses
    the model, so the reference is the model with explicit zeros)."""
    feeds = {"a": ints((4, 8), dtype), "b": ints((8,), dtype)}
    p = {f"s{i}": scalar(rng.uniform(0.002, 0.1)) for i in (1, 2, 3)}
    kinds = {"y": _ONNX_TYPE[dtype]}
    model = ms_model(op, feeds, ["y"], p, order=["a", "s1", "", "b", "s2", "", "s3", ""],
                     out_types=kinds)
    zeros = ms_model(op, feeds, ["y"], {**p, "z": scalar(0, dtype)},
                     order=["a", "s1", "z", "b", "s2", "z", "s3", "z"], out_types=kinds)
    _, got = run_pir(model, feeds)
    np.testing.assert_array_equal(got["y"], run_ort(zeros, feeds)["y"])


def test_qlinear_add_at_rounding_ties():
    """With scales like 0.03, 0.05, 0.08 many exact results are ties; onnxruntime's x86 kernel
    (a (sA/sC) + b (sB/sC) + a folded zero point, with FMAs) may round them to the other
    neighbour than dequantize-add-quantize does: off by at most 1 (docs/onnx.md)."""
    feeds = {"a": ints((4, 64), np.int8), "b": ints((64,), np.int8)}
    p = {"s1": scalar(0.03), "s2": scalar(0.05), "s3": scalar(0.08)}
    model = ms_model("QLinearAdd", feeds, ["y"], {**p, "z": scalar(0, np.int8)},
                     order=["a", "s1", "z", "b", "s2", "z", "s3", "z"],
                     out_types={"y": TensorProto.INT8})
    _, got = run_pir(model, feeds)
    diff = np.abs(got["y"].astype(int) - run_ort(model, feeds)["y"].astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.1


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("op, attrs", [("QLinearSigmoid", {}),
                                       ("QLinearLeakyRelu", {"alpha": 0.1})])
def test_qlinear_activations(op, attrs, dtype):
    x = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype).reshape(4, 64)
    p = _qparams(dtype, "x", "y")
    model = ms_model(op, {"x": x}, ["y"], p, order=["x", "x_scale", "x_zp", "y_scale", "y_zp"],
                     out_types={"y": _ONNX_TYPE[dtype]}, **attrs)
    _qcheck(model, {"x": x})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_global_average_pool(dtype, channels_last):
    x = ints((2, 8, 5, 7), dtype)
    p = _qparams(dtype, "x", "y")
    model = ms_model("QLinearGlobalAveragePool", {"x": x}, ["y"], p,
                     order=["x", "x_scale", "x_zp", "y_scale", "y_zp"],
                     out_types={"y": _ONNX_TYPE[dtype]}, channels_last=channels_last)
    _qcheck(model, {"x": x})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_concat(dtype):
    feeds = {"c1": ints((2, 3, 4), dtype), "c2": ints((2, 5, 4), dtype)}
    p = _qparams(dtype, "y", "c1", "c2")
    order = ["y_scale", "y_zp", "c1", "c1_scale", "c1_zp", "c2", "c2_scale", "c2_zp"]
    _qcheck(ms_model("QLinearConcat", feeds, ["y"], p, order=order, axis=1,
                     out_types={"y": _ONNX_TYPE[dtype]}), feeds)


# -- DynamicQuantizeLSTM ----------------------------------------------------------------------

def dq_lstm(seq=5, batch=3, n_in=4, hidden=3, direction="forward", dtype=np.int8,
            per_column=False, lens=None, states=False, peepholes=False,
            outputs=("y", "y_h", "y_c"), **attrs):
    """A DynamicQuantizeLSTM model as onnxruntime's quantizer writes it, with its input."""
    dirs = 2 if direction == "bidirectional" else 1
    shape = (dirs, 4 * hidden) if per_column else (dirs,)
    zp = 0 if dtype == np.int8 else 128
    inits = {"W": weights((dirs, n_in, 4 * hidden), dtype),
             "R": weights((dirs, hidden, 4 * hidden), dtype),
             "B": normal(dirs, 8 * hidden, scale=0.1)}
    order = ["x", "W", "R", "B", "", "", "", ""]
    if lens is not None:
        inits["lens"], order[4] = np.array(lens, np.int32), "lens"
    if states:
        inits["h0"], inits["c0"] = normal(dirs, batch, hidden), normal(dirs, batch, hidden)
        order[5:7] = ["h0", "c0"]
    if peepholes:
        inits["P"], order[7] = normal(dirs, 3 * hidden), "P"
    for w in ("W", "R"):
        inits[f"{w}_scale"] = rng.uniform(0.005, 0.02, shape).astype(np.float32)
        inits[f"{w}_zp"] = np.full(shape, zp, dtype)
    order += ["W_scale", "W_zp", "R_scale", "R_zp"]
    x = normal(seq, batch, n_in, scale=2.0)
    model = ms_model("DynamicQuantizeLSTM", {"x": x}, list(outputs), inits, order=order,
                     hidden_size=hidden, direction=direction, **attrs)
    return model, {"x": x}


LSTM_CASES = {
    "int8": {},
    "uint8": {"dtype": np.uint8},
    "per-column": {"per_column": True},
    "reverse": {"direction": "reverse"},
    "bidirectional": {"direction": "bidirectional", "states": True, "peepholes": True},
    "lens": {"lens": [5, 2, 4]},
    "lens-reverse": {"lens": [3, 2, 1], "direction": "reverse"},
    "lens-empty": {"lens": [3, 0, 2], "direction": "bidirectional"},
    "clip-coupled": {"clip": 0.5, "input_forget": 1},
    "activations": {"activations": ["HardSigmoid", "Tanh", "Relu"], "activation_alpha": [0.3],
                    "activation_beta": [0.4]},
    "wide": {"batch": 8, "hidden": 6},
    "y_h only": {"outputs": ("", "y_h")},
}


#: The cases whose recurrence stays an nn op after decompose (peepholes, sequence_lens,
#: clip and coupled gates, other activations); the others become prim steps.
LSTM_KEPT = {"bidirectional", "lens", "lens-reverse", "lens-empty", "clip-coupled",
             "activations"}


@pytest.mark.parametrize("case", LSTM_CASES)
def test_dynamic_quantize_lstm(case):
    model, feeds = dq_lstm(**LSTM_CASES[case])
    module = check_ort(model, feeds, rtol=1e-5, atol=1e-6)
    optimized = check_pipeline(module, feeds, FUSE, rtol=1e-6, atol=1e-7)
    names = op_names(optimized)
    assert ("nn.dynamic_quantize_lstm_recurrence" in names) == (case in LSTM_KEPT)
    assert "fusion.group" in names


def test_dynamic_quantize_lstm_over_a_run_time_length_is_a_compiled_scan():
    """A symbolic sequence: each direction one nn.scan of prim steps, at two lengths the
    reference rule's results, and compiled into kernels with nothing left on the host."""
    pytest.importorskip("tvm")
    from pir.codegen.tvm.codegen import codegen_module
    from pir.codegen.uncompiled import uncompiled_lines
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module
    from pir.runtimes.reference import run_function
    from pir.runtimes.tvm import TvmInterpreter

    model, _ = dq_lstm(direction="bidirectional", states=True, batch=2, hidden=8)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "T"
    module = import_model(model)
    for seq in (3, 21):
        x = {"x": normal(seq, 2, 4, scale=2.0)}
        optimized = check_pipeline(module, x, FUSE, rtol=1e-6, atol=1e-7)
    names = op_names(optimized)
    assert "nn.dynamic_quantize_lstm_recurrence" not in names
    assert names.count("nn.scan") == 2  # one per direction
    kernels = parse_module(print_module(optimized))
    codegen_module(kernels, "llvm")
    assert any("nothing" in line for line in uncompiled_lines(kernels, {}))
    for seq in (3, 21):
        x = {"x": normal(seq, 2, 4, scale=2.0)}
        want = run_function(module, x)
        got = TvmInterpreter(kernels).run(kernels.funcs[0], x)
        for k in want:  # (a quantum may flip where exp or tanh rounds apart: a few 1e-3)
            np.testing.assert_allclose(got[k], want[k], rtol=0, atol=5e-3, err_msg=k)


def test_dynamic_quantize_lstm_imports_as_one_op():
    model, _ = dq_lstm()
    module = import_model(model)
    assert op_names(module).count("nn.dynamic_quantize_lstm") == 1
    consts = {op.results[0].name: op.results[0].type.dtype for op in module.walk()
              if isinstance(op, ConstantOp)}
    assert consts["W"] == consts["R"] == DType.I8


def _with_weights(model, arrays: dict[str, np.ndarray]):
    out = copy.deepcopy(model)
    for t in out.graph.initializer:
        if t.name in arrays:
            t.CopyFrom(numpy_helper.from_array(arrays[t.name], t.name))
    return out


def test_dynamic_quantize_lstm_full_range_weights_match_the_exact_products():
    """With full-range int8 weights onnxruntime's AVX2 u8s8 kernel saturates; pir computes
    the exact products (as onnxruntime does with VNNI): the same weights as uint8 + 128
    (onnxruntime's u8u8 kernel does not saturate) give the same result."""
    model, feeds = dq_lstm(seq=4, batch=2)
    w, r = ints((1, 4, 12), np.int8), ints((1, 3, 12), np.int8)
    _, got = run_pir(_with_weights(model, {"W": w, "R": r}), feeds)
    zp = np.full((1,), 128, np.uint8)
    shifted = {"W": (w.astype(np.int16) + 128).astype(np.uint8),
               "R": (r.astype(np.int16) + 128).astype(np.uint8), "W_zp": zp, "R_zp": zp}
    want = run_ort(_with_weights(model, shifted), feeds)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)


def test_dynamic_quantize_lstm_checks_hidden_size():
    model, _ = dq_lstm()
    (attr,) = [a for a in model.graph.node[0].attribute if a.name == "hidden_size"]
    attr.i = 5
    with pytest.raises(PirError, match="hidden_size 5 differs from R's 3 rows"):
        import_model(model)
