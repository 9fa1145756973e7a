"""Signal processing: ONNX DFT, STFT, the Hann/Hamming/Blackman windows and MelWeightMatrix.

Complex values are real tensors with a trailing axis of 2 (real, imaginary), as in ONNX; a
real signal has a trailing axis of 1.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir import dimexpr as de
from pir.ir.attributes import BOOL, DTYPE
from pir.ir.core import Operation, Value
from pir.ir.dialects.nn.base import FLOATS, INTS, NUMERIC
from pir.ir.dialects.nn.symbolic import shape_value
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import const_value, tensor
from pir.ir.types import Dim, DType, TensorType

__all__ = ["DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix",
           "dft_axis"]


def _scalar(v: Value | None) -> int | None:
    """The integer value of a constant scalar operand (None if absent or not constant)."""
    arr = const_value(v)
    if arr is None:
        return None
    if arr.size != 1:
        raise PirError(f"expected a scalar, got a tensor of shape {list(arr.shape)}")
    return int(arr.reshape(-1)[0])


def _check_scalar(v: Value | None, what: str) -> None:
    if v is not None and tensor(v).shape not in (None, (), (1,)):
        raise PirError(f"{what} must be a scalar, got {v.type}")


def dft_axis(axis: int, rank: int) -> int:
    """A DFT axis in [-rank, -2] or [0, rank - 2] (the last axis holds real/imaginary parts)."""
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise PirError(f"axis {axis} is out of range for a DFT of a rank-{rank} input "
                       f"(allowed: [{-rank}, -2] and [0, {rank - 2}])")
    return axis % rank


def _complex_dim(t: TensorType, what: str) -> None:
    if t.shape is not None:
        if len(t.shape) < 2:
            raise PirError(f"{what} must have rank 2 or more (signal dims, then 1 or 2), got {t}")
        if t.shape[-1] not in (1, 2, None):
            raise PirError(f"{what}'s last dim must be 1 (real) or 2 (complex), got {t}")


class DFT(Operation):
    """The discrete Fourier transform (or its inverse) along ``axis`` (default -2).

    ``onesided`` with a forward transform keeps the floor(n/2)+1 non-redundant bins (RFFT);
    with ``inverse`` it takes such bins and returns the real signal (IRFFT).  The signal is
    zero-padded or cut to ``dft_length`` (default: the axis size, or 2*(size-1) for IRFFT).
    """

    name = "nn.dft"
    traits = frozenset({Pure})
    input = operand(dtypes=FLOATS)
    dft_length = operand(optional=True, dtypes={DType.I32, DType.I64})
    axis = operand(optional=True, dtypes={DType.I64})
    inverse = attr(BOOL, False)
    onesided = attr(BOOL, False)
    output = result()

    def axis_value(self, rank: int) -> int | None:
        axis = -2 if self.axis is None else _scalar(self.axis)
        return None if axis is None else dft_axis(axis, rank)

    def length(self, size) -> Dim:
        """dft_length, or its default for an axis of ``size`` (symbolic: ``2*N - 2``)."""
        if self.dft_length is not None:
            return _scalar(self.dft_length)
        return de.mul(2, de.sub(size, 1)) if self.inverse and self.onesided else size

    def infer(self):
        t = tensor(self.input)
        _complex_dim(t, "input")
        last = 1 if self.inverse and self.onesided else 2
        if t.shape is None:
            return [t]
        axis = self.axis_value(len(t.shape))
        dims = list(t.shape[:-1]) + [last]
        if axis is None:  # the transformed axis is not known: every signal dim may change
            return [t.with_shape([None] * (len(dims) - 1) + [last])]
        n = self.length(t.shape[axis])
        if self.onesided and not self.inverse:
            n = de.add(de.floordiv(n, 2), 1)
        dims[axis] = n
        return [t.with_shape(dims)]

    def verify_(self):
        _check_scalar(self.dft_length, "dft_length")
        _check_scalar(self.axis, "axis")
        n = _scalar(self.dft_length)
        if n is not None and n < 1:
            raise PirError(f"dft_length must be positive, got {n}")


class STFT(Operation):
    """The short-time Fourier transform of signal [batch, length, 1|2]: DFTs of windowed frames
    of frame_length samples taken every frame_step samples -> [batch, frames, bins, 2]."""

    name = "nn.stft"
    traits = frozenset({Pure})
    signal = operand(dtypes=FLOATS)
    frame_step = operand(dtypes={DType.I32, DType.I64})
    window = operand(optional=True, dtypes=FLOATS)
    frame_length = operand(optional=True, dtypes={DType.I32, DType.I64})
    onesided = attr(BOOL, True)
    output = result()

    def frame_size(self, signal_length) -> Dim:
        if self.frame_length is not None:
            return _scalar(self.frame_length)
        if self.window is not None:
            shape = tensor(self.window).shape
            return None if shape is None else shape[0]
        return signal_length

    def infer(self):
        t = tensor(self.signal)
        if t.shape is not None and len(t.shape) != 3:
            raise PirError(f"signal must be [batch, length, 1 or 2], got {t}")
        _complex_dim(t, "signal")
        batch, length = (None, None) if t.shape is None else t.shape[:2]
        size, step = self.frame_size(length), _scalar(self.frame_step)
        frames = None
        if step:
            frames = de.add(de.floordiv(de.sub(length, size), step), 1)
        bins = de.add(de.floordiv(size, 2), 1) if self.onesided else size
        return [TensorType(t.dtype, (batch, frames, bins, 2))]

    def verify_(self):
        _check_scalar(self.frame_step, "frame_step")
        _check_scalar(self.frame_length, "frame_length")
        step = _scalar(self.frame_step)
        if step is not None and step < 1:
            raise PirError(f"frame_step must be positive, got {step}")
        if self.window is not None:
            shape = tensor(self.window).shape
            if shape is not None and len(shape) != 1:
                raise PirError(f"window must be 1-D, got {self.window.type}")
            size = _scalar(self.frame_length)
            if shape is not None and isinstance(shape[0], int) and size not in (None, shape[0]):
                raise PirError(f"window has {shape[0]} samples but frame_length is {size}")


class _Window(Operation):
    """A window of ``size`` samples; ``periodic`` computes size+1 points and drops the last."""

    traits = frozenset({Pure})
    size = operand(dtypes={DType.I32, DType.I64})
    output_datatype = attr(DTYPE, DType.F32)
    periodic = attr(BOOL, True)
    output = result(dtypes=NUMERIC)
    #: the window is sum_k coefficients[k] * cos(2 pi k n / N)
    coefficients: tuple[float, ...] = ()

    def infer(self):
        _check_scalar(self.size, "size")
        n = _scalar(self.size)
        if n is None:  # a size read from a shape
            computed = shape_value(self.size)
            n = computed[0] if computed is not None and len(computed) == 1 else None
        return [TensorType(self.output_datatype, (n,))]


class HannWindow(_Window):
    """w[n] = 0.5 - 0.5 cos(2 pi n / N) (= sin^2(pi n / N)); N = size, or size-1 if symmetric."""

    name = "nn.hann_window"
    coefficients = (0.5, -0.5)


class HammingWindow(_Window):
    """w[n] = 25/46 - 21/46 cos(2 pi n / N); N = size, or size-1 if symmetric."""

    name = "nn.hamming_window"
    coefficients = (25 / 46, -21 / 46)


class BlackmanWindow(_Window):
    """w[n] = 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N); N = size, or size-1."""

    name = "nn.blackman_window"
    coefficients = (0.42, -0.5, 0.08)


class MelWeightMatrix(Operation):
    """The [dft_length // 2 + 1, num_mel_bins] matrix of triangular mel filters (peak 1) that
    maps a linear spectrogram to a mel spectrogram, mel(f) = 2595 log10(1 + f / 700)."""

    name = "nn.mel_weight_matrix"
    traits = frozenset({Pure})
    num_mel_bins = operand(dtypes=INTS)
    dft_length = operand(dtypes=INTS)
    sample_rate = operand(dtypes=INTS)
    lower_edge_hertz = operand(dtypes=FLOATS)
    upper_edge_hertz = operand(dtypes=FLOATS)
    output_datatype = attr(DTYPE, DType.F32)
    output = result(dtypes=NUMERIC)

    def infer(self):
        for name in ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
                     "upper_edge_hertz"):
            _check_scalar(getattr(self, name), name)
        bins, n = _scalar(self.num_mel_bins), _scalar(self.dft_length)
        return [TensorType(self.output_datatype, (None if n is None else n // 2 + 1, bins))]

