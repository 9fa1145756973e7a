"""Reference rules for elementwise math."""

from __future__ import annotations

import numpy as np

from pir.runtimes.reference.registry import evaluates


@evaluates("nn.add")
def add(op, a, b):
    return a + b


@evaluates("nn.sub")
def sub(op, a, b):
    return a - b


@evaluates("nn.mul")
def mul(op, a, b):
    return a * b


@evaluates("nn.div")
def div(op, a, b):
    if a.dtype.kind in "iu":  # ONNX integer division truncates toward zero
        return np.trunc(a / b).astype(a.dtype)
    return a / b


@evaluates("nn.relu")
def relu(op, x):
    return np.maximum(x, np.zeros((), x.dtype))
