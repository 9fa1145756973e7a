"""Decomposition rules for the softmax family, the normalisations and the classification losses.

They share two shapes of rule: a softmax along one axis (x - max, exp, sum), and
standardisation, ``(x - mean) * rsqrt(var + epsilon)`` over some axes, followed by a scale and
a bias.  Means divide by a count that may be symbolic (see ``rules_reduce.count``), so a
symbolic batch, sequence or spatial dim is fine; a dim nobody knows (``?``) keeps the op.
Statistics are computed in ``stash_type`` where the op has one, else in f32 or wider, and the
result is cast back once, as the reference runtime does.
"""

from __future__ import annotations

from typing import Sequence

from pir.ir.core import Value
from pir.ir.typerules import normalize_axis, tensor
from pir.ir.types import DType, TensorType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep
from pir.passes.decompose.rules_reduce import count, mean, ranked, rule, widen

__all__ = ["log_softmax_of", "moments", "inv_std_of", "standardize", "per_channel", "fit"]


# -- shared helpers -------------------------------------------------------------------------------


def _softmax_parts(b: PrimBuilder, x: Value, axis: int) -> tuple[Value, Value, Value]:
    """(x - max, exp(x - max), sum(exp(x - max))) along ``axis``; the sum keeps the axis as 1."""
    shifted = b.sub(x, b.reduce("max", x, [axis], keepdims=True))
    e = b.op("exp", shifted)
    return shifted, e, b.reduce("sum", e, [axis], keepdims=True)


def log_softmax_of(b: PrimBuilder, x: Value, axis: int) -> Value:
    """(x - max) - log(sum(exp(x - max))), stable for large inputs."""
    shifted, _, total = _softmax_parts(b, x, axis)
    return b.sub(shifted, b.op("log", total))


def moments(b: PrimBuilder, x: Value, axes: Sequence[int]) -> tuple[Value, Value, Value]:
    """(mean, x - mean, variance) over ``axes``, the statistics keeping the reduced axes as
    size 1; the variance is the mean of the squared deviations (two passes, as in the
    reference runtime: more accurate than E[x^2] - E[x]^2)."""
    n = count(b, x, axes)
    avg = mean(b, x, axes, n=n)
    centred = b.sub(x, avg)
    return avg, centred, mean(b, b.mul(centred, centred), axes, n=n)


def inv_std_of(b: PrimBuilder, var: Value, epsilon: float) -> Value:
    """1 / sqrt(var + epsilon)."""
    return b.op("rsqrt", b.add(var, b.const(epsilon, tensor(var).dtype)))


def standardize(b: PrimBuilder, x: Value, axes: Sequence[int],
                epsilon: float) -> tuple[Value, Value, Value]:
    """((x - mean) * inv_std, mean, inv_std) over ``axes`` (statistics keep size-1 dims)."""
    avg, centred, var = moments(b, x, axes)
    inv_std = inv_std_of(b, var, epsilon)
    return b.mul(centred, inv_std), avg, inv_std


def per_channel(b: PrimBuilder, param: Value, like: Value) -> Value:
    """A 1-D per-channel parameter placed on dim 1 of ``like`` (and cast to its type)."""
    t = tensor(like)
    shape = b.known(t.shape, "per-channel broadcast")
    if ranked(param)[0] not in (1, shape[1]):
        raise Keep(f"{ranked(param)[0]} values per channel are not known to match the "
                   f"{shape[1]} channels")
    return b.op("broadcast_in_dim", b.cast(param, t.dtype), result_type=TensorType(t.dtype, shape),
                broadcast_dimensions=(1,))


def fit(b: PrimBuilder, param: Value, like: Value) -> Value:
    """A scale or bias broadcast numpy-style to ``like``'s shape (and cast to its type).  A
    static dim of the parameter against a symbol of ``like`` would need a run-time check that
    prim cannot state, so the op stays."""
    t, shape = tensor(like), ranked(like)
    pshape = ranked(param)
    for d, p in zip(reversed(shape), reversed(pshape)):
        if p != 1 and p != d:
            raise Keep(f"a parameter of shape {list(pshape)} is not known to broadcast to "
                       f"{list(shape)}")
    return b.broadcast_to(b.cast(param, t.dtype), shape)


