"""Recurrent layers: ONNX RNN, GRU and LSTM, and onnxruntime's DynamicQuantizeLSTM.

The three share their operands and attributes, so they share one declaration and one type
rule.  With ``layout = 0`` the input is [seq, batch, input] and the results are
Y [seq, num_directions, batch, hidden] and Y_h (Y_c) [num_directions, batch, hidden]; with
``layout = 1`` the batch axis comes first: X [batch, seq, input], Y [batch, seq,
num_directions, hidden], Y_h [batch, num_directions, hidden].

Every result is always produced (the ONNX outputs are optional, but computing them costs
nothing extra); a result the model does not use is simply dead.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import BOOL, FLOAT, FLOATS, INT, STR, STRS
from pir.ir.core import Operation
from pir.ir.dialects.nn.base import FLOATS as FLOAT_TYPES
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import tensor
from pir.ir.types import DType, TensorType

__all__ = ["RNN", "GRU", "LSTM", "DynamicQuantizeLSTM", "DynamicQuantizeLSTMRecurrence",
           "DIRECTIONS", "ACTIVATIONS"]

DIRECTIONS = ("forward", "reverse", "bidirectional")
#: Activation functions the recurrent ops accept (lower case), with how many of
#: (activation_alpha, activation_beta) each one consumes.
ACTIVATIONS = {
    "relu": (0, 0), "tanh": (0, 0), "sigmoid": (0, 0), "softsign": (0, 0), "softplus": (0, 0),
    "affine": (1, 1), "leakyrelu": (1, 0), "thresholdedrelu": (1, 0), "scaledtanh": (1, 1),
    "hardsigmoid": (1, 1), "elu": (1, 0),
}


def _check_direction_and_activations(op: Operation) -> None:
    if op.direction not in DIRECTIONS:
        raise PirError(f"direction must be one of {', '.join(DIRECTIONS)}, got '{op.direction}'")
    acts = op.activations
    if acts and len(acts) not in (op.num_activations, op.num_activations * op.num_directions):
        raise PirError(f"expects {op.num_activations * op.num_directions} activations "
                       f"for direction '{op.direction}', got {len(acts)}")
    for a in acts:
        if a.lower() not in ACTIVATIONS:
            raise PirError(f"unknown activation '{a}'")


class _Recurrent(Operation):
    """Shared declaration of RNN, GRU and LSTM."""

    traits = frozenset({Pure})
    #: gates per direction (rows of W are gates * hidden_size) and activations per direction
    gates = 1
    num_activations = 1
    num_states = 1  # Y_h (and Y_c for LSTM)

    x = operand(dtypes=FLOAT_TYPES)
    w = operand(dtypes=FLOAT_TYPES)
    r = operand(dtypes=FLOAT_TYPES)
    b = operand(optional=True, dtypes=FLOAT_TYPES)
    sequence_lens = operand(optional=True, dtypes={DType.I32})
    initial_h = operand(optional=True, dtypes=FLOAT_TYPES)
    activation_alpha = attr(FLOATS, ())
    activation_beta = attr(FLOATS, ())
    activations = attr(STRS, ())
    clip = attr(FLOAT, None, "pre-activation values are clipped to [-clip, clip]")
    direction = attr(STR, "forward")
    hidden_size = attr(INT, None, "taken from r's last dim when absent")
    layout = attr(INT, 0)
    y = result()
    y_h = result()

    @property
    def num_directions(self) -> int:
        return 2 if self.direction == "bidirectional" else 1

    def hidden(self):
        if self.hidden_size is not None:
            return self.hidden_size
        shape = tensor(self.r).shape
        return shape[-1] if shape is not None and len(shape) == 3 else None

    def infer(self):
        t = tensor(self.x)
        seq = batch = None
        if t.shape is not None:
            if len(t.shape) != 3:
                raise PirError(f"x must have rank 3, got {t}")
            seq, batch = t.shape[:2] if self.layout == 0 else t.shape[1::-1]
        d, h = self.num_directions, self.hidden()
        if self.layout == 0:
            y, state = (seq, d, batch, h), (d, batch, h)
        else:
            y, state = (batch, seq, d, h), (batch, d, h)
        return [TensorType(t.dtype, y)] + [TensorType(t.dtype, state)] * self.num_states

    def verify_(self):
        _check_direction_and_activations(self)
        if self.layout not in (0, 1):
            raise PirError(f"layout must be 0 or 1, got {self.layout}")
        self._check_weights()

    def _check_weights(self):
        """W is [dirs, gates*hidden, input] and R [dirs, gates*hidden, hidden] (static dims)."""
        d, h, g = self.num_directions, self.hidden(), self.gates
        for v, name in ((self.w, "w"), (self.r, "r")):
            shape = tensor(v).shape
            if shape is None:
                continue
            if len(shape) != 3:
                raise PirError(f"{name} must have rank 3, got {v.type}")
            want = (d, g * h if isinstance(h, int) else None)
            for got, exp, what in zip(shape, want, ("num_directions", f"{g} * hidden_size")):
                if isinstance(got, int) and isinstance(exp, int) and got != exp:
                    raise PirError(f"{name} has shape {v.type}: dim must be {what} = {exp}")


class RNN(_Recurrent):
    """Elman RNN: H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb), f = activations[0] (tanh)."""

    name = "nn.rnn"


class GRU(_Recurrent):
    """GRU with gates z, r, h (weights in that order); activations (f, g) = (sigmoid, tanh)."""

    name = "nn.gru"
    gates = 3
    num_activations = 2
    linear_before_reset = attr(BOOL, False)


class LSTM(_Recurrent):
    """LSTM with gates i, o, f, c (weights in that order), peepholes p = (i, o, f);
    activations (f, g, h) = (sigmoid, tanh, tanh); Y_c is the last cell state."""

    name = "nn.lstm"
    gates = 4
    num_activations = 3
    num_states = 2
    initial_c = operand(optional=True, dtypes=FLOAT_TYPES)
    p = operand(optional=True, dtypes=FLOAT_TYPES)
    input_forget = attr(BOOL, False)
    y_c = result()


# -- onnxruntime's dynamically quantised LSTM ------------------------------------------------

_QWEIGHTS = frozenset({DType.I8, DType.U8})


class _QuantizedLSTM(Operation):
    """What nn.dynamic_quantize_lstm and its recurrent half share: the recurrent weights R
    [dirs, hidden, 4*hidden] (int8 or uint8, gates i, o, f, c along the last dim, as the
    transpose of nn.lstm's), their scale and zero point (per direction [dirs], or per gate
    column [dirs, 4*hidden]), and nn.lstm's state operands and attributes (layout 0 only)."""

    traits = frozenset({Pure})
    num_activations = 3

    activation_alpha = attr(FLOATS, ())
    activation_beta = attr(FLOATS, ())
    activations = attr(STRS, ())
    clip = attr(FLOAT, None, "pre-activation values are clipped to [-clip, clip]")
    direction = attr(STR, "forward")
    input_forget = attr(BOOL, False)
    y = result()
    y_h = result()
    y_c = result()

    @property
    def num_directions(self) -> int:
        return 2 if self.direction == "bidirectional" else 1

    def hidden(self):
        shape = tensor(self.r).shape
        return shape[1] if shape is not None and len(shape) == 3 else None

    def _results(self, seq, batch):
        d, h = self.num_directions, self.hidden()
        return [TensorType(DType.F32, (seq, d, batch, h))] + \
            [TensorType(DType.F32, (d, batch, h))] * 2

    def _check_quantized(self, v, scale, zero_point, rows: str) -> None:
        """A weight [dirs, rows, 4*hidden] with its per-direction or per-column parameters."""
        d, h = self.num_directions, self.hidden()
        shape = tensor(v).shape
        if shape is not None:
            if len(shape) != 3:
                raise PirError(f"{rows} weights must have rank 3, got {v.type}")
            for got, want, what in ((shape[0], d, "num_directions"),
                                    (shape[2], 4 * h if isinstance(h, int) else None,
                                     "4 * hidden_size")):
                if isinstance(got, int) and isinstance(want, int) and got != want:
                    raise PirError(f"{rows} weights {v.type}: dim must be {what} = {want}")
        if tensor(zero_point).dtype != tensor(v).dtype:
            raise PirError(f"the zero point's type {tensor(zero_point).dtype.value} differs "
                           f"from the weights' {tensor(v).dtype.value}")
        for p in (scale, zero_point):
            ps = tensor(p).shape
            if ps is None:
                continue
            want = [(d,), (d, 4 * h if isinstance(h, int) else None)]
            if not any(len(ps) == len(w) and all(not isinstance(a, int) or not isinstance(b, int)
                                                 or a == b for a, b in zip(ps, w)) for w in want):
                raise PirError(f"a scale or zero point of the {rows} weights must have shape "
                               f"[{d}] (per direction) or [{d}, 4 * hidden_size] (per column), "
                               f"got {p.type}")


