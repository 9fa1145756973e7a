"""Reference rules for the random ops and dropout.

Each op draws from its own numpy ``Generator``: seeded from the op's ``seed`` (so a seeded op
gives the same numbers on every run), or from fresh entropy when it has none.
"""

from __future__ import annotations

import numpy as np

from pir.runtimes.reference.registry import evaluates, operand_arrays


def rng(seed: float | None) -> np.random.Generator:
    """The generator for an op's seed; a non-integral or negative seed uses its bits."""
    if seed is None:
        return np.random.default_rng()
    if float(seed).is_integer() and seed >= 0:
        return np.random.default_rng(int(seed))
    return np.random.default_rng(int(np.float64(seed).view(np.uint64)))


def _out_dtype(op) -> np.dtype:
    return op.results[0].type.dtype.numpy


def _sample(op, shape) -> np.ndarray:
    gen = rng(op.seed)
    if "uniform" in op.name:
        x = gen.uniform(op.low, op.high, shape)
    else:
        x = gen.normal(op.mean, op.scale, shape)
    return x.astype(_out_dtype(op))


@evaluates("nn.random_uniform", "nn.random_normal")
def random(op):
    return _sample(op, tuple(op.shape))


@evaluates("nn.random_uniform_like", "nn.random_normal_like")
def random_like(op, x):
    return _sample(op, x.shape)


@evaluates("nn.bernoulli")
def bernoulli(op, p):
    return (rng(op.seed).uniform(0.0, 1.0, p.shape) < p).astype(_out_dtype(op))


@evaluates("nn.multinomial")
def multinomial(op, logits):
    """Inverse-CDF sampling of each row's softmax distribution."""
    gen = rng(op.seed)
    z = logits.astype(np.float64)
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    cdf = np.cumsum(probs, axis=1)
    cdf /= cdf[:, -1:]
    u = gen.uniform(0.0, 1.0, (logits.shape[0], op.sample_size))
    picks = np.stack([np.searchsorted(row, draws, side="right") for row, draws in zip(cdf, u)])
    picks = np.minimum(picks, logits.shape[1] - 1)  # guards against rounding at the top end
    return picks.reshape(logits.shape[0], op.sample_size).astype(_out_dtype(op))


@evaluates("nn.dropout")
def dropout(op, *arrays):
    a = operand_arrays(op, arrays)
    x = a["data"]
    ratio = 0.5 if a["ratio"] is None else float(a["ratio"])
    training = a["training_mode"] is not None and bool(a["training_mode"])
    if not training or ratio == 0:
        return x, np.ones(x.shape, bool)
    mask = rng(op.seed).uniform(0.0, 1.0, x.shape) >= ratio
    scale = np.asarray(1.0 / (1.0 - ratio) if ratio < 1 else 0.0, x.dtype)  # ratio 1 drops all
    return (x * mask * scale).astype(x.dtype), mask