def _axis(op, x: Value) -> int:
    return normalize_axis(op.axis, len(ranked(x)))


def _trailing(op, x: Value) -> tuple[int, ...]:
    """The axes from ``op.axis`` on, which layer_norm and rms_norm normalise over."""
    return tuple(range(_axis(op, x), len(ranked(x))))


# -- softmax family -------------------------------------------------------------------------------


@rule("nn.softmax")
def softmax(b: PrimBuilder, op) -> list[Value]:
    """exp(x - max) * (1 / sum(exp(x - max))), in the input's type.  ONNX defines it with a
    division; one reciprocal per row and a multiply per element is what ONNX Runtime's
    kernel computes (MLAS), within an ulp of the division and much cheaper (a vector
    division costs several multiplies)."""
    if tensor(op.input).dtype is DType.BF16:
        # prim sums bf16 in f32; ONNX's reference (and the node suite's expected data, and
        # nn.softmax's own rule) sum in bf16 itself.  The two differ by an ulp, so the op
        # stays rather than change its rounding.
        raise Keep("bf16 softmax sums in bf16 (ONNX's reference), prim.reduce_sum in f32")
    _, e, total = _softmax_parts(b, op.input, _axis(op, op.input))
    return [b.mul(e, b.op("reciprocal", total))]


@rule("nn.log_softmax")
def log_softmax(b: PrimBuilder, op) -> list[Value]:
    """(x - max) - log(sum(exp(x - max))), in f32 for narrower floats."""
    x = op.input
    return [b.cast(log_softmax_of(b, widen(b, x), _axis(op, x)), tensor(x).dtype)]


@rule("nn.hardmax")
def hardmax(b: PrimBuilder, op) -> list[Value]:
    """1 where the position along the axis equals argmax (the first maximum), else 0."""
    x, t = op.input, tensor(op.input)
    axis = _axis(op, x)
    shape = b.known(t.shape, "hardmax")
    if shape[axis] == 0:
        return [x]  # nothing to mark
    first = b.op("argmax", x, axis=axis, keepdims=True)
    positions = b.op("iota", result_type=TensorType(DType.I64, shape), dimension=axis)
    return [b.cast(b.op("eq", positions, b.broadcast_to(first, shape)), t.dtype)]


# -- normalisations -------------------------------------------------------------------------------


@rule("nn.layer_norm")
def layer_norm(b: PrimBuilder, op) -> list[Value]:
    """standardize over the trailing axes in stash_type, * scale + bias; the optional results
    are the mean and inv_std_dev themselves."""
    stash = op.stash_type
    normed, avg, inv_std = standardize(b, b.cast(op.x, stash), _trailing(op, op.x), op.epsilon)
    y = b.mul(normed, fit(b, op.scale, normed))
    if op.bias is not None:
        y = b.add(y, fit(b, op.bias, normed))
    y = b.cast(y, tensor(op.x).dtype)
    return [y, avg, inv_std] if len(op.results) == 3 else [y]


@rule("nn.rms_norm")
def rms_norm(b: PrimBuilder, op) -> list[Value]:
    """x * rsqrt(mean(x^2) + epsilon) * scale in stash_type (ONNX's function body: a multiply
    by the reciprocal, one division per row rather than per element); y has scale's type."""
    stash = op.stash_type
    x = b.cast(op.x, stash)
    ms = mean(b, b.mul(x, x), _trailing(op, op.x))
    normed = b.mul(x, inv_std_of(b, ms, op.epsilon))
    y = b.mul(normed, fit(b, op.scale, normed))
    return [b.cast(y, tensor(op.scale).dtype)]


