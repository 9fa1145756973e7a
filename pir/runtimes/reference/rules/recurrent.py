"""Reference rules for nn.rnn, nn.gru and nn.lstm.

One driver runs every direction over the sequence (honouring ``sequence_lens``: a batch entry
stops updating its state after its length, and its Y is zero there); each op only supplies its
cell, one time step for the whole batch.  Arithmetic stays in the input's element type, as in
ONNX Runtime.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from pir.ir.dialects.nn.recurrent import ACTIVATIONS
from pir.runtimes.reference.registry import evaluates, operand_arrays
from pir.runtimes.reference.rules.quantize import dynamic_quantize

Fn = Callable[[np.ndarray], np.ndarray]

#: (alpha, beta) used when activation_alpha/beta run out (ONNX Runtime's defaults).
_PARAM_DEFAULTS = {"leakyrelu": (0.01, 0.0), "thresholdedrelu": (1.0, 0.0),
                   "hardsigmoid": (0.2, 0.5), "elu": (1.0, 0.0), "affine": (1.0, 0.0),
                   "scaledtanh": (1.0, 1.0)}
_LSTM_ACTIVATIONS = ("sigmoid", "tanh", "tanh")
_DEFAULT_ACTIVATIONS = {"nn.rnn": ("tanh",), "nn.gru": ("sigmoid", "tanh"),
                        "nn.lstm": _LSTM_ACTIVATIONS,
                        "nn.dynamic_quantize_lstm": _LSTM_ACTIVATIONS,
                        "nn.dynamic_quantize_lstm_recurrence": _LSTM_ACTIVATIONS}


def _activation(name: str, alpha: float, beta: float) -> Fn:
    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    table: dict[str, Fn] = {
        "relu": lambda x: np.maximum(x, 0),
        "tanh": np.tanh,
        "sigmoid": sigmoid,
        "affine": lambda x: alpha * x + beta,
        "leakyrelu": lambda x: np.where(x >= 0, x, alpha * x),
        "thresholdedrelu": lambda x: np.where(x > alpha, x, 0),
        "scaledtanh": lambda x: alpha * np.tanh(beta * x),
        "hardsigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1)),
        "softsign": lambda x: x / (1 + np.abs(x)),
        "softplus": lambda x: np.log1p(np.exp(x)),
    }
    return table[name]


def _activations(op) -> list[list[Fn]]:
    """The activation functions of each direction.  activation_alpha and activation_beta
    are consumed in order by the functions that take them."""
    per_dir, dirs = op.num_activations, op.num_directions
    names = [n.lower() for n in (op.activations or _DEFAULT_ACTIVATIONS[op.name])]
    if len(names) == per_dir:
        names = names * dirs  # one direction's list serves both
    alphas, betas = iter(op.activation_alpha), iter(op.activation_beta)
    fns = []
    for n in names:
        uses_alpha, uses_beta = ACTIVATIONS[n]
        da, db = _PARAM_DEFAULTS.get(n, (0.0, 0.0))
        alpha = next(alphas, da) if uses_alpha else da
        beta = next(betas, db) if uses_beta else db
        fns.append(_activation(n, alpha, beta))
    return [fns[d * per_dir:(d + 1) * per_dir] for d in range(dirs)]


def _clipper(clip: float | None) -> Fn:
    if clip is None:
        return lambda x: x
    return lambda x: np.clip(x, -clip, clip)


# Each cell takes ``xw``, the step's input projection x W^T + Wb (computed for every step
# at once, one product instead of one per step), and adds the recurrent part.

def _rnn_cell(xw, states, r, rb, p, fns, clip, op):
    (h,) = states
    return (fns[0](clip(xw + h @ r.T + rb)),)


def _gru_cell(xw, states, r, rb, p, fns, clip, op):
    (h,) = states
    f, g = fns
    xz, xr, xh = np.split(xw, 3, axis=-1)
    rz, rr, rh = np.split(r, 3)
    rbz, rbr, rbh = np.split(rb, 3)
    z = f(clip(xz + h @ rz.T + rbz))
    reset = f(clip(xr + h @ rr.T + rbr))
    if op.linear_before_reset:
        cand = g(clip(xh + reset * (h @ rh.T + rbh)))
    else:
        cand = g(clip(xh + (reset * h) @ rh.T + rbh))
    return ((1 - z) * cand + z * h,)


def _lstm_cell(xw, states, r, rb, p, fns, clip, op):
    h, c = states
    f, g, act_h = fns
    gates = xw + h @ r.T + rb
    if p is None and not op.input_forget:
        # no peepholes: the i, o, f gates (ONNX's order) are one activation of 3h columns
        n = c.shape[-1]
        i, o, forget = np.split(f(clip(gates[..., :3 * n])), 3, axis=-1)
        c_new = forget * c + i * g(clip(gates[..., 3 * n:]))
        return o * act_h(c_new), c_new
    gi, go, gf, gc = np.split(gates, 4, axis=-1)
    p = np.zeros(3 * c.shape[-1], c.dtype) if p is None else p
    pi, po, pf = np.split(p, 3)
    i = f(clip(gi + pi * c))
    forget = 1 - i if op.input_forget else f(clip(gf + pf * c))
    c_new = forget * c + i * g(clip(gc))
    o = f(clip(go + po * c_new))
    return o * act_h(c_new), c_new


_CELLS = {"nn.rnn": _rnn_cell, "nn.gru": _gru_cell, "nn.lstm": _lstm_cell}


@evaluates("nn.rnn", "nn.gru", "nn.lstm")
def recurrent(op, *arrays):
    a = operand_arrays(op, arrays)
    x, w, r = a["x"], a["w"], a["r"]
    batch_first = op.layout == 1
    if batch_first:
        x = x.swapaxes(0, 1)
    seq, batch, _ = x.shape
    dirs, hidden, dtype = op.num_directions, r.shape[-1], x.dtype
    gates = op.gates
    b = a["b"] if a["b"] is not None else np.zeros((dirs, 2 * gates * hidden), dtype)
    p = a.get("p")
    if p is not None and not p.any():
        p = None  # zero peepholes: as if there were none (the cell's faster form)
    p = [None] * dirs if p is None else p
    lens = a["sequence_lens"]
    lens = np.full(batch, seq) if lens is None else lens.astype(np.int64)
    initial = [a["initial_h"]] + ([a["initial_c"]] if op.num_states == 2 else [])
    initial = [np.zeros((dirs, batch, hidden), dtype) if s is None
               else (s.swapaxes(0, 1) if batch_first else s) for s in initial]
    cell, fns, clip = _CELLS[op.name], _activations(op), _clipper(op.clip)

    y = np.zeros((seq, dirs, batch, hidden), dtype)
    finals = []
    full = bool((lens >= seq).all())  # no entry ends early: no masking
    for d in range(dirs):
        states = [s[d] for s in initial]
        backward = op.direction == "reverse" or d == 1
        wb, rb = np.split(b[d], 2)
        xw = (x.reshape(seq * batch, -1) @ w[d].T + wb).reshape(seq, batch, -1)
        for t in (range(seq - 1, -1, -1) if backward else range(seq)):
            new = cell(xw[t], states, r[d], rb, p[d], fns[d], clip, op)
            if full:
                states = [n.astype(dtype, copy=False) for n in new]
                y[t, d] = new[0]
                continue
            active = (t < lens)[:, None]  # entries past their length keep their state
            states = [np.where(active, n, s).astype(dtype) for n, s in zip(new, states)]
            y[t, d] = np.where(active, new[0], 0)
        finals.append(states)
    outs = [np.stack([f[k] for f in finals]) for k in range(op.num_states)]
    if batch_first:
        y = y.transpose(2, 0, 1, 3)
        outs = [s.swapaxes(0, 1) for s in outs]
    return (y, *outs)


# -- nn.dynamic_quantize_lstm: onnxruntime's DynamicQuantizeLSTM ------------------------------
#
# What onnxruntime computes (onnxruntime/core/providers/cpu/rnn/uni_directional_lstm.cc with
# one thread): X W for all steps in one quantised GEMM, then per step H_{t-1} R, each operand
# quantised to ui8 by its own range.  The step loop runs every batch entry in step order from
# its own start (a reversed entry from its last valid position), so the entries quantised
# together at step s are the ones onnxruntime groups.


def _centered(w: np.ndarray, zp: np.ndarray) -> np.ndarray:
    """Weights [rows, 4h] minus their zero point (one, or one per column): exact integers,
    held as float64 for BLAS (see _qdot)."""
    return (w.astype(np.int32) - zp.astype(np.int32)).astype(np.float64)


def _qdot(a: np.ndarray, w_centered: np.ndarray, w_scale: np.ndarray,
          span: np.ndarray | None = None) -> np.ndarray:
    """f32 ``a`` [rows, k] quantised by the range of ``span`` (default: a), times the centred
    weights [k, n]: the exact i32 sum, in f32, times the f32 product of the scales."""
    q, scale, zp = dynamic_quantize(a, span)
    # the exact integer sum, taken by BLAS in float64 (|terms| < 2**16: exact far past any
    # k; numpy's integer matmul has no BLAS): the same value the i32 sum gives
    acc = (q.astype(np.float64) - np.float64(zp)) @ w_centered
    return acc.astype(np.float32) * (scale * w_scale.astype(np.float32))


def _lengths(lens: np.ndarray | None, seq: int, batch: int) -> np.ndarray:
    return np.full(batch, seq, np.int64) if lens is None else lens.astype(np.int64)


def _input_projection(x, w, w_scale, w_zp, lens) -> np.ndarray:
    """X W of every step and direction, [seq, batch, dirs, 4h].  X is quantised once, by the
    range of its first max(sequence_lens) steps (the ones onnxruntime's GEMM reads)."""
    seq, batch, n_in = x.shape
    lens = _lengths(lens, seq, batch)
    used = x[:int(lens.max(initial=0))]
    flat = x.reshape(seq * batch, n_in)
    out = [_qdot(flat, _centered(w[d], w_zp[d]), w_scale[d], used).reshape(seq, batch, -1)
           for d in range(w.shape[0])]
    return np.stack(out, axis=2)


def _quantized_recurrence(op, xw, r, b, lens, h0, c0, p, r_scale, r_zp):
    seq, batch, dirs, four_h = xw.shape
    hidden = four_h // 4
    f32 = np.float32
    lens = _lengths(lens, seq, batch)
    steps = int(lens.max(initial=0))
    fns, clip = _activations(op), _clipper(op.clip)
    rows = np.arange(batch)
    y = np.zeros((seq, dirs, batch, hidden), f32)
    finals_h, finals_c = [], []
    for d in range(dirs):
        f, g, act_h = fns[d]
        h = np.zeros((batch, hidden), f32) if h0 is None else h0[d].astype(f32)
        c = np.zeros((batch, hidden), f32) if c0 is None else c0[d].astype(f32)
        # onnxruntime adds Wb + Rb (summed first) after the products and the peepholes
        bias = np.zeros(four_h, f32) if b is None else b[d, :four_h] + b[d, four_h:]
        bi, bo, bf, bc = np.split(bias, 4)
        pi, po, pf = np.split(np.zeros(3 * hidden, f32) if p is None else p[d], 3)
        rc = _centered(r[d], r_zp[d])
        backward = op.direction == "reverse" or d == 1
        previous = h  # what the next product quantises: the last step's output
        for s in range(steps):
            active = s < lens
            pos = np.where(active, lens - 1 - s if backward else s, 0)
            gates = xw[pos, rows, d] + _qdot(previous, rc, r_scale[d])
            gi, go, gf, gc = np.split(gates, 4, axis=-1)
            i = f(clip(gi + pi * c + bi))
            forget = 1 - i if op.input_forget else f(clip(gf + pf * c + bf))
            c_new = forget * c + i * g(clip(gc + bc))
            o = f(clip(go + po * c_new + bo))
            h_new = (o * act_h(c_new)).astype(f32)
            keep = active[:, None]
            h, c = np.where(keep, h_new, h), np.where(keep, c_new, c).astype(f32)
            previous = np.where(keep, h_new, 0).astype(f32)
            y[pos[active], d, rows[active]] = h_new[active]
        ended = (lens == 0)[:, None]  # an empty sequence's final states are zero
        finals_h.append(np.where(ended, 0, h).astype(f32))
        finals_c.append(np.where(ended, 0, c).astype(f32))
    return y, np.stack(finals_h), np.stack(finals_c)


@evaluates("nn.dynamic_quantize_lstm")
def dynamic_quantize_lstm(op, *arrays):
    a = operand_arrays(op, arrays)
    xw = _input_projection(a["x"], a["w"], a["w_scale"], a["w_zero_point"], a["sequence_lens"])
    return _quantized_recurrence(op, xw, a["r"], a["b"], a["sequence_lens"], a["initial_h"],
                                 a["initial_c"], a["p"], a["r_scale"], a["r_zero_point"])


@evaluates("nn.dynamic_quantize_lstm_recurrence")
def dynamic_quantize_lstm_recurrence(op, *arrays):
    a = operand_arrays(op, arrays)
    return _quantized_recurrence(op, a["xw"], a["r"], a["b"], a["sequence_lens"],
                                 a["initial_h"], a["initial_c"], a["p"], a["r_scale"],
                                 a["r_zero_point"])
