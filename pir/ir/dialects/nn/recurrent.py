"""Recurrent layers: ONNX RNN, GRU and LSTM.

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

__all__ = ["RNN", "GRU", "LSTM", "DIRECTIONS", "ACTIVATIONS"]

DIRECTIONS = ("forward", "reverse", "bidirectional")
#: Activation functions the recurrent ops accept (lower case), with how many of
#: (activation_alpha, activation_beta) each one consumes.
ACTIVATIONS = {
    "relu": (0, 0), "tanh": (0, 0), "sigmoid": (0, 0), "softsign": (0, 0), "softplus": (0, 0),
    "affine": (1, 1), "leakyrelu": (1, 0), "thresholdedrelu": (1, 0), "scaledtanh": (1, 1),
    "hardsigmoid": (1, 1), "elu": (1, 0),
}


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
        if self.direction not in DIRECTIONS:
            raise PirError(f"direction must be one of {', '.join(DIRECTIONS)}, "
                           f"got '{self.direction}'")
        if self.layout not in (0, 1):
            raise PirError(f"layout must be 0 or 1, got {self.layout}")
        acts = self.activations
        if acts and len(acts) not in (self.num_activations,
                                      self.num_activations * self.num_directions):
            raise PirError(f"expects {self.num_activations * self.num_directions} activations "
                           f"for direction '{self.direction}', got {len(acts)}")
        for a in acts:
            if a.lower() not in ACTIVATIONS:
                raise PirError(f"unknown activation '{a}'")
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