@rule("nn.batch_norm")
def batch_norm(b: PrimBuilder, op) -> list[Value]:
    """(x - mean) * rsqrt(var + epsilon) * scale + b per channel (dim 1), with the given
    statistics, or in training mode the batch's (over every dim but 1, the variance biased),
    whose running averages are then the optional results."""
    dtype = tensor(op.x).dtype
    rank = len(ranked(op.x))
    if rank < 2:
        raise Keep("needs a channel dim (rank 2 or more)")
    x = widen(b, op.x)
    if op.training_mode:
        avg, centred, var = moments(b, x, [a for a in range(rank) if a != 1])
        inv_std = inv_std_of(b, var, op.epsilon)
    else:  # the statistics are per channel: only inv_std's C values need computing
        work = tensor(x).dtype
        avg, var = b.cast(op.input_mean, work), b.cast(op.input_var, work)
        centred = b.sub(x, per_channel(b, avg, x))
        inv_std = per_channel(b, inv_std_of(b, var, op.epsilon), x)
    normed = b.mul(centred, inv_std)
    y = b.add(b.mul(normed, per_channel(b, op.scale, x)), per_channel(b, op.b, x))
    y = b.cast(y, dtype)
    if len(op.results) == 1:
        return [y]
    channels = ranked(op.input_mean)
    return [y] + [_running(b, old, b.reshape(new, channels), op.momentum)
                  for old, new in ((op.input_mean, avg), (op.input_var, var))]


def _running(b: PrimBuilder, old: Value, batch: Value, momentum: float) -> Value:
    """old * momentum + batch * (1 - momentum), in the batch statistics' type."""
    work = tensor(batch).dtype
    kept = b.mul(b.cast(old, work), b.const(momentum, work))
    return b.cast(b.add(kept, b.mul(batch, b.const(1 - momentum, work))), tensor(old).dtype)


@rule("nn.instance_norm")
def instance_norm(b: PrimBuilder, op) -> list[Value]:
    """standardize each sample and channel over the spatial dims, * scale + b per channel."""
    x = widen(b, op.input)
    normed, _, _ = standardize(b, x, range(2, len(ranked(x))), op.epsilon)
    y = b.add(b.mul(normed, per_channel(b, op.scale, x)), per_channel(b, op.b, x))
    return [b.cast(y, tensor(op.input).dtype)]


