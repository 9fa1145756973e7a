"""The nn ops that stay nn ops (control flow, recurrences, Fourier transforms, training
updates), and the few small rules of the same families: seeded random numbers, dropout in
inference, and the window functions.

Control-flow ops keep their regions (the ops inside them are decomposed in place).  A random
op decomposes only with a seed: ``prim.random_*`` draws the same stream from the same seed
(numpy's PCG64 in the reference runtime), while an unseeded nn op draws fresh numbers on
every run, which no prim op does.
"""

from __future__ import annotations

import numpy as np

from pir.ir.core import Operation, Value
from pir.ir.typerules import const_value, tensor
from pir.ir.types import DType, TensorType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes, keep
from pir.passes.decompose.rules_linalg import shape

_REGIONS = "control flow: the op keeps its regions (the ops inside are decomposed in place)"
for _name in ("nn.if", "nn.loop", "nn.scan"):
    keep(_name, _REGIONS)
# (nn.lstm and nn.gru are prim ops: rules_recurrence)
keep("nn.rnn", "a recurrence over the sequence needs a loop, which prim does not have")
for _name in ("nn.adagrad", "nn.adam", "nn.momentum"):
    keep(_name, "a training-time optimizer update (ONNX's preview training domain)")
keep("nn.dft", "a Fourier transform: prim has no FFT")
keep("nn.stft", "a Fourier transform of framed windows: prim has no FFT")
keep("nn.mel_weight_matrix", "a filter table computed from scalar operands (fold evaluates it "
                             "when they are constants)")
keep("nn.multinomial", "samples by an inverse-CDF search of each row, which prim cannot "
                       "express")


# -- random numbers ----------------------------------------------------------------------------


def _seed(op: Operation) -> int:
    """The op's seed as prim's integer seed; an unseeded op (or one whose seed is not a
    non-negative integer, which the runtime turns into bits) stays."""
    seed = op.seed
    if seed is None:
        raise Keep("no seed: the op draws fresh numbers on every run, prim random ops "
                   "take a seed")
    if not float(seed).is_integer() or seed < 0:
        raise Keep(f"seed {seed} is not a non-negative integer")
    return int(seed)


def _draw(b: PrimBuilder, op: Operation, t: TensorType) -> Value:
    """A prim draw of type ``t`` with the op's seed and distribution."""
    shape_ = b.known(t.shape, "random output")
    t = t.with_shape(shape_)
    if "uniform" in op.name:
        return b.op("random_uniform", result_type=t, seed=_seed(op), low=op.low, high=op.high)
    return b.op("random_normal", result_type=t, seed=_seed(op), mean=op.mean, scale=op.scale)


@decomposes("nn.random_uniform", "nn.random_normal", "nn.random_uniform_like",
            "nn.random_normal_like")
def random(b: PrimBuilder, op: Operation) -> list[Value]:
    return [_draw(b, op, op.out.type)]


@decomposes("nn.bernoulli")
def bernoulli(b: PrimBuilder, op: Operation) -> list[Value]:
    """1 where a uniform draw in [0, 1) (in f64) is below the probability, else 0."""
    u = b.op("random_uniform", seed=_seed(op),
             result_type=TensorType(DType.F64, shape(b, op.input, "probabilities")))
    hit = b.op("lt", u, b.cast(op.input, DType.F64))
    return [b.cast(hit, op.out.type.dtype)]


@decomposes("nn.dropout")
def dropout(b: PrimBuilder, op: Operation) -> list[Value]:
    """Outside training (or with ratio 0) the data itself and an all-true mask; in training
    with a seed, a uniform draw >= ratio keeps an element, scaled by 1 / (1 - ratio)."""
    x = op.data
    xs = shape(b, x, "dropout data")
    training = False if op.training_mode is None else const_value(op.training_mode)
    ratio = 0.5 if op.ratio is None else const_value(op.ratio)
    if training is None:
        raise Keep("training_mode is not a constant")
    if bool(np.asarray(training).reshape(())) and ratio is None:
        raise Keep("the ratio of a training-mode dropout is not a constant")
    if not bool(np.asarray(training).reshape(())) or float(np.asarray(ratio).reshape(())) == 0:
        true = b.broadcast_to(b.const(True, DType.BOOL), xs)
        return [x, true][:len(op.results)]
    ratio = float(np.asarray(ratio).reshape(()))
    draw = b.op("random_uniform", seed=_seed(op), result_type=TensorType(DType.F64, xs))
    mask = b.binary("ge", draw, b.const(ratio, DType.F64))
    dtype = tensor(x).dtype
    scale = b.const(1.0 / (1.0 - ratio) if ratio < 1 else 0.0, dtype)
    return [b.mul(b.op("mul", x, b.cast(mask, dtype)), scale), mask][:len(op.results)]


# -- window functions --------------------------------------------------------------------------


@decomposes("nn.hann_window", "nn.hamming_window", "nn.blackman_window")
def window(b: PrimBuilder, op: Operation) -> list[Value]:
    """sum_k c_k cos(k * 2 pi n / N) over n = iota, in f64, then cast (N = size, or size - 1
    for a symmetric window)."""
    size = const_value(op.size)
    if size is None:
        raise Keep("the window size is not a constant")
    size = int(np.asarray(size).reshape(()))
    f64 = DType.F64
    n = b.op("iota", result_type=TensorType(f64, (size,)), dimension=0)
    denom = size if op.periodic else size - 1
    if denom > 0:
        phase = b.div(b.mul(n, b.const(2 * np.pi, f64)), b.const(denom, f64))
    else:
        phase = b.zeros_like(n)
    coefficients = type(op).coefficients
    w = b.broadcast_to(b.const(coefficients[0], f64), (size,))
    for k, c in enumerate(coefficients[1:], start=1):
        angle = phase if k == 1 else b.mul(phase, b.const(k, f64))
        w = b.add(w, b.mul(b.op("cos", angle), b.const(c, f64)))
    return [b.cast(w, op.output.type.dtype)]
