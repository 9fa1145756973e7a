"""ONNX DFT, STFT, window functions and MelWeightMatrix -> nn."""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.importer import dtype_from_onnx
from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import signal as sig
from pir.ir.dialects.nn import tensor as tn
from pir.ir.typerules import tensor

_WINDOWS = {"HannWindow": sig.HannWindow, "HammingWindow": sig.HammingWindow,
            "BlackmanWindow": sig.BlackmanWindow}


def _output_datatype(ctx):
    code = ctx.attr("output_datatype")
    return None if code is None else dtype_from_onnx(code)


@converter("DFT")
def dft(ctx):
    axis = ctx.input(2)
    if ctx.opset < 20:  # DFT-17 had the axis as an attribute, with default 1
        axis = ctx.constant(np.int64(ctx.attr("axis", 1)))
    return [ctx.value(sig.DFT, ctx.input(0), ctx.input(1), axis,
                      inverse=ctx.attr("inverse"), onesided=ctx.attr("onesided"))]


@converter("STFT")
def stft(ctx):
    """A rank-2 signal ``[batch, length]`` is a real one, ``[batch, length, 1]``: the spec
    asks for rank 3, but ONNX Runtime takes rank 2 and onnxscript's exporter writes it (the
    spectrogram front ends of onnx-asr)."""
    signal = ctx.input(0)
    shape = tensor(signal).shape
    if shape is not None and len(shape) == 2:
        signal = ctx.temp(tn.Unsqueeze, signal, ctx.constant(np.array([2], np.int64)))
    return [ctx.value(sig.STFT, signal, *(ctx.input(i) for i in range(1, 4)),
                      onesided=ctx.attr("onesided"))]


@converter(*_WINDOWS)
def window(ctx):
    return [ctx.value(_WINDOWS[ctx.op_type], ctx.input(0),
                      output_datatype=_output_datatype(ctx), periodic=ctx.attr("periodic"))]


@converter("MelWeightMatrix")
def mel_weight_matrix(ctx):
    return [ctx.value(sig.MelWeightMatrix, *(ctx.input(i) for i in range(5)),
                      output_datatype=_output_datatype(ctx))]