@rule("nn.group_norm")
def group_norm(b: PrimBuilder, op) -> list[Value]:
    """x (N, C, S...) viewed as (N, G, C/G, S...) is standardized over its dims 2 and on
    (channels of a group are contiguous), then viewed back, * scale + bias per channel."""
    shape = b.known(ranked(op.x), "group_norm")
    groups, channels = op.num_groups, shape[1]
    if not isinstance(channels, int):
        raise Keep("the channel dim must be static to split it into groups")
    x = b.cast(op.x, op.stash_type)
    grouped = b.reshape(x, (shape[0], groups, channels // groups) + shape[2:])
    normed, _, _ = standardize(b, grouped, range(2, len(shape) + 1), op.epsilon)
    normed = b.reshape(normed, shape)
    y = b.add(b.mul(normed, per_channel(b, op.scale, x)), per_channel(b, op.bias, x))
    return [b.cast(y, tensor(op.x).dtype)]


@rule("nn.lp_normalization")
def lp_normalization(b: PrimBuilder, op) -> list[Value]:
    """x / norm along the axis, norm = sum(|x|) or sqrt(sum(x^2)); a zero vector stays zero
    (it is divided by 1 instead of 0)."""
    x = widen(b, op.input)
    axis = _axis(op, x)
    if op.p == 1:
        norm = b.reduce("sum", b.op("abs", x), [axis], keepdims=True)
    else:
        norm = b.op("sqrt", b.reduce("sum", b.mul(x, x), [axis], keepdims=True))
    zero = b.op("eq", norm, b.zeros_like(norm))
    safe = b.op("select", zero, b.ones_like(norm), norm)
    return [b.cast(b.div(x, safe), tensor(op.input).dtype)]


@rule("nn.mean_variance_normalization")
def mean_variance_normalization(b: PrimBuilder, op) -> list[Value]:
    """(x - mean) / (sqrt(max(E[x^2] - mean^2, 0)) + 1e-9), as ONNX's function body."""
    x = widen(b, op.x)
    rank = len(ranked(x))
    axes = sorted({normalize_axis(a, rank) for a in op.axes})
    avg = mean(b, x, axes)
    var = b.sub(mean(b, b.mul(x, x), axes), b.mul(avg, avg))
    std = b.op("sqrt", b.max(var, b.zeros_like(var)))
    y = b.div(b.sub(x, avg), b.add(std, b.const(1e-9, tensor(x).dtype)))
    return [b.cast(y, tensor(op.x).dtype)]


@rule("nn.lrn")
def lrn(b: PrimBuilder, op) -> list[Value]:
    """x / (bias + alpha / size * window)^beta, the window being the sum of x^2 over the
    channels [c - floor((size-1)/2), c + ceil((size-1)/2)]: x^2 padded with zeros on dim 1,
    then ``size`` shifted slices added up."""
    x = widen(b, op.x)
    shape = ranked(x)
    channels = shape[1]
    if not isinstance(channels, int):
        raise Keep("the channel dim must be static to slide the window over it")
    before, after = (op.size - 1) // 2, op.size // 2
    low, high = [0] * len(shape), [0] * len(shape)
    low[1], high[1] = before, after
    work = tensor(x).dtype
    padded = b.op("pad", b.mul(x, x), b.const(0, work), edge_padding_low=tuple(low),
                  edge_padding_high=tuple(high))
    window = None
    for i in range(op.size):
        part = b.op("slice", padded, start_indices=(i,), limit_indices=(i + channels,), axes=(1,))
        window = part if window is None else b.add(window, part)
    base = b.add(b.mul(window, b.const(op.alpha / op.size, work)), b.const(op.bias, work))
    y = b.div(x, b.pow(base, b.const(op.beta, work)))
    return [b.cast(y, tensor(op.x).dtype)]


# -- losses ---------------------------------------------------------------------------------------


def _nll(b: PrimBuilder, op, log_p: Value, target: Value, weight: Value | None) -> Value:
    """The negative log-likelihood of ``log_p`` (N, C, d...) at ``target`` (N, d...).

    The picked log-probability is a one-hot select and a sum over the class dim (an
    ``iota == target`` mask), which needs no flattening and so works with symbolic dims; the
    per-sample weight is a ``prim.gather`` of the class weights.  Targets equal to
    ``ignore_index`` weigh 0 (and are read at class 0, since they may be out of range)."""
    p_shape, t_shape = b.known(ranked(log_p), "loss input"), ranked(target)
    if tuple(t_shape) != p_shape[:1] + p_shape[2:]:
        raise Keep(f"the target's shape {list(t_shape)} is not the input's without the class dim")
    work, ttype = tensor(log_p).dtype, tensor(target).dtype
    if op.ignore_index is not None:
        ignored = b.op("eq", target, b.broadcast_to(b.const(op.ignore_index, ttype), t_shape))
        target = b.op("select", ignored, b.zeros_like(target), target)
    classes = b.op("iota", result_type=TensorType(ttype, p_shape), dimension=1)
    spread = b.op("broadcast_in_dim", target, result_type=TensorType(ttype, p_shape),
                  broadcast_dimensions=(0,) + tuple(range(2, len(p_shape))))
    hit = b.op("eq", classes, spread)
    picked = b.reduce("sum", b.op("select", hit, log_p, b.zeros_like(log_p)), [1], keepdims=False)
    if weight is not None:
        w = b.op("gather", b.cast(weight, work), target, axis=0)
    else:
        w = b.broadcast_to(b.const(1, work), t_shape)
    if op.ignore_index is not None:
        w = b.op("select", ignored, b.zeros_like(w), w)
    loss = b.mul(b.op("neg", picked), w)
    every = range(len(t_shape))
    if op.reduction == "sum":
        return b.reduce("sum", loss, every, keepdims=False)
    if op.reduction == "mean":
        return b.div(b.reduce("sum", loss, every, keepdims=False),
                     b.reduce("sum", w, every, keepdims=False))
    return loss


@rule("nn.negative_log_likelihood_loss")
def negative_log_likelihood_loss(b: PrimBuilder, op) -> list[Value]:
    """The NLL of the input, which holds log-probabilities over dim 1."""
    loss = _nll(b, op, widen(b, op.input), op.target, op.weight)
    return [b.cast(loss, tensor(op.input).dtype)]


@rule("nn.softmax_cross_entropy_loss")
def softmax_cross_entropy_loss(b: PrimBuilder, op) -> list[Value]:
    """The negative log-likelihood of log_softmax(scores) over the class dim (1); the optional
    second result is that log-softmax."""
    dtype = tensor(op.scores).dtype
    log_p = log_softmax_of(b, widen(b, op.scores), 1)
    loss = b.cast(_nll(b, op, log_p, op.labels, op.weights), dtype)
    return [loss, b.cast(log_p, dtype)] if len(op.results) == 2 else [loss]
