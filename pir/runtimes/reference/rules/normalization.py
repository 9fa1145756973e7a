"""Reference rules for softmax and its relatives, normalisations, and losses.

Statistics are computed in f32 or wider (``stash_type`` where the op has one), their sums
accumulated in f64 (``exact_sum``), and results are cast back to the input's element type.
"""

from __future__ import annotations

import numpy as np

from pir.runtimes.reference.registry import evaluates, operand_arrays
from pir.runtimes.reference.rules.reduce import exact_mean, exact_sum, wide


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    x = wide(x)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(exact_sum(np.exp(shifted), axis, True))


@evaluates("nn.softmax")
def softmax(op, x):
    # ONNX's definition step by step in the input's precision (exp(x - max) / sum): for f16
    # and bf16 this rounds as other runtimes do, where exp(log_softmax) in f32 would not
    # (the node suite's bf16 attention cases expect numpy's bf16 sum); an f32 sum is exact
    e = np.exp(x - np.max(x, axis=op.axis, keepdims=True))
    if e.dtype == np.float32:
        return e / exact_sum(e, op.axis, True)
    return e / np.sum(e, axis=op.axis, keepdims=True)


@evaluates("nn.log_softmax")
def log_softmax(op, x):
    return _log_softmax(x, op.axis).astype(x.dtype)


@evaluates("nn.hardmax")
def hardmax(op, x):
    axis = op.axis % x.ndim
    first_max = np.argmax(x, axis=axis, keepdims=True)
    out = np.zeros_like(x)
    np.put_along_axis(out, first_max, 1, axis=axis)
    return out


def _standardize(x: np.ndarray, axes: tuple[int, ...], epsilon: float, dtype=None):
    """(x - mean) * inv_std over axes, with mean and inv_std kept as size-1 dims."""
    x = x.astype(dtype) if dtype is not None else wide(x)
    mean = exact_mean(x, axes, True)
    centred = x - mean
    var = exact_mean(centred * centred, axes, True)
    inv_std = 1 / np.sqrt(var + np.asarray(epsilon, x.dtype))
    return centred * inv_std, mean, inv_std


def _channel(param: np.ndarray, ndim: int) -> np.ndarray:
    """A per-channel (dim 1) parameter shaped to broadcast against a rank-``ndim`` tensor."""
    return param.reshape((-1,) + (1,) * (ndim - 2)) if ndim >= 2 else param


@evaluates("nn.layer_norm")
def layer_norm(op, *arrays):
    args = operand_arrays(op, arrays)
    x, scale, bias = args["x"], args["scale"], args["bias"]
    axis = op.axis % x.ndim
    stash = op.stash_type.numpy
    normed, mean, inv_std = _standardize(x, tuple(range(axis, x.ndim)), op.epsilon, stash)
    y = normed * scale.astype(stash)
    if bias is not None:
        y = y + bias.astype(stash)
    y = y.astype(x.dtype)
    if len(op.results) == 1:
        return y
    return y, mean.astype(stash), inv_std.astype(stash)


@evaluates("nn.rms_norm")
def rms_norm(op, x, scale):
    axis = op.axis % x.ndim
    stash = op.stash_type.numpy
    xs = x.astype(stash)
    ms = exact_mean(xs * xs, tuple(range(axis, x.ndim)), True)
    # ONNX's definition: X * Reciprocal(Sqrt(mean + epsilon)), a multiply, not a division
    y = xs * (1 / np.sqrt(ms + np.asarray(op.epsilon, stash))) * scale.astype(stash)
    return y.astype(scale.dtype)


@evaluates("nn.batch_norm")
def batch_norm(op, x, scale, b, input_mean, input_var):
    xw = wide(x)
    if op.training_mode:
        axes = tuple(i for i in range(x.ndim) if i != 1)
        mean = exact_mean(xw, axes)
        var = exact_mean(np.square(xw - exact_mean(xw, axes, True)), axes)
    else:
        mean, var = wide(input_mean), wide(input_var)
    nd = x.ndim
    inv_std = 1 / np.sqrt(_channel(var, nd) + np.asarray(op.epsilon, xw.dtype))
    y = (xw - _channel(mean, nd)) * inv_std * _channel(wide(scale), nd) + _channel(wide(b), nd)
    y = y.astype(x.dtype)
    if len(op.results) == 1:
        return y
    m = op.momentum
    running_mean = wide(input_mean) * m + mean * (1 - m)
    running_var = wide(input_var) * m + var * (1 - m)
    return y, running_mean.astype(input_mean.dtype), running_var.astype(input_var.dtype)


