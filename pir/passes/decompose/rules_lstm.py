"""nn.lstm as prim ops: unrolled over a short static sequence, else one nn.scan.

A recurrence needs a loop, which prim does not have; but a streaming model runs its LSTM one
step (or a few) at a time (Silero VAD: one step of a [1, batch, 128] state per 32 ms chunk),
and the step count is then a static dim of the input.  Such an LSTM becomes, per direction,
one product of the whole input with W (every step's input projection at once, as
onnxruntime computes it) and per step the product of H with R, the gates (sigmoid for i, o
and f, tanh for the cell) and the new C and H: ordinary fusion groups and matmuls, compiled
with the rest of the model instead of the reference rule's per-step numpy.

Over a run-time length (or more than ``UNROLLED_STEPS`` steps: the unrolled program grows
with them) the projection is the same product, and the steps are one ``nn.scan`` per
direction over its rows (backwards for the reverse direction), whose body is the step in
prim ops (H R by the constant R, the gates): the body compiles into kernels, which the tvm
runtime runs through one plan per binding for every step.

Covered: any direction and layout, optional bias and initial states, zero or absent
peepholes, the default activations, no clip, no input_forget, and no sequence_lens (the
lengths would mask each step per batch entry).  Anything else stays nn.lstm.
"""

from __future__ import annotations

import numpy as np

from pir.ir.core import Block, Operation, Region, Value
from pir.ir.typerules import const_value, tensor
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes
from pir.passes.decompose.rules_linalg import dot, shape

#: The longest sequence unrolled: a step is about a dozen prim ops per direction.
UNROLLED_STEPS = 16

_DEFAULT = ("sigmoid", "tanh", "tanh")


def _covered(op: Operation) -> None:
    """Raise Keep unless the prim form computes exactly what the op does."""
    acts = tuple(a.lower() for a in op.activations)
    if acts and acts not in (_DEFAULT, _DEFAULT * op.num_directions):
        raise Keep(f"activations {list(op.activations)}: only the default ones are written "
                   "in prim ops")
    if op.clip is not None or op.input_forget:
        raise Keep("clip and input_forget are not written in prim ops")
    if op.sequence_lens is not None:
        raise Keep("sequence_lens masks each step per batch entry: not written in prim ops")
    if op.p is not None:
        p = const_value(op.p)
        if p is None or np.any(p):
            raise Keep("peepholes are not written in prim ops")


def _row(b: PrimBuilder, v: Value, d: int) -> Value:
    """``v[d]`` of a per-direction operand ([dirs, ...] -> [...])."""
    s = shape(b, v)
    part = b.op("slice", v, start_indices=(d,), limit_indices=(d + 1,), axes=(0,))
    return b.reshape(part, s[1:])


def _as_batch(b: PrimBuilder, state: Value, batch) -> Value:
    """A [batch, h] state with its batch dim spelled as the input's."""
    s = shape(b, state)
    return state if s[0] == batch else b.reshape(state, (batch, s[1]))


def _cols(b: PrimBuilder, v: Value, k: int, h: int) -> Value:
    """Columns ``k*h`` to ``(k+1)*h`` of a [batch, 4h] value: gate ``k``."""
    return b.op("slice", v, start_indices=(k * h,), limit_indices=((k + 1) * h,), axes=(1,))


def _stack(b: PrimBuilder, parts: list[Value], axis: int) -> Value:
    """``parts`` (of one shape) stacked along a new dim ``axis``."""
    s = list(shape(b, parts[0]))
    one = tuple(s[:axis] + [1] + s[axis:])
    rows = [b.reshape(p, one) for p in parts]
    return rows[0] if len(rows) == 1 else b.op("concat", rows, dimension=axis)


def _step(b: PrimBuilder, xt: Value, hid: Value, cell: Value, r: Value, batch,
          h: int) -> tuple[Value, Value]:
    """One step: the gates of ``xt`` (this step's x W + biases, [batch, 4h]) and H R, and
    the new H and C."""
    gates = b.add(xt, dot(b, hid, r, ([1], [1])))
    i, o, f = (b.op("logistic", _cols(b, gates, k, h)) for k in range(3))
    cell = b.add(b.mul(f, cell), b.mul(i, b.op("tanh", _cols(b, gates, 3, h))))
    return b.mul(o, b.op("tanh", cell)), cell