class DynamicQuantizeLSTM(_QuantizedLSTM):
    """onnxruntime's com.microsoft::DynamicQuantizeLSTM: nn.lstm (gates i, o, f, c;
    activations (f, g, h) = (sigmoid, tanh, tanh)) whose two matrix products run in integers.

    W [dirs, input, 4*hidden] and R [dirs, hidden, 4*hidden] are int8 or uint8, with a scale and
    zero point per direction or per gate column.  X (all steps at once, over the first
    max(sequence_lens) steps) and, at every step, the previous step's output H (the initial
    state at the first step; zero for an entry whose sequence has ended) are quantised to uint8
    with the scale and zero point of their range, as nn.dynamic_quantize_linear; a product is
    the exact i32 sum of the centred operands, converted to f32 and multiplied by the two
    scales' f32 product.  The gates are X W + H R + (Wb + Rb)."""

    name = "nn.dynamic_quantize_lstm"
    x = operand(dtypes={DType.F32})
    w = operand(dtypes=_QWEIGHTS)
    r = operand(dtypes=_QWEIGHTS)
    b = operand(optional=True, dtypes={DType.F32})
    sequence_lens = operand(optional=True, dtypes={DType.I32})
    initial_h = operand(optional=True, dtypes={DType.F32})
    initial_c = operand(optional=True, dtypes={DType.F32})
    p = operand(optional=True, dtypes={DType.F32})
    w_scale = operand(dtypes={DType.F32})
    w_zero_point = operand(dtypes=_QWEIGHTS)
    r_scale = operand(dtypes={DType.F32})
    r_zero_point = operand(dtypes=_QWEIGHTS)

    def infer(self):
        t = tensor(self.x)
        seq = batch = None
        if t.shape is not None:
            if len(t.shape) != 3:
                raise PirError(f"x must have rank 3 ([seq, batch, input]), got {t}")
            seq, batch = t.shape[:2]
        return self._results(seq, batch)

    def verify_(self):
        _check_direction_and_activations(self)
        self._check_quantized(self.w, self.w_scale, self.w_zero_point, "input")
        self._check_quantized(self.r, self.r_scale, self.r_zero_point, "recurrent")


