"""A kernel's TIR signature checked against its ``kernel.tvm`` op, once per op.

The kernels are built without TVM's per-call argument checks (``tirx.disable_assert``:
``pir.runtimes.tvm.library``): each call used to test every buffer argument's type code,
rank, dtype, shape, strides and alignment, code that was a quarter of the kernels' build
time (ResNet-50: 2.47 -> 1.85 s on one thread).  The runtime makes every argument itself,
from the op's types (inputs are checked against the function's signature before a run), so
what those checks could still catch is a ``.pir`` file whose kernel source does not take
what its op passes.  That is checked here instead, once, from the source's signature: the
parameters in order (the region's arguments, its non-splat constants, the dims it takes as
scalars, then its results), each with the op value's rank, element type and static dims.
"""

from __future__ import annotations

import re

import numpy as np

from pir.errors import PirError
from pir.ir.dialects.kernel import TvmKernelOp
from pir.ir.types import TensorType

__all__ = ["check_signature", "kernel_failure"]

_DEF = re.compile(r"^\s*def (\w+)\((.*?)\)(?:\s*->\s*[^:]+)?:\s*$", re.M | re.S)
_BUFFER = re.compile(r'T\.Buffer\(\((.*)\), "(\w+)"\)', re.S)


def check_signature(op: TvmKernelOp, params: list, free: list[str]) -> None:
    """Raise a PirError (naming the op) unless ``op``'s kernel source takes, in order, its
    region's arguments, ``params`` (the non-splat constants, numpy arrays), the ``free``
    dims as integers, and its results."""
    found = _signature(op)
    expected = [("argument", a.name, a.type) for a in op.body.block.args]
    expected += [("constant", None, p) for p in params]
    expected += [("dim", d, None) for d in free]
    expected += [("result", r.name, r.type) for r in op.results]
    if len(found) != len(expected):
        _fail(op, f"its source takes {len(found)} parameters, the op passes {len(expected)}")
    for (name, dims, dtype), (kind, what, t) in zip(found, expected):
        if kind == "dim":
            if dims is not None:
                _fail(op, f"parameter {name} is a buffer, the op passes dim {what}")
            continue
        if dims is None:
            _fail(op, f"parameter {name} is a scalar, the op passes a tensor")
        if kind == "constant":
            shape, want_dtype = tuple(t.shape), str(t.dtype)
        elif isinstance(t, TensorType) and t.shape is not None:
            shape, want_dtype = tuple(t.shape), np.dtype(t.dtype.numpy).name
        else:
            continue  # (an unranked value: nothing to compare)
        if dtype != want_dtype:
            _fail(op, f"parameter {name} holds {dtype}, the op passes {want_dtype}")
        if len(dims) != len(shape) or any(isinstance(s, int) and d != str(s)
                                          for d, s in zip(dims, shape)):
            _fail(op, f"parameter {name} has shape ({', '.join(dims)}), the op passes "
                      f"{list(shape)}")


def _signature(op: TvmKernelOp) -> list[tuple[str, list[str] | None, str | None]]:
    """(name, dims or None for a scalar, dtype) of each parameter of the op's kernel."""
    m = next((m for m in _DEF.finditer(op.source) if m.group(1) == op.symbol), None)
    if m is None:
        _fail(op, f"its source has no function {op.symbol}")
    params = []
    for text in _top_level(m.group(2)):
        name, _, kind = text.partition(":")
        kind = kind.strip()
        if kind in ("T.int32", "T.int64"):
            params.append((name.strip(), None, kind[2:]))
            continue
        b = _BUFFER.fullmatch(kind)
        if b is None:
            _fail(op, f"parameter {name.strip()} is not a buffer or an integer of the form "
                      "`pir codegen` writes")
        dims = [d.strip().strip('"') for d in _top_level(b.group(1))]
        params.append((name.strip(), dims, b.group(2)))
    return params


def _top_level(text: str) -> list[str]:
    """``text`` split at the commas outside any parentheses (empty pieces dropped)."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def _fail(op: TvmKernelOp, why: str):
    raise PirError(f"{op.describe()}: kernel {op.symbol} does not fit its op: {why}")


def kernel_failure(op: TvmKernelOp, e: Exception) -> PirError:
    """A kernel that raised (its bounds assertions, --check-bounds) as a user's error."""
    text = str(e).strip().splitlines()
    message = next((line for line in text if "out of bounds" in line), text[-1] if text else "")
    return PirError(f"kernel '{op.symbol}' (%{op.results[0].name}) failed: {message.strip()}")