@evaluates("nn.instance_norm")
def instance_norm(op, x, scale, b):
    normed, _, _ = _standardize(x, tuple(range(2, x.ndim)), op.epsilon)
    y = normed * _channel(wide(scale), x.ndim) + _channel(wide(b), x.ndim)
    return y.astype(x.dtype)


@evaluates("nn.group_norm")
def group_norm(op, x, scale, bias):
    n, c = x.shape[:2]
    grouped = x.reshape((n, op.num_groups, -1))  # channels of a group are contiguous
    normed, _, _ = _standardize(grouped, (2,), op.epsilon, op.stash_type.numpy)
    normed = normed.reshape(x.shape)
    y = normed * _channel(scale.astype(normed.dtype), x.ndim)
    return (y + _channel(bias.astype(normed.dtype), x.ndim)).astype(x.dtype)


@evaluates("nn.lp_normalization")
def lp_normalization(op, x):
    xw = wide(x)
    if op.p == 1:
        norm = exact_sum(np.abs(xw), op.axis, True)
    else:
        norm = np.sqrt(exact_sum(xw * xw, op.axis, True))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(norm == 0, 0, xw / norm)  # a zero vector stays zero
    return out.astype(x.dtype)


@evaluates("nn.mean_variance_normalization")
def mean_variance_normalization(op, x):
    axes = tuple(sorted({a % x.ndim for a in op.axes}))
    xw = wide(x)
    mean = exact_mean(xw, axes, True)
    var = exact_mean(xw * xw, axes, True) - mean * mean
    # As ONNX's function body: 1e-9 is added to the standard deviation, not the variance.
    return ((xw - mean) / (np.sqrt(np.maximum(var, 0)) + 1e-9)).astype(x.dtype)


@evaluates("nn.lrn")
def lrn(op, x):
    xw = wide(x)
    sq = xw * xw
    c = x.shape[1]
    before, after = (op.size - 1) // 2, op.size // 2  # floor and ceil of (size - 1) / 2
    # Sum of squares over the channel window [c - before, c + after], by a padded cumsum.
    pad = [(0, 0)] * x.ndim
    pad[1] = (before + 1, after)
    csum = np.cumsum(np.pad(sq, pad), axis=1)
    window = csum[:, op.size:op.size + c] - csum[:, :c]
    return (xw / (op.bias + op.alpha / op.size * window) ** op.beta).astype(x.dtype)


def _nll(op, log_p: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    """The negative log-likelihood of ``log_p`` (N, C, d...) at ``target`` (N, d...)."""
    ignored = (target == op.ignore_index) if op.ignore_index is not None else \
        np.zeros(target.shape, bool)
    safe = np.where(ignored, 0, target).astype(np.int64)  # an ignored index may be out of range
    picked = -np.take_along_axis(log_p, safe[:, None], axis=1)[:, 0]
    w = np.ones(target.shape, log_p.dtype) if weight is None else wide(weight)[safe]
    w = np.where(ignored, 0, w).astype(log_p.dtype)
    loss = picked * w
    if op.reduction == "sum":
        return np.sum(loss)
    if op.reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sum(loss) / np.sum(w)
    return loss


@evaluates("nn.negative_log_likelihood_loss")
def negative_log_likelihood_loss(op, *arrays):
    args = operand_arrays(op, arrays)
    x = args["input"]
    return _nll(op, wide(x), args["target"], args["weight"]).astype(x.dtype)


@evaluates("nn.softmax_cross_entropy_loss")
def softmax_cross_entropy_loss(op, *arrays):
    args = operand_arrays(op, arrays)
    scores = args["scores"]
    log_p = _log_softmax(scores, 1)
    loss = _nll(op, log_p, args["labels"], args["weights"]).astype(scores.dtype)
    if len(op.results) == 1:
        return loss
    return loss, log_p.astype(scores.dtype)
