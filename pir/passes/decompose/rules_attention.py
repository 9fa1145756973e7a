"""Decomposition of the transformer blocks: attention, rotary embedding, SwiGLU.

Attention follows ONNX's definition step by step (as the reference runtime does), in the
``(B, H, S, D)`` layout: 3-D inputs are split into heads, the past cache is concatenated in
front of k and v (those are the present outputs), k/v heads are repeated for grouped-query
attention, q and k are each scaled by sqrt(scale) before one batched ``dot_general``, then
the soft cap, the additive bias (the mask, and causal and sliding-window frontiers built
from two ``iota``s and a compare), a softmax that gives zeros for a row with nothing to
attend to, and the second ``dot_general`` with v.  An external KV cache
(``nonpad_kv_seqlen``) masks its padding and offsets the causal frontier per batch.
"""

from __future__ import annotations

import numpy as np

from pir.ir.core import Operation, Value
from pir.ir.typerules import tensor
from pir.ir.types import Dim, DType, TensorType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes
from pir.passes.decompose.rules_linalg import dot, shape, transpose

__all__ = ["split_heads", "merge_heads"]


def _static(*dims: Dim, why: str) -> None:
    if not all(isinstance(d, int) for d in dims):
        raise Keep(f"needs static {why}")


def split_heads(b: PrimBuilder, x: Value, heads: int) -> Value:
    """(B, S, H*D) -> (B, H, S, D)."""
    bsz, s, hidden = shape(b, x, "attention input")
    _static(hidden, why="hidden sizes to split heads")
    x = b.reshape(x, (bsz, s, heads, hidden // heads))
    return transpose(b, x, [0, 2, 1, 3])


def merge_heads(b: PrimBuilder, x: Value) -> Value:
    """(B, H, S, D) -> (B, S, H*D)."""
    bsz, h, s, d = shape(b, x)
    _static(h, d, why="head counts and sizes to merge heads")
    return b.reshape(transpose(b, x, [0, 2, 1, 3]), (bsz, s, h * d))


def _repeat_heads(b: PrimBuilder, x: Value, heads: int) -> Value:
    """(B, Hkv, S, D) -> (B, heads, S, D): kv head h serves q heads h*rep .. h*rep + rep - 1."""
    bsz, hkv, s, d = shape(b, x)
    if hkv == heads:
        return x
    _static(hkv, heads, why="head counts for grouped-query attention")
    rep = heads // hkv
    x = b.op("broadcast_in_dim", x, result_type=TensorType(tensor(x).dtype, (bsz, hkv, rep, s, d)),
             broadcast_dimensions=(0, 1, 3, 4))
    return b.reshape(x, (bsz, heads, s, d))


def _frontier(b: PrimBuilder, op: Operation, sq: Dim, skv: Dim, past: Dim,
              dtype: DType) -> Value | None:
    """0 where query i may see key j, else -inf.  Query i sits at position p = i + offset,
    the offset being the keys before the query block: the past length, or per batch
    ``nonpad_kv_seqlen - Sq`` with an external cache.  Causal: ``j <= p``; sliding window:
    ``p - j <= left`` and ``j - p <= right``; external cache: ``j < nonpad_kv_seqlen``."""
    left, right = op.left_window_size, op.right_window_size
    if op.is_causal:
        right = 0 if right < 0 else min(right, 0)
    nonpad, i64 = op.nonpad_kv_seqlen, DType.I64
    if left < 0 and right < 0 and nonpad is None:
        return None
    sq, skv = b.known((sq, skv), "query and key lengths")
    if nonpad is None:
        _static(past, why="past lengths for a causal or windowed mask")
        grid, offset, kv_len = (sq, skv), (b.const(past, i64) if past else None), None
    else:
        _static(sq, why="query lengths to place the queries after an external cache")
        n = tensor(nonpad).numel
        grid = (n, 1, sq, skv)
        kv_len = b.op("broadcast_in_dim", b.reshape(nonpad, (n,)), broadcast_dimensions=(0,),
                      result_type=TensorType(i64, grid))
        offset = b.op("sub", kv_len, b.broadcast_to(b.const(sq, i64), grid))
    i = b.op("iota", result_type=TensorType(i64, grid), dimension=len(grid) - 2)
    j = b.op("iota", result_type=TensorType(i64, grid), dimension=len(grid) - 1)
    p = i if offset is None else b.add(i, offset)
    allowed = []
    for before, after, bound in ((p, j, left), (j, p, right)):
        if bound >= 0:
            allowed.append(b.binary("le", b.op("sub", before, after), b.const(bound, i64)))
    if kv_len is not None:
        allowed.append(b.op("lt", j, kv_len))
    ok = allowed[0]
    for more in allowed[1:]:
        ok = b.op("and", ok, more)
    return b.op("select", ok, b.broadcast_to(b.const(0, dtype), grid),
                b.broadcast_to(b.const(-np.inf, dtype), grid))


def _mask_bias(b: PrimBuilder, mask: Value, skv: Dim, dtype: DType) -> Value:
    """The attention mask as an additive bias: a boolean mask gives 0 / -inf; a mask shorter
    than the keys masks the keys past its end."""
    ms = shape(b, mask, "attention mask")
    mdtype = tensor(mask).dtype
    is_bool = mdtype == DType.BOOL
    if ms[-1] != skv:
        _static(ms[-1], skv, why="key lengths to pad a short mask")
        mask = b.op("pad", mask, b.const(False if is_bool else -np.inf, mdtype),
                    edge_padding_low=(0,) * len(ms),
                    edge_padding_high=(0,) * (len(ms) - 1) + (skv - ms[-1],))
        ms = shape(b, mask)
    if not is_bool:
        return b.cast(mask, dtype)
    zeros = b.broadcast_to(b.const(0, dtype), ms)
    return b.op("select", mask, zeros, b.broadcast_to(b.const(-np.inf, dtype), ms))


def _bias(b: PrimBuilder, op: Operation, sq: Dim, skv: Dim, past: Dim,
          dtype: DType) -> Value | None:
    terms = []
    if op.attn_mask is not None:
        terms.append(_mask_bias(b, op.attn_mask, skv, dtype))
    frontier = _frontier(b, op, sq, skv, past, dtype)
    if frontier is not None:
        terms.append(frontier)
    bias = None
    for t in terms:
        bias = t if bias is None else b.add(bias, t)
    return bias


def _softmax(b: PrimBuilder, x: Value) -> Value:
    """Softmax over the last axis; a row of -inf gives zeros, not NaN."""
    axis = len(shape(b, x)) - 1
    dtype = tensor(x).dtype
    m = b.reduce("max", x, [axis], keepdims=True)
    m = b.op("select", b.binary("eq", m, b.const(-np.inf, dtype)), b.zeros_like(m), m)
    e = b.op("exp", b.sub(x, m))
    s = b.reduce("sum", e, [axis], keepdims=True)
    s = b.op("select", b.binary("eq", s, b.const(0, dtype)), b.ones_like(s), s)
    return b.div(e, s)


@decomposes("nn.attention")
def attention(b: PrimBuilder, op: Operation) -> list[Value]:
    dtype = tensor(op.q).dtype
    if dtype is DType.BF16:
        raise Keep("bf16: ONNX sums the softmax in bf16, prim.reduce_sum in f32, and the "
                   "results differ by a bf16 ulp, beyond ONNX's tolerance")
    q, k, v = op.q, op.k, op.v
    three_d = len(shape(b, q, "attention q")) == 3
    if three_d:
        q = split_heads(b, q, op.q_num_heads)
        k = split_heads(b, k, op.kv_num_heads)
        v = split_heads(b, v, op.kv_num_heads)
    past = 0
    if op.past_key is not None:
        past = shape(b, op.past_key, "past key")[2]
        k = b.op("concat", [op.past_key, k], dimension=2)
        v = b.op("concat", [op.past_value, v], dimension=2)
    present_k, present_v = k, v
    _, hq, sq, d = shape(b, q)
    skv = shape(b, k, "keys")[2]
    bias = _bias(b, op, sq, skv, past, dtype)
    k, v = _repeat_heads(b, k, hq), _repeat_heads(b, v, hq)

    _static(d, why="head sizes for the default scale")
    scale = op.scale if op.scale is not None else 1 / np.sqrt(d)
    root = b.const(np.sqrt(scale), dtype)  # q and k are each scaled by sqrt(scale)
    qk = dot(b, b.mul(q, root), b.mul(k, root), ([3], [3]), ([0, 1], [0, 1]))
    raw = qk
    if op.softcap > 0:
        cap = b.const(op.softcap, dtype)
        qk = b.mul(b.op("tanh", b.div(qk, cap)), cap)
    scores = qk if bias is None else b.add(qk, bias)
    qk_out = {0: raw, 1: qk, 2: scores}.get(op.qk_matmul_output_mode)
    probs = _softmax(b, b.cast(scores, op.softmax_precision or dtype))
    # A query with no key left to attend gets zeros (even where its scores are NaN).  Only a
    # mask, a left window or an external cache can hide every key from a query.
    if bias is not None and (op.attn_mask is not None or op.left_window_size >= 0 or
                             op.nonpad_kv_seqlen is not None):
        dead = b.binary("eq", b.reduce("max", bias, [len(shape(b, bias)) - 1], keepdims=True),
                        b.const(-np.inf, dtype))
        probs = b.op("select", b.broadcast_to(dead, shape(b, probs)), b.zeros_like(probs), probs)
    if qk_out is None:
        qk_out = probs
    y = dot(b, b.cast(probs, dtype), v, ([3], [2]), ([0, 1], [0, 1]))
    if three_d:
        y = merge_heads(b, y)
    want = shape(b, op.qk_matmul_output, "qk_matmul_output")
    if any(h != w and h != 1 for h, w in zip(shape(b, qk_out), want)):
        raise Keep(f"qk_matmul_output is declared {op.qk_matmul_output.type}, which the "
                   f"scores {qk_out.type} do not broadcast to")
    qk_out = b.broadcast_to(b.cast(qk_out, dtype), want)
    return [y, present_k, present_v, qk_out]


@decomposes("nn.rotary_embedding")
def rotary_embedding(b: PrimBuilder, op: Operation) -> list[Value]:
    """Rotate pairs (x1, x2) of the first rotary dims by the cached angles:
    (cos x1 - sin x2, sin x1 + cos x2); pairs are the two halves, or neighbours when
    interleaved.  Works on (B, H, S, D), or (B, S, H, D) for 3-D x."""
    x = op.x
    xs = shape(b, x, "rotary input")
    dtype = tensor(x).dtype
    if len(xs) == 3:
        _static(xs[2], why="hidden sizes to split heads")
        x = b.reshape(x, (xs[0], xs[1], op.num_heads, xs[2] // op.num_heads))
        seq_dims = (0, 1, 3)  # where cos/sin's (B, S, r) go in (B, S, H, D)
    else:
        seq_dims = (0, 2, 3)  # ... in (B, H, S, D)
    shape4 = shape(b, x)
    head = shape4[3]
    _static(head, why="head sizes to slice the rotary dims")
    rot = op.rotary_embedding_dim or head
    half = rot // 2
    angles = []
    for cache in (op.cos_cache, op.sin_cache):
        cache = b.cast(cache, dtype)
        if op.position_ids is not None:
            cache = b.op("gather", cache, op.position_ids, axis=0)
        angles.append(b.op("broadcast_in_dim", cache, broadcast_dimensions=seq_dims,
                           result_type=TensorType(dtype, (*shape4[:3], half))))
    cos, sin = angles

    def part(start: int, limit: int, stride: int = 1) -> Value:
        return b.op("slice", x, start_indices=(start,), limit_indices=(limit,),
                    strides=(stride,), axes=(3,))

    x1, x2 = (part(0, rot, 2), part(1, rot, 2)) if op.interleaved else \
        (part(0, half), part(half, rot))
    real = b.op("sub", b.op("mul", cos, x1), b.op("mul", sin, x2))
    imag = b.op("add", b.op("mul", sin, x1), b.op("mul", cos, x2))
    if op.interleaved:  # (.., r) pairs -> (.., r, 2) -> (.., 2r)
        pair = (*shape4[:3], half, 1)
        out = b.op("concat", [b.reshape(real, pair), b.reshape(imag, pair)], dimension=4)
        out = b.reshape(out, (*shape4[:3], rot))
    else:
        out = b.op("concat", [real, imag], dimension=3)
    if rot < head:
        out = b.op("concat", [out, part(rot, head)], dimension=3)
    return [b.reshape(out, xs)]


@decomposes("nn.swiglu")
def swiglu(b: PrimBuilder, op: Operation) -> list[Value]:
    """a * sigmoid(alpha * a) * b."""
    a = op.a
    z = a if op.alpha == 1 else b.mul(a, b.const(op.alpha, tensor(a).dtype))
    return [b.op("mul", b.op("mul", a, b.op("logistic", z)), op.b)]