class DynamicQuantizeLSTMRecurrence(_QuantizedLSTM):
    """The recurrent half of nn.dynamic_quantize_lstm, which ``decompose`` leaves once the
    input projection is prim ops: ``xw`` [seq, batch, dirs, 4*hidden] holds X_t W of every step
    and direction (f32, without the bias; the layout of that product's dot_general), and the
    rest is as nn.dynamic_quantize_lstm."""

    name = "nn.dynamic_quantize_lstm_recurrence"
    xw = operand(dtypes={DType.F32})
    r = operand(dtypes=_QWEIGHTS)
    b = operand(optional=True, dtypes={DType.F32})
    sequence_lens = operand(optional=True, dtypes={DType.I32})
    initial_h = operand(optional=True, dtypes={DType.F32})
    initial_c = operand(optional=True, dtypes={DType.F32})
    p = operand(optional=True, dtypes={DType.F32})
    r_scale = operand(dtypes={DType.F32})
    r_zero_point = operand(dtypes=_QWEIGHTS)

    def infer(self):
        t = tensor(self.xw)
        seq = batch = None
        if t.shape is not None:
            if len(t.shape) != 4:
                raise PirError(f"xw must have rank 4 ([seq, batch, dirs, 4 * hidden]), got {t}")
            seq, batch = t.shape[:2]
        return self._results(seq, batch)

    def verify_(self):
        _check_direction_and_activations(self)
        self._check_quantized(self.r, self.r_scale, self.r_zero_point, "recurrent")
