"""Optimizer steps of ONNX's preview training domain: Adagrad, Adam, Momentum.

Each op updates n tensors at once: ``inputs`` holds n tensors per group (X..., G..., then the
optimizer's state tensors), ``outputs`` the new X... then the new state tensors, in the order
of the ONNX ops.  ``r`` is the learning rate and ``t`` the number of steps taken so far.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import FLOAT, STR
from pir.ir.core import Operation
from pir.ir.dialects.nn.base import FLOATS
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import tensor
from pir.ir.types import DType

__all__ = ["Adagrad", "Adam", "Momentum"]


class _Optimizer(Operation):
    """Shared declaration: r, t, then ``groups`` lists of n tensors."""

    traits = frozenset({Pure})
    r = operand(dtypes=FLOATS)
    t = operand(dtypes={DType.I64})
    inputs = operand(variadic=True, dtypes=FLOATS)
    outputs = result(variadic=True)
    #: the input groups, in order; the outputs are the new values of ``updated``
    groups: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """n, the number of tensors the op updates."""
        k = len(self.groups)
        if len(self.inputs) % k:
            raise PirError(f"expects {k} * n inputs after r and t ({', '.join(self.groups)}), "
                           f"got {len(self.inputs)}")
        return len(self.inputs) // k

    def group(self, values, name: str) -> list:
        n = self.count
        i = self.groups.index(name)
        return list(values[i * n:(i + 1) * n])

    def infer(self):
        types = []
        for name in self.updated:
            types += [tensor(v) for v in self.group(self.inputs, name)]
        return types

    def verify_(self):
        for v, what in ((self.r, "r"), (self.t, "t")):
            if tensor(v).shape not in (None, ()):
                raise PirError(f"{what} must be a scalar, got {v.type}")
        n = self.count
        for i in range(n):
            shapes = {str(tensor(self.group(self.inputs, g)[i])) for g in self.groups}
            if len(shapes) > 1:
                raise PirError(f"tensor {i}: {', '.join(self.groups)} must have one type, got "
                               f"{', '.join(sorted(shapes))}")


class Adagrad(_Optimizer):
    """g' = g + norm_coefficient * x; h_new = h + g'^2;
    x_new = x - r / (1 + t * decay_factor) * g' / (sqrt(h_new) + epsilon)."""

    name = "nn.adagrad"
    groups = ("x", "g", "h")
    updated = ("x", "h")
    decay_factor = attr(FLOAT, 0.0)
    epsilon = attr(FLOAT, 1e-6)
    norm_coefficient = attr(FLOAT, 0.0)


class Adam(_Optimizer):
    """g' = g + norm_coefficient * x; v_new = alpha v + (1 - alpha) g';
    h_new = beta h + (1 - beta) g'^2; x_new = (1 - norm_coefficient_post) *
    (x - r' v_new / (sqrt(h_new) + epsilon)), r' = r sqrt(1 - beta^t) / (1 - alpha^t) if t > 0."""

    name = "nn.adam"
    groups = ("x", "g", "v", "h")
    updated = ("x", "v", "h")
    alpha = attr(FLOAT, 0.9)
    beta = attr(FLOAT, 0.999)
    epsilon = attr(FLOAT, 1e-6)
    norm_coefficient = attr(FLOAT, 0.0)
    norm_coefficient_post = attr(FLOAT, 0.0)


class Momentum(_Optimizer):
    """g' = g + norm_coefficient * x; v_new = alpha v + beta' g' (beta' = 1 at t = 0);
    standard: x_new = x - r v_new; nesterov: x_new = x - r (g' + alpha v_new)."""

    name = "nn.momentum"
    groups = ("x", "g", "v")
    updated = ("x", "v")
    alpha = attr(FLOAT)
    beta = attr(FLOAT)
    mode = attr(STR)
    norm_coefficient = attr(FLOAT)

    def verify_(self):
        super().verify_()
        if self.mode not in ("standard", "nesterov"):
            raise PirError(f"mode must be 'standard' or 'nesterov', got '{self.mode}'")
