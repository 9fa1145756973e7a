"""DFT, STFT, window functions and MelWeightMatrix: import, round trip, run, compare with ONNX
Runtime; type rules and their diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_model, node_model
from onnx import TensorProto

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.func import FuncOp
from pir.runtimes.reference import run_function

rng = np.random.default_rng(0)


def the_op(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return next(o for o in fn.walk() if o.name == name)


def signal(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# -- DFT --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((2, 8, 1), 1), ((2, 8, 2), -2), ((3, 5, 6, 2), 1),
                                        ((3, 5, 6, 1), -3), ((4, 7, 2), 0)])
@pytest.mark.parametrize("inverse", [0, 1])
def test_dft_axes(shape, axis, inverse):
    x = signal(*shape)
    model = node_model("DFT", {"x": x}, ["y"], opset=20, inverse=inverse,
                       initializers={"n": np.array(shape[axis], np.int64),
                                     "axis": np.array(axis, np.int64)})
    module = check_model(model, {"x": x}, rtol=1e-4, atol=1e-4)
    out = the_op(module, "nn.dft").results[0].type.shape
    assert out == shape[:-1] + (2,)


@pytest.mark.parametrize("length", [4, 8, 13])
def test_dft_length_pads_or_cuts(length):
    x = signal(2, 8, 2)
    model = node_model("DFT", {"x": x}, ["y"], opset=20,
                       initializers={"n": np.array(length, np.int64)})
    module = check_model(model, {"x": x}, rtol=1e-4, atol=1e-4)
    assert the_op(module, "nn.dft").results[0].type.shape == (2, length, 2)


@pytest.mark.parametrize("n", [8, 9])
def test_rfft_and_irfft(n):
    x = signal(3, n, 1)
    rfft = node_model("DFT", {"x": x}, ["y"], opset=20, onesided=1)
    module = check_model(rfft, {"x": x}, rtol=1e-4, atol=1e-4)
    assert the_op(module, "nn.dft").results[0].type.shape == (3, n // 2 + 1, 2)
    spectrum = np.fft.rfft(x[..., 0], axis=1)
    z = np.stack([spectrum.real, spectrum.imag], -1).astype(np.float32)
    irfft = node_model("DFT", {"z": z}, ["y"], opset=20, onesided=1, inverse=1,
                       initializers={"n": np.array(n, np.int64)})
    check_model(irfft, {"z": z}, rtol=1e-4, atol=1e-4, expected={"y": x})


def test_dft17_axis_attribute():
    x = signal(2, 3, 6, 2)
    module = check_model(node_model("DFT", {"x": x}, ["y"], opset=17, axis=2), {"x": x},
                         rtol=1e-4, atol=1e-4)
    assert the_op(module, "nn.dft").results[0].type.shape == (2, 3, 6, 2)


def test_dft_double():
    x = signal(2, 16, 2, dtype=np.float64)
    check_model(node_model("DFT", {"x": x}, ["y"], opset=20, inverse=1), {"x": x},
                rtol=1e-10, atol=1e-12)


# -- STFT -------------------------------------------------------------------------------------

@pytest.mark.parametrize("onesided", [0, 1])
@pytest.mark.parametrize("step,frame,with_window", [(4, 8, True), (3, 8, False), (5, 16, True),
                                                    (8, 8, False)])
def test_stft(onesided, step, frame, with_window):
    x = signal(2, 40, 1)
    inits = {"step": np.array(step, np.int64)}
    if with_window:
        inits["window"] = np.hanning(frame).astype(np.float32)
    else:
        inits["window"] = np.ones(frame, np.float32)  # ONNX Runtime needs one or the other
        inits["frame"] = np.array(frame, np.int64)
    model = node_model("STFT", {"x": x}, ["y"], opset=17, onesided=onesided, initializers=inits)
    module = check_model(model, {"x": x}, rtol=1e-4, atol=1e-4)
    bins = frame // 2 + 1 if onesided else frame
    assert the_op(module, "nn.stft").results[0].type.shape == (2, (40 - frame) // step + 1, bins, 2)


def test_stft_complex_signal():
    x = signal(1, 20, 2)
    model = node_model("STFT", {"x": x}, ["y"], opset=17, onesided=0,
                       initializers={"step": np.array(5, np.int64),
                                     "window": np.hamming(10).astype(np.float32)})
    check_model(model, {"x": x}, rtol=1e-4, atol=1e-4)


# -- windows and mel filters ------------------------------------------------------------------

@pytest.mark.parametrize("op_type", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("size", [1, 8, 11])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows(op_type, size, periodic):
    n = np.array(size, np.int64)
    model = node_model(op_type, {"n": n}, ["w"], opset=17, periodic=periodic)
    if size > 1:
        check_model(model, {"n": n}, atol=1e-6)
    module = import_model(node_model(op_type, {}, ["w"], opset=17, initializers={"n": n}))
    assert not [o for o in module.walk() if o.name.endswith("_window")]  # folded at import


@pytest.mark.parametrize("dtype,np_dtype", [(TensorProto.DOUBLE, np.float64),
                                            (TensorProto.FLOAT16, np.float16)])
def test_window_output_datatype(dtype, np_dtype):
    n = np.array(10, np.int64)
    check_model(node_model("HannWindow", {"n": n}, ["w"], opset=17, output_datatype=dtype),
                {"n": n}, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("bins,length,rate,low,high", [(8, 16, 8000, 0.0, 4000.0),
                                                       (10, 64, 16000, 100.0, 7000.0),
                                                       (4, 31, 22050, 20.0, 10000.0)])
def test_mel_weight_matrix(bins, length, rate, low, high):
    feeds = {"bins": np.array(bins, np.int64), "n": np.array(length, np.int64),
             "rate": np.array(rate, np.int64), "low": np.array(low, np.float32),
             "high": np.array(high, np.float32)}
    module = check_model(node_model("MelWeightMatrix", feeds, ["w"], opset=17), feeds)
    assert the_op(module, "nn.mel_weight_matrix").results[0].type.dtype.value == "f32"


# -- diagnostics ------------------------------------------------------------------------------

def test_mel_filters_beyond_the_spectrum_are_an_error():
    feeds = {"bins": np.array(4, np.int64), "n": np.array(31, np.int64),
             "rate": np.array(22050, np.int64), "low": np.array(20.0, np.float32),
             "high": np.array(11025.0, np.float32)}
    module = import_model(node_model("MelWeightMatrix", feeds, ["w"], opset=17))
    with pytest.raises(PirError, match="upper_edge_hertz = 11025 falls in spectrogram bin 16, "
                                       "but a DFT of length 31"):
        run_function(module, feeds)


@pytest.mark.parametrize("axis", [-1, 2])
def test_dft_axis_may_not_be_the_complex_axis(axis):
    x = signal(2, 8, 2)
    model = node_model("DFT", {"x": x}, ["y"], opset=20,
                       initializers={"n": np.array(8, np.int64), "axis": np.array(axis, np.int64)})
    with pytest.raises(PirError, match=f"axis {axis} is out of range for a DFT"):
        import_model(model)


def test_dft_last_dim_must_be_real_or_complex():
    x = signal(2, 8, 3)
    with pytest.raises(PirError, match="last dim must be 1 \\(real\\) or 2 \\(complex\\)"):
        import_model(node_model("DFT", {"x": x}, ["y"], opset=20))


def test_stft_window_must_match_frame_length():
    x = signal(1, 20, 1)
    model = node_model("STFT", {"x": x}, ["y"], opset=17,
                       initializers={"step": np.array(2, np.int64),
                                     "window": np.ones(6, np.float32),
                                     "frame": np.array(8, np.int64)})
    with pytest.raises(PirError, match="window has 6 samples but frame_length is 8"):
        import_model(model)
