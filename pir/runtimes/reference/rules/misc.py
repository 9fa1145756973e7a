"""Reference rules for the optimizer steps nn.adagrad, nn.adam, nn.momentum.

Scalars are combined in float64 and each result is cast to its tensor's element type."""

from __future__ import annotations

import numpy as np

from pir.runtimes.reference.registry import evaluates


def _adagrad(op, r, t, x, g, h):
    g = g + op.norm_coefficient * x
    h_new = h + g * g
    rate = r / (1 + t * op.decay_factor)
    return x - rate * g / (np.sqrt(h_new) + op.epsilon), h_new


def _adam(op, r, t, x, g, v, h):
    g = g + op.norm_coefficient * x
    v_new = op.alpha * v + (1 - op.alpha) * g
    h_new = op.beta * h + (1 - op.beta) * g * g
    if t > 0:  # bias correction of both moments
        r = r * np.sqrt(1 - op.beta ** t) / (1 - op.alpha ** t)
    x_new = x - r * v_new / (np.sqrt(h_new) + op.epsilon)
    return (1 - op.norm_coefficient_post) * x_new, v_new, h_new


def _momentum(op, r, t, x, g, v):
    g = g + op.norm_coefficient * x
    v_new = op.alpha * v + (op.beta if t > 0 else 1.0) * g
    step = g + op.alpha * v_new if op.mode == "nesterov" else v_new
    return x - r * step, v_new


_STEPS = {"nn.adagrad": _adagrad, "nn.adam": _adam, "nn.momentum": _momentum}


@evaluates(*_STEPS)
def optimizer(op, r, t, *inputs):
    """Applies the op's step to each of its n tensors; results grouped as declared."""
    step, n = _STEPS[op.name], op.count
    r, t = float(r), int(t)
    groups = [inputs[i * n:(i + 1) * n] for i in range(len(op.groups))]
    new = [step(op, r, t, *(grp[k].astype(np.float64) for grp in groups)) for k in range(n)]
    out = []
    for j in range(len(op.updated)):
        out += [new[k][j] for k in range(n)]
    return tuple(a.astype(r.type.dtype.numpy) for a, r in zip(out, op.results))
