"""nn.lstm, nn.gru and the quantised LSTM's recurrence as prim ops: unrolled over a short
static sequence, else one nn.scan.

A recurrence needs a loop, which prim does not have; but a streaming model runs its LSTM one
step (or a few) at a time (Silero VAD: one step of a [1, batch, 128] state per 32 ms chunk),
and the step count is then a static dim of the input.  Such a recurrence becomes, per
direction, one product of the whole input with W (every step's input projection at once, as
onnxruntime computes it) and per step the product of H with R, the gates and the new state:
ordinary fusion groups and matmuls, compiled with the rest of the model instead of the
reference rule's per-step numpy.

Over a run-time length (or more than ``UNROLLED_STEPS`` steps: the unrolled program grows
with them) the projection is the same product, and the steps are one ``nn.scan`` per
direction over its rows (backwards for the reverse direction), whose body is the step in
prim ops (H R by the constant R, the gates): the body compiles into kernels, which the tvm
runtime runs through one plan per binding for every step.

The cells, with ONNX's gate order and default activations:

* LSTM (i, o, f, c): gates = x W + H R + Wb + Rb; C = f C + i tanh(c); H = o tanh(C), with
  sigmoid i, o, f;
* GRU (z, r, h): z, r = sigmoid(x W + H R + Wb + Rb) for their columns; the candidate is
  tanh(x Wh + (r H) Rh + Rbh + Wbh), or with ``linear_before_reset`` tanh(x Wh + r (H Rh +
  Rbh) + Wbh); H = (1 - z) candidate + z H.

onnxruntime's DynamicQuantizeLSTM (its input projection made by rules_recurrent, leaving
nn.dynamic_quantize_lstm_recurrence) takes the same two forms; its step quantises H by its
range, takes the centred i32 product with the constant R (centred once, before the steps)
and adds the rescaled sums to the step's projection before the bias, in the reference
rule's (onnxruntime's) order of additions.

Covered: any direction and layout, optional bias and initial states, zero or absent
peepholes, the default activations, no clip, no input_forget, and no sequence_lens (the
lengths would mask each step per batch entry; the quantised one would also quantise only
the active entries together).  Anything else stays as it is.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from pir.ir.core import Block, Operation, Region, Value
from pir.ir.typerules import const_value, tensor
from pir.ir.types import DType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes
from pir.passes.decompose.rules_linalg import dot, shape
from pir.passes.decompose.rules_quantize import dynamic_quantize
from pir.passes.decompose.rules_recurrent import centred_column_sums

_I32, _F32 = DType.I32, DType.F32

#: The longest sequence unrolled: a step is about a dozen prim ops per direction.
UNROLLED_STEPS = 16

_DEFAULTS = {"nn.lstm": ("sigmoid", "tanh", "tanh"), "nn.gru": ("sigmoid", "tanh"),
             "nn.dynamic_quantize_lstm_recurrence": ("sigmoid", "tanh", "tanh")}


def _covered(op: Operation) -> None:
    """Raise Keep unless the prim form computes exactly what the op does."""
    default = _DEFAULTS[op.name]
    acts = tuple(a.lower() for a in op.activations)
    if acts and acts not in (default, default * op.num_directions):
        raise Keep(f"activations {list(op.activations)}: only the default ones are written "
                   "in prim ops")
    if op.clip is not None or getattr(op, "input_forget", False):
        raise Keep("clip and input_forget are not written in prim ops")
    if op.sequence_lens is not None:
        raise Keep("sequence_lens masks each step per batch entry: not written in prim ops")
    p = getattr(op, "p", None)
    if p is not None:
        value = const_value(p)
        if value is None or np.any(value):
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


def _part(b: PrimBuilder, v: Value, k: int, h: int, axis: int, n: int = 1) -> Value:
    """Gates ``k`` to ``k + n`` of ``v``: its ``[k*h, (k+n)*h)`` along ``axis``."""
    return b.op("slice", v, start_indices=(k * h,), limit_indices=((k + n) * h,),
                axes=(axis,))


def _stack(b: PrimBuilder, parts: list[Value], axis: int) -> Value:
    """``parts`` (of one shape) stacked along a new dim ``axis``."""
    s = list(shape(b, parts[0]))
    one = tuple(s[:axis] + [1] + s[axis:])
    rows = [b.reshape(p, one) for p in parts]
    return rows[0] if len(rows) == 1 else b.op("concat", rows, dimension=axis)


# -- the cells: one step, from this step's x W + biases ([batch, G h]) and the states --------

Cell = Callable[[PrimBuilder, Value, list, "_Weights"], list]


class _Weights:
    """One direction's recurrent weights, made before any step (a scan's body reads them
    from the enclosing block): R ([G h, h]); for a GRU its rows of z and r and its rows of
    the candidate apart, and the recurrent bias it adds itself (Rbh; None if absent)."""

    def __init__(self, b: PrimBuilder, r: Value, rb: Value | None, h: int, lstm: bool):
        self.r, self.rb, self.h = r, rb, h
        if not lstm:
            self.r_zr, self.r_h = _part(b, r, 0, h, 0, 2), _part(b, r, 2, h, 0)


def _lstm_step(b: PrimBuilder, xt: Value, states: list, w: _Weights) -> list:
    hid, cell = states
    h = w.h
    gates = b.add(xt, dot(b, hid, w.r, ([1], [1])))
    i, o, f = (b.op("logistic", _part(b, gates, k, h, 1)) for k in range(3))
    cell = b.add(b.mul(f, cell), b.mul(i, b.op("tanh", _part(b, gates, 3, h, 1))))
    return [b.mul(o, b.op("tanh", cell)), cell]


def _gru_step(b: PrimBuilder, xt: Value, states: list, w: _Weights, linear_before_reset: bool
              ) -> list:
    (hid,) = states
    h = w.h
    zr = b.add(_part(b, xt, 0, h, 1, 2), dot(b, hid, w.r_zr, ([1], [1])))
    z = b.op("logistic", _part(b, zr, 0, h, 1))
    reset = b.op("logistic", _part(b, zr, 1, h, 1))
    rh = w.r_h
    if linear_before_reset:
        hr = dot(b, hid, rh, ([1], [1]))
        if w.rb is not None:
            hr = b.add(hr, b.broadcast_to(w.rb, shape(b, hr)))
        inner = b.mul(reset, hr)
    else:
        inner = dot(b, b.mul(reset, hid), rh, ([1], [1]))
        if w.rb is not None:
            inner = b.add(inner, b.broadcast_to(w.rb, shape(b, inner)))
    cand = b.op("tanh", b.add(_part(b, xt, 2, h, 1), inner))
    return [b.add(cand, b.mul(z, b.sub(hid, cand)))]  # (1 - z) cand + z H


# -- the steps: unrolled, or a scan -----------------------------------------------------------

def _unrolled(b: PrimBuilder, cell: Cell, xw: Value, states: list, w: _Weights, steps: int,
              backward: bool) -> tuple[Value, list]:
    out: list[Value] = [None] * steps  # type: ignore[list-item]
    _, batch, g = shape(b, xw)
    for t in (range(steps - 1, -1, -1) if backward else range(steps)):
        xt = b.op("slice", xw, start_indices=(t,), limit_indices=(t + 1,), axes=(0,))
        states = cell(b, b.reshape(xt, (batch, g)), states, w)
        out[t] = states[0]
    return _stack(b, out, 0), states


def _scanned(b: PrimBuilder, cell: Cell, xw: Value, states: list, w: _Weights, steps,
             backward: bool) -> tuple[Value, list]:
    """The steps as an nn.scan over the rows of ``xw``: (Y [seq, batch, h], the states)."""
    _, batch, g = shape(b, xw)
    types = [tensor(s) for s in states]
    body = Block([*types, types[0].with_shape((batch, g))],
                 [b._name() for _ in range(len(states) + 1)])  # the states, this step's x W
    inner = b.into(body)
    new = cell(inner, body.args[-1], list(body.args[:-1]), w)
    inner.create("nn.yield", [*new, new[0]], result_types=[])
    back = (1,) if backward else ()
    scan = b.create("nn.scan", [*states, xw], regions=[Region([body])],
                    result_types=[*types, types[0].with_shape((steps, batch, w.h))],
                    num_scan_inputs=1, scan_input_directions=back,
                    scan_output_directions=back)
    *states, y = scan.results
    return y, states


@decomposes("nn.lstm", "nn.gru")
def recurrence(b: PrimBuilder, op: Operation) -> list[Value]:
    lstm = op.name == "nn.lstm"
    x = op.x
    initial = [op.initial_h] + ([op.initial_c] if lstm else [])
    if op.layout == 1:  # [batch, seq, input] -> [seq, batch, input], states [batch, dirs, h]
        x = b.op("transpose", x, permutation=(1, 0, 2))
        initial = [None if v is None else b.op("transpose", v, permutation=(1, 0, 2))
                   for v in initial]
    steps, batch, _ = shape(b, x, f"the input of an {op.name[3:].upper()}")
    _covered(op)
    dirs, h = op.num_directions, shape(b, op.r)[-1]
    if not isinstance(h, int):
        raise Keep("the hidden size is not static")
    g = (4 if lstm else 3) * h
    lbr = bool(getattr(op, "linear_before_reset", False))

    def cell(bb, xt, states, w):
        return _lstm_step(bb, xt, states, w) if lstm else _gru_step(bb, xt, states, w, lbr)

    zeros = b.broadcast_to(b.const(0, tensor(x).dtype), (batch, h))
    recur = _unrolled if isinstance(steps, int) and steps <= UNROLLED_STEPS else _scanned
    ys, finals = [], []
    for d in range(dirs):
        w, r = _row(b, op.w, d), _row(b, op.r, d)  # [G h, input], [G h, h]
        xw = dot(b, x, w, ([2], [1]))  # [seq, batch, G h]: every step's projection at once
        rb_own = None
        if op.b is not None:
            bias = _row(b, op.b, d)  # [2 G h]: Wb then Rb
            wb, rb = _part(b, bias, 0, g, 0), _part(b, bias, 1, g, 0)
            if lstm:  # both biases join the projection
                joined = b.add(wb, rb)
            else:  # the GRU's Rbh sits inside the candidate's reset product
                joined = b.add(wb, b.op("concat", [_part(b, rb, 0, h, 0, 2),
                                                   b.broadcast_to(b.const(0, tensor(x).dtype),
                                                                  (h,))], dimension=0))
                rb_own = _part(b, rb, 2, h, 0)
            xw = b.add(xw, b.broadcast_to(joined, (steps, batch, g)))
        # (a state's batch dim may be spelled apart from the input's: Silero's state_1
        # and input_0, which ONNX requires equal)
        states = [_as_batch(b, _row(b, v, d), batch) if v is not None else zeros
                  for v in initial]
        backward = op.direction == "reverse" or d == 1
        weights = _Weights(b, r, rb_own, h, lstm)
        y, states = recur(b, cell, xw, states, weights, steps, backward)
        ys.append(y)  # [seq, batch, h]
        finals.append(states)
    y = _stack(b, ys, 1)  # [seq, dirs, batch, h]
    outs = [_stack(b, [f[k] for f in finals], 0) for k in range(len(initial))]  # [dirs, b, h]
    if op.layout == 1:
        y = b.op("transpose", y, permutation=(2, 0, 1, 3))  # [batch, seq, dirs, h]
        outs = [b.op("transpose", s, permutation=(1, 0, 2)) for s in outs]
    return [y, *outs]


# -- the quantised LSTM's recurrence (rules_recurrent makes its projection) ----------------

class _QuantizedWeights:
    """One direction's recurrent weights for the quantised cell: R centred by its zero point
    ([h, 4h] i32), its scale ([] or [4h]) and the two biases summed ([4h] or None)."""

    def __init__(self, b: PrimBuilder, op: Operation, d: int, h: int):
        r = _row(b, op.r, d)
        zp = b.cast(_row(b, op.r_zero_point, d), _I32)
        self.rc = b.sub(b.cast(r, _I32), zp if tensor(zp).rank == 0
                        else b.broadcast_to(zp, shape(b, r)))
        self.scale, self.h = _row(b, op.r_scale, d), h
        # sum_k (R - zp) per column, when R and its zero point are constants: H's zero
        # point then comes out of each step's product (see _quantized_step)
        sums = centred_column_sums(op.r, op.r_zero_point)
        self.sums = None if sums is None else sums[d]
        self.bias = None
        if op.b is not None:
            bias = _row(b, op.b, d)
            self.bias = b.add(_part(b, bias, 0, 4 * h, 0), _part(b, bias, 1, 4 * h, 0))


def _quantized_step(b: PrimBuilder, xt: Value, states: list, w: _QuantizedWeights) -> list:
    """One step, as the reference rule (and onnxruntime) computes it: the gates are
    ((x W) + (H R)) + (Wb + Rb), H R the rescaled i32 product of H quantised by its range."""
    hid, cell = states
    h = w.h
    q, scale, zp = dynamic_quantize(b, hid)
    if w.sums is None:
        acc = dot(b, b.sub(b.cast(q, _I32), b.cast(zp, _I32)), w.rc, ([1], [0]))  # [batch, 4h]
    else:
        # (q - zp) R = q R - zp colsum(R): the product of H's uint8 values (VNNI's)
        acc = dot(b, b.cast(q, _I32), w.rc, ([1], [0]))
        acc = b.sub(acc, b.mul(b.cast(zp, _I32), b.const(w.sums, _I32)))
    factor = b.mul(scale, w.scale)
    hr = b.mul(b.cast(acc, _F32), factor if tensor(factor).rank == 0
               else b.broadcast_to(factor, shape(b, acc)))
    gates = b.add(xt, hr)
    if w.bias is not None:
        gates = b.add(gates, b.broadcast_to(w.bias, shape(b, gates)))
    i, o, f = (b.op("logistic", _part(b, gates, k, h, 1)) for k in range(3))
    cell = b.add(b.mul(f, cell), b.mul(i, b.op("tanh", _part(b, gates, 3, h, 1))))
    return [b.mul(o, b.op("tanh", cell)), cell]


@decomposes("nn.dynamic_quantize_lstm_recurrence")
def dynamic_quantize_lstm_recurrence(b: PrimBuilder, op: Operation) -> list[Value]:
    steps, batch, dirs, g = shape(b, op.xw, "the input projection of a quantised LSTM")
    _covered(op)
    h = shape(b, op.r)[1]
    if not isinstance(h, int) or g != 4 * h:
        raise Keep("the hidden size is not static")
    zeros = b.broadcast_to(b.const(0, _F32), (batch, h))
    recur = _unrolled if isinstance(steps, int) and steps <= UNROLLED_STEPS else _scanned
    ys, finals = [], []
    for d in range(dirs):
        part = b.op("slice", op.xw, start_indices=(d,), limit_indices=(d + 1,), axes=(2,))
        xw = b.reshape(part, (steps, batch, g))
        states = [_as_batch(b, _row(b, v, d), batch) if v is not None else zeros
                  for v in (op.initial_h, op.initial_c)]
        backward = op.direction == "reverse" or d == 1
        y, states = recur(b, _quantized_step, xw, states, _QuantizedWeights(b, op, d, h),
                          steps, backward)
        ys.append(y)
        finals.append(states)
    outs = [_stack(b, [f[k] for f in finals], 0) for k in range(2)]  # [dirs, batch, h]
    return [_stack(b, ys, 1), *outs]  # y: [seq, dirs, batch, h]
