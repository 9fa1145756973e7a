"""nn.dynamic_quantize_lstm: its input projection as prim ops, its recurrence as a scan.

onnxruntime computes X W for all steps in one quantised GEMM before the recurrence; so does
this rule: X quantised by its range (the rows past max(sequence_lens), which onnxruntime does
not read, zeroed for the min and max; 0 is in the range anyway), the centred i32 product with
every direction's W in one dot_general, and the rescale.  Those become ordinary fusion groups
and a library matmul.  The per-step part (H quantised by its range at every step, the gates)
needs a loop: nn.dynamic_quantize_lstm_recurrence, which the second rule writes as one
nn.scan per direction (unrolled over a short static sequence), its body the step in prim
ops: H quantised by its range, the centred i32 product with the constant R, the rescale, the
gates (pir.passes.decompose.rules_recurrence's cell, in onnxruntime's order of additions).
With sequence_lens (each step masks the batch entries past their length, and quantises only
the active ones together) it stays, and runs its reference rule.
"""

from __future__ import annotations

from pir.ir.core import Operation, Value
from pir.ir.typerules import tensor
from pir.ir.types import DType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.index_math import iota
from pir.passes.decompose.registry import Keep, decomposes
from pir.passes.decompose.rules_linalg import dot, shape
from pir.passes.decompose.rules_recurrence import (UNROLLED_STEPS, _as_batch, _covered, _part,
                                                   _row, _scanned, _stack, _unrolled)
from pir.passes.decompose.rules_quantize import dynamic_quantize

_I32, _F32 = DType.I32, DType.F32


def _along(b: PrimBuilder, p: Value, shape_: tuple, dims: tuple[int, int]) -> Value:
    """A per-direction ([dirs]) or per-column ([dirs, 4h]) parameter broadcast to ``shape_``,
    its dims laid along ``dims`` (direction, column)."""
    rank = tensor(p).rank
    along = dims[:rank]
    return b.op("broadcast_in_dim", p, broadcast_dimensions=along,
                result_type=tensor(p).with_shape(shape_))


@decomposes("nn.dynamic_quantize_lstm")
def dynamic_quantize_lstm(b: PrimBuilder, op: Operation) -> list[Value]:
    x, w = op.x, op.w
    xs = shape(b, x, "the input of a quantised LSTM")
    ws = shape(b, w, "its input weights")
    span = None
    if op.sequence_lens is not None:
        steps = b.reduce("max", op.sequence_lens, [0], keepdims=False)
        valid = b.op("lt", iota(b, xs, 0, _I32), b.broadcast_to(steps, xs))
        span = b.op("select", valid, x, b.zeros_like(x))
    xq, x_scale, x_zp = dynamic_quantize(b, x, span)
    xc = b.sub(b.cast(xq, _I32), b.cast(x_zp, _I32))
    wc = b.sub(b.cast(w, _I32), _along(b, b.cast(op.w_zero_point, _I32), ws, (0, 2)))
    acc = dot(b, xc, wc, ([2], [1]))  # [seq, batch, dirs, 4h]
    out = shape(b, acc)
    scale = b.mul(x_scale, op.w_scale)  # the f32 product onnxruntime forms first
    xw = b.mul(b.cast(acc, _F32), _along(b, scale, out, (2, 3)))
    operands = [xw, op.r, op.b, op.sequence_lens, op.initial_h, op.initial_c, op.p,
                op.r_scale, op.r_zero_point]
    attrs = {k: getattr(op, k) for k in ("activation_alpha", "activation_beta", "activations",
                                         "clip", "direction", "input_forget")
             if k in op.attributes}  # the defaults stay implicit, as in the op
    rest = b.create("nn.dynamic_quantize_lstm_recurrence", *operands,
                    result_types=[r.type for r in op.results], **attrs)
    return list(rest.results)


class _QuantizedWeights:
    """One direction's recurrent weights for the quantised cell: R centred by its zero point
    ([h, 4h] i32), its scale ([] or [4h]) and the two biases summed ([4h] or None)."""

    def __init__(self, b: PrimBuilder, op: Operation, d: int, h: int):
        r = _row(b, op.r, d)
        zp = b.cast(_row(b, op.r_zero_point, d), _I32)
        self.rc = b.sub(b.cast(r, _I32), zp if tensor(zp).rank == 0
                        else b.broadcast_to(zp, shape(b, r)))
        self.scale, self.h = _row(b, op.r_scale, d), h
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
    acc = dot(b, b.sub(b.cast(q, _I32), b.cast(zp, _I32)), w.rc, ([1], [0]))  # [batch, 4h]
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