def _unrolled(b: PrimBuilder, xw: Value, hid: Value, cell: Value, r: Value, steps: int,
              batch, h: int, backward: bool) -> tuple[Value, Value, Value]:
    out: list[Value] = [None] * steps  # type: ignore[list-item]
    for t in (range(steps - 1, -1, -1) if backward else range(steps)):
        xt = b.op("slice", xw, start_indices=(t,), limit_indices=(t + 1,), axes=(0,))
        hid, cell = _step(b, b.reshape(xt, (batch, 4 * h)), hid, cell, r, batch, h)
        out[t] = hid
    return _stack(b, out, 0), hid, cell


def _scanned(b: PrimBuilder, xw: Value, hid: Value, cell: Value, r: Value, steps,
             batch, h: int, backward: bool) -> tuple[Value, Value, Value]:
    """The steps as an nn.scan over the rows of ``xw``: (Y [seq, batch, h], H, C)."""
    state = tensor(hid)
    body = Block([state, state, state.with_shape((batch, 4 * h))],
                 [b._name() for _ in range(3)])  # H, C and this step's x W
    inner = b.into(body)
    h_new, c_new = _step(inner, body.args[2], body.args[0], body.args[1], r, batch, h)
    inner.create("nn.yield", [h_new, c_new, h_new], result_types=[])
    back = (1,) if backward else ()
    scan = b.create("nn.scan", [hid, cell, xw], regions=[Region([body])],
                    result_types=[state, state, state.with_shape((steps, batch, h))],
                    num_scan_inputs=1, scan_input_directions=back,
                    scan_output_directions=back)
    hid, cell, y = scan.results
    return y, hid, cell


@decomposes("nn.lstm")
def lstm(b: PrimBuilder, op: Operation) -> list[Value]:
    x, init_h, init_c = op.x, op.initial_h, op.initial_c
    if op.layout == 1:  # [batch, seq, input] -> [seq, batch, input], states [batch, dirs, h]
        x = b.op("transpose", x, permutation=(1, 0, 2))
        init_h, init_c = (None if v is None else b.op("transpose", v, permutation=(1, 0, 2))
                          for v in (init_h, init_c))
    steps, batch, _ = shape(b, x, "the input of an LSTM")
    _covered(op)
    dirs, h = op.num_directions, shape(b, op.r)[-1]
    if not isinstance(h, int):
        raise Keep("the hidden size is not static")
    dtype = tensor(x).dtype
    zeros = b.broadcast_to(b.const(0, dtype), (batch, h))
    recur = _unrolled if isinstance(steps, int) and steps <= UNROLLED_STEPS else _scanned
    ys, hs, cs = [], [], []
    for d in range(dirs):
        w, r = _row(b, op.w, d), _row(b, op.r, d)  # [4h, input], [4h, h]
        xw = dot(b, x, w, ([2], [1]))  # [seq, batch, 4h]: every step's projection at once
        if op.b is not None:
            bias = _row(b, op.b, d)  # [8h]: Wb then Rb
            wb = b.op("slice", bias, start_indices=(0,), limit_indices=(4 * h,), axes=(0,))
            rb = b.op("slice", bias, start_indices=(4 * h,), limit_indices=(8 * h,), axes=(0,))
            xw = b.add(xw, b.broadcast_to(b.add(wb, rb), (steps, batch, 4 * h)))
        # (a state's batch dim may be spelled apart from the input's: Silero's state_1
        # and input_0, which ONNX requires equal)
        hid = _as_batch(b, _row(b, init_h, d), batch) if init_h is not None else zeros
        cell = _as_batch(b, _row(b, init_c, d), batch) if init_c is not None else zeros
        backward = op.direction == "reverse" or d == 1
        y, hid, cell = recur(b, xw, hid, cell, r, steps, batch, h, backward)
        ys.append(y)  # [seq, batch, h]
        hs.append(hid)
        cs.append(cell)
    y = _stack(b, ys, 1)  # [seq, dirs, batch, h]
    y_h, y_c = _stack(b, hs, 0), _stack(b, cs, 0)  # [dirs, batch, h]
    if op.layout == 1:
        y = b.op("transpose", y, permutation=(2, 0, 1, 3))  # [batch, seq, dirs, h]
        y_h = b.op("transpose", y_h, permutation=(1, 0, 2))
        y_c = b.op("transpose", y_c, permutation=(1, 0, 2))
    return [y, y_h, y_c]
