"""Reference rules for attention, rotary embedding and SwiGLU.

The arithmetic follows ONNX's own definitions step by step, in the inputs' precision, so that
half-precision results round as the specification's do."""

from __future__ import annotations

import numpy as np

from pir.runtimes.reference.registry import evaluates, operand_arrays


def _heads(x: np.ndarray, heads: int) -> np.ndarray:
    """(B, S, H*D) -> (B, H, S, D)."""
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # numpy widens bfloat16 products to float32; the result keeps a's type, as in ONNX.
    return np.matmul(a, b).astype(a.dtype)


def _softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis where an all -inf row gives zeros, not NaN."""
    x_max = np.max(x, axis=-1, keepdims=True)
    zero, one = np.zeros((), x.dtype), np.ones((), x.dtype)
    e = np.exp(x - np.where(np.isneginf(x_max), zero, x_max))
    s = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(s == zero, one, s)


def _frontier(sq: int, skv: int, offset, allowed_fn, dtype) -> np.ndarray:
    """An additive 0 / -inf bias from a rule on (query position p, key j); ``offset`` (the keys
    before the query block) is a scalar, or one per batch giving a (B, 1, Sq, Skv) bias."""
    i = np.arange(sq).reshape(sq, 1)
    j = np.arange(skv).reshape(1, skv)
    if np.ndim(offset) > 0:
        p = i + np.reshape(offset, (-1, 1, 1))
        allowed = allowed_fn(p, j)[:, None]
    else:
        allowed = allowed_fn(i + int(offset), j)
    return np.where(allowed, dtype.type(0), dtype.type(-np.inf))


def _bias(op, mask, nonpad, sq: int, skv: int, past: int | None, dtype) -> np.ndarray:
    """The additive attention bias: mask, causal frontier, sliding window, kv padding."""
    bias = np.zeros((sq, skv), dtype)
    if mask is not None:
        # A mask shorter than the keys leaves the extra keys masked out.
        pad = [(0, 0)] * (mask.ndim - 1) + [(0, skv - mask.shape[-1])]
        if mask.dtype == np.bool_:
            mask = np.where(np.pad(mask, pad, constant_values=False), dtype.type(0),
                            dtype.type(-np.inf))
        else:
            mask = np.pad(mask, pad, constant_values=-np.inf)
        bias = bias + mask
    # Keys before the query block: the past cache, or per batch the external cache's valid
    # keys less the queries.
    offset = past if past is not None else (0 if nonpad is None else nonpad.reshape(-1) - sq)
    if op.is_causal:
        bias = bias + _frontier(sq, skv, offset, lambda p, j: j <= p, dtype)
    left, right = op.left_window_size, op.right_window_size
    if left >= 0 or right >= 0:
        def in_window(p, j):
            ok = np.ones(np.broadcast_shapes(p.shape, j.shape), np.bool_)
            if left >= 0:
                ok &= p - j <= left
            if right >= 0:
                ok &= j - p <= right
            return ok
        bias = bias + _frontier(sq, skv, offset, in_window, dtype)
    if nonpad is not None:
        valid = np.arange(skv) < nonpad.reshape(-1, 1)
        bias = bias + np.where(valid, 0, -np.inf).astype(bias.dtype).reshape(-1, 1, 1, skv)
    return bias


@evaluates("nn.attention")
def attention(op, *arrays):
    args = operand_arrays(op, arrays)
    q, k, v = args["q"], args["k"], args["v"]
    three_d = q.ndim == 3
    if three_d:
        q, k, v = (_heads(q, op.q_num_heads), _heads(k, op.kv_num_heads),
                   _heads(v, op.kv_num_heads))
    dtype = q.dtype
    past = None
    if args["past_key"] is not None:
        past = args["past_key"].shape[2]
        k = np.concatenate([args["past_key"], k], axis=2)
        v = np.concatenate([args["past_value"], v], axis=2)
    present_key, present_value = k, v
    sq, skv = q.shape[2], k.shape[2]
    bias = _bias(op, args["attn_mask"], args["nonpad_kv_seqlen"], sq, skv, past, dtype)
    if q.shape[1] != k.shape[1]:  # GQA/MQA: each k/v head serves a run of q heads
        rep = q.shape[1] // k.shape[1]
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)

    scale = op.scale if op.scale is not None else 1 / np.sqrt(q.shape[3])
    root = dtype.type(np.sqrt(scale))  # q and k are each scaled by sqrt(scale)
    qk = _matmul(q * root, np.swapaxes(k * root, -1, -2))
    raw = qk
    if op.softcap > 0:
        qk = np.tanh(qk / op.softcap) * op.softcap
    scores = qk + bias
    qk_out = {0: raw, 1: qk, 2: scores}.get(op.qk_matmul_output_mode)
    if op.softmax_precision is not None:
        scores = scores.astype(op.softmax_precision.numpy)
    probs = _softmax(scores)
    # A query with no key left to attend gets zeros (decided on the bias: the scores may be NaN).
    masked_row = np.isneginf(np.max(bias, axis=-1, keepdims=True))
    probs = np.where(masked_row, np.zeros((), probs.dtype), probs)
    if qk_out is None:  # mode 3: the probabilities
        qk_out = probs
    y = _matmul(probs.astype(dtype), v)
    if three_d:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], sq, -1)
    qk_out = np.broadcast_to(qk_out, q.shape[:2] + (sq, skv)).astype(dtype)
    return y, present_key, present_value, qk_out


@evaluates("nn.rotary_embedding")
def rotary_embedding(op, x, cos, sin, position_ids=None):
    shape = x.shape
    # Work in (B, S, H, D).
    if x.ndim == 4:
        x = x.transpose(0, 2, 1, 3)
    else:
        x = x.reshape(shape[0], shape[1], op.num_heads, -1)
    rot = op.rotary_embedding_dim or x.shape[3]
    if position_ids is not None:
        cos, sin = cos[position_ids], sin[position_ids]
    if cos.shape[-1] != rot // 2 or sin.shape[-1] != rot // 2:
        raise ValueError(f"the caches' last dim must be rotary dim / 2 = {rot // 2}, got "
                         f"{cos.shape[-1]} and {sin.shape[-1]}")
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]  # broadcast over heads
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    if op.interleaved:
        x1, x2 = x_rot[..., 0::2], x_rot[..., 1::2]
    else:
        x1, x2 = x_rot[..., : rot // 2], x_rot[..., rot // 2:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if op.interleaved:
        x_rot = np.stack([real, imag], axis=-1).reshape(x_rot.shape)
    else:
        x_rot = np.concatenate([real, imag], axis=-1)
    out = np.concatenate([x_rot, x_pass], axis=-1)
    return out.transpose(0, 2, 1, 3) if len(shape) == 4 else out.reshape(shape)


@evaluates("nn.swiglu")
def swiglu(op, a, b):
    # The sigmoid is rounded to a's type before the products, as ONNX's Swish does.
    gate = a * (1 / (1 + np.exp(-op.alpha * a))).astype(a.dtype)
    return (gate * b).astype(a.dtype)
