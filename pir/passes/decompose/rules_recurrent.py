"""nn.dynamic_quantize_lstm: its input projection as prim ops, its recurrence as a scan.

onnxruntime computes X W for all steps in one quantised GEMM before the recurrence; so does
this rule: X quantised by its range (the rows past max(sequence_lens), which onnxruntime does
not read, zeroed for the min and max; 0 is in the range anyway), the centred i32 product with
every direction's W in one dot_general, and the rescale.  Those become ordinary fusion groups
and a library matmul.  The per-step part (H quantised by its range at every step, the gates)
needs a loop: nn.dynamic_quantize_lstm_recurrence, which pir.passes.decompose.
rules_recurrence writes as prim steps like the other recurrences.
"""

from __future__ import annotations

import numpy as np

from pir.ir.core import Operation, Value
from pir.ir.typerules import const_value, tensor
from pir.ir.types import DType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.index_math import iota
from pir.passes.decompose.registry import decomposes
from pir.passes.decompose.rules_linalg import dot, shape
from pir.passes.decompose.rules_quantize import dynamic_quantize

_I32, _F32 = DType.I32, DType.F32


def _along(b: PrimBuilder, p: Value, shape_: tuple, dims: tuple[int, int]) -> Value:
    """A per-direction ([dirs]) or per-column ([dirs, 4h]) parameter broadcast to ``shape_``,
    its dims laid along ``dims`` (direction, column)."""
    rank = tensor(p).rank
    along = dims[:rank]
    return b.op("broadcast_in_dim", p, broadcast_dimensions=along,
                result_type=tensor(p).with_shape(shape_))


def centred_column_sums(w: Value, zero_point: Value) -> np.ndarray | None:
    """``sum_k (W - zp)`` per direction and column ([dirs, 4h]) of a quantized LSTM's
    ``[dirs, K, 4h]`` weights (W or R) when they and their zero point (one per direction,
    or per direction and column) are constants; else None."""
    wv, zv = const_value(w), const_value(zero_point)
    if wv is None or zv is None or wv.ndim != 3:
        return None
    zv = zv.astype(np.int64).reshape(zv.shape[0], 1, -1)  # [dirs, 1, 1 or 4h]
    return (wv.astype(np.int64) - zv).sum(axis=1)


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
    sums = centred_column_sums(w, op.w_zero_point)
    # (with the weights known, X's zero point comes out of the product, as in
    # rules_quantize.integer_matmul: the product is then of X's uint8 values, which
    # codegen runs in VNNI's instruction)
    xc = b.cast(xq, _I32) if sums is not None else \
        b.sub(b.cast(xq, _I32), b.cast(x_zp, _I32))
    wc = b.sub(b.cast(w, _I32), _along(b, b.cast(op.w_zero_point, _I32), ws, (0, 2)))
    acc = dot(b, xc, wc, ([2], [1]))  # [seq, batch, dirs, 4h]
    if sums is not None:
        acc = b.sub(acc, b.mul(b.cast(x_zp, _I32), b.const(sums, _I32)))
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

