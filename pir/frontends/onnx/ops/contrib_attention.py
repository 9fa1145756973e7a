"""onnxruntime's attention contrib ops (com.microsoft) that its transformer optimizer writes:
Attention, MultiHeadAttention, RotaryEmbedding, GroupNorm -> ONNX-level nn ops.

Attention and MultiHeadAttention become nn.attention (ONNX's Attention-23) with 3-D q, k, v:
onnxruntime masks by *adding* ``mask_filter_value`` (-10000) where a mask is 0, which is
what the additive ``attn_mask`` given here does (a row masked everywhere then averages its
scores, as onnxruntime's does); ``unidirectional`` is ``is_causal`` (the diagonal is always
visible, so -inf and -10000 give the same softmax).  The packed and cached layouts these ops
also accept (packed QKV, BNSH key/value, a shared past/present buffer, rotary in Attention,
the qk output) are refused by name.
"""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.ops.contrib import contrib
from pir.ir.dialects.nn import activations as act
from pir.ir.dialects.nn import attention as at
from pir.ir.dialects.nn import cast as cs
from pir.ir.dialects.nn import elementwise as ew
from pir.ir.dialects.nn import linalg as la
from pir.ir.dialects.nn import normalization as nm
from pir.ir.dialects.nn import tensor as tn
from pir.ir.typerules import tensor
from pir.ir.types import DType

_MASK_FILTER = -10000.0


def _i64(ctx, values):
    return ctx.constant(np.array(values, np.int64))


def _slice_last(ctx, v, start: int, stop: int):
    return ctx.temp(tn.Slice, v, _i64(ctx, [start]), _i64(ctx, [stop]), _i64(ctx, [-1]))


def _additive(ctx, mask, like, filter_value: float):
    """A 0/1 (int32) mask as the bias onnxruntime adds: 0 where mask > 0, filter elsewhere."""
    dtype = tensor(like).dtype.numpy
    keep = ctx.temp(ew.Greater, mask, ctx.constant(np.array(0, np.int32)))
    return ctx.temp(ew.Where, keep, ctx.constant(np.array(0, dtype)),
                    ctx.constant(np.array(filter_value, dtype)))


def _key_mask(ctx, mask, like, filter_value: float, total):
    """onnxruntime's key masks as a bias broadcasting to (B, H, S, T): raw (B, T) or
    (B, S, T) 0/1 masks, or (B,) valid lengths (right padding)."""
    t = tensor(mask)
    if t.rank == 1:  # lengths: key j is visible when j < length
        if not isinstance(total, int):
            raise ctx.error("a mask of key lengths needs a static total sequence length")
        j = ctx.constant(np.arange(total, dtype=np.int32))
        lengths = ctx.temp(tn.Unsqueeze, mask, _i64(ctx, [1]))
        mask = ctx.temp(cs.Cast, ctx.temp(ew.Less, j, lengths), to=DType.I32)
        t = tensor(mask)
    if t.rank == 2:
        return ctx.temp(tn.Unsqueeze, _additive(ctx, mask, like, filter_value), _i64(ctx, [1, 2]))
    if t.rank == 3:
        return ctx.temp(tn.Unsqueeze, _additive(ctx, mask, like, filter_value), _i64(ctx, [1]))
    raise ctx.error(f"mask of shape {mask.type} is not supported (raw (B, T) or (B, S, T) "
                    "masks and (B,) key lengths are)")


def _unnamed(ctx) -> int:
    """An output index past the node's: ``ctx.emit`` leaves that result unnamed (nn.attention
    always has four results; the node's outputs name only some of them)."""
    return len(ctx.node.output)


def _attend(ctx, q, k, v, key_mask, attention_bias, past_key, past_value, outputs):
    """nn.attention of 3-D q, k, v with num_heads heads, the key mask and the additive
    attention bias as one additive mask, and the past keys and values prepended."""
    total = tensor(k).shape[1]
    if past_key is not None:
        p = tensor(past_key).shape[2] if tensor(past_key).rank == 4 else None
        total = p + total if isinstance(p, int) and isinstance(total, int) else None
    mask = None
    if key_mask is not None:
        filter_value = ctx.attr("mask_filter_value", _MASK_FILTER)
        mask = _key_mask(ctx, key_mask, q, filter_value, total)
    if attention_bias is not None:
        mask = attention_bias if mask is None else ctx.temp(ew.Add, mask, attention_bias)
    heads = ctx.required_attr("num_heads")
    scale = ctx.attr("scale")
    return ctx.emit(at.Attention, q, k, v, mask, past_key, past_value, None, outputs=outputs,
                    is_causal=ctx.attr("unidirectional", 0), q_num_heads=heads,
                    kv_num_heads=heads, scale=None if not scale else float(scale))


@contrib("MultiHeadAttention", "query key? value? bias? key_padding_mask? attention_bias? "
         "past_key? past_value? past_sequence_length? cache_indirection?",
         ("num_heads", "scale", "mask_filter_value", "unidirectional"))
def multi_head_attention(ctx):
    """MultiHeadAttention with query (B, S, D), key (B, L, D) and value (B, L, Dv), an
    optional bias (D + D + Dv) added to each, past_key / past_value (B, N, P, H) prepended."""
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    for i, what in ((8, "past_sequence_length"), (9, "cache_indirection")):
        if ctx.input(i) is not None:
            raise ctx.error(f"{what} (a shared KV cache) is not supported")
    if ctx.output_present(3):
        raise ctx.error("the qk output is not supported")
    if k is None or v is None or any(tensor(x).rank != 3 for x in (q, k, v)):
        raise ctx.error("only unpacked 3-D query, key and value are supported (not packed "
                        "QKV or KV, nor BNSH key and value)")
    bias = ctx.input(3)
    if bias is not None:
        d, dv = tensor(q).shape[2], tensor(v).shape[2]
        if not (isinstance(d, int) and isinstance(dv, int)):
            raise ctx.error("a bias needs static hidden sizes")
        q = ctx.temp(ew.Add, q, _slice_last(ctx, bias, 0, d))
        k = ctx.temp(ew.Add, k, _slice_last(ctx, bias, d, 2 * d))
        v = ctx.temp(ew.Add, v, _slice_last(ctx, bias, 2 * d, 2 * d + dv))
    op = _attend(ctx, q, k, v, ctx.input(4), ctx.input(5), ctx.input(6), ctx.input(7),
                 outputs=[0, 1, 2, _unnamed(ctx)])
    return [r if ctx.output_present(i) else None for i, r in enumerate(op.results[:3])]


@contrib("Attention", "input weights bias? mask_index? past? attention_bias? "
         "past_sequence_length?",
         ("num_heads", "qkv_hidden_sizes", "scale", "mask_filter_value", "unidirectional",
          "do_rotary", "rotary_embedding_dim", "past_present_share_buffer"))
def attention(ctx):
    """Attention: q, k, v = input @ weights + bias, split by qkv_hidden_sizes (three equal
    parts by default); past (2, B, N, P, H) holds the past keys and values, present the new."""
    x, w = ctx.input(0), ctx.input(1)
    for name in ("do_rotary", "past_present_share_buffer"):
        if ctx.attr(name, 0):
            raise ctx.error(f"{name} is not supported")
    if ctx.input(6) is not None:
        raise ctx.error("past_sequence_length (a shared past/present buffer) is not supported")
    if tensor(x).rank != 3:
        raise ctx.error(f"input must be (B, S, D), got {x.type}")
    width = tensor(w).shape[-1] if tensor(w).rank == 2 else None
    sizes = ctx.attr("qkv_hidden_sizes")
    if not sizes:
        if not isinstance(width, int) or width % 3:
            raise ctx.error(f"weights of shape {w.type} do not split into q, k and v")
        sizes = [width // 3] * 3
    qkv = ctx.temp(la.MatMul, x, w)
    if ctx.input(2) is not None:
        qkv = ctx.temp(ew.Add, qkv, ctx.input(2))
    bounds = np.cumsum([0, *sizes])
    q, k, v = (_slice_last(ctx, qkv, int(a), int(b)) for a, b in zip(bounds, bounds[1:]))
    past = ctx.input(4)
    past_key = past_value = None
    if past is not None:
        past_key, past_value = (ctx.temp(tn.Squeeze, ctx.temp(tn.Slice, past, _i64(ctx, [i]),
                                                             _i64(ctx, [i + 1]),
                                                             _i64(ctx, [0])), _i64(ctx, [0]))
                                for i in (0, 1))
    op = _attend(ctx, q, k, v, ctx.input(3), ctx.input(5), past_key, past_value,
                 outputs=[0] + [_unnamed(ctx)] * 3)
    if not ctx.output_present(1):
        return [op.results[0]]
    key, value = (ctx.temp(tn.Unsqueeze, r, _i64(ctx, [0])) for r in op.results[1:3])
    return [op.results[0], ctx.value(tn.Concat, [key, value], axis=0)]


@contrib("RotaryEmbedding", "input position_ids cos_cache sin_cache",
         ("num_heads", "rotary_embedding_dim", "interleaved", "is_packed_batching", "scale"))
def rotary_embedding(ctx):
    """nn.rotary_embedding; position_ids (B, S), or one offset for positions offset + 0..S-1.
    ``scale`` is ignored, as onnxruntime's CPU kernel ignores it."""
    if ctx.attr("is_packed_batching", 0):
        raise ctx.error("is_packed_batching (ragged batches) is not supported")
    x, pos = ctx.input(0), ctx.input(1)
    tp = tensor(pos)
    if tp.numel == 1:  # one offset: positions offset + 0 .. S-1 for every batch entry
        seq = tensor(x).shape[1] if tensor(x).rank == 3 else tensor(x).shape[2]
        if not isinstance(seq, int):
            raise ctx.error("a position offset needs a static sequence length")
        steps = ctx.constant(np.arange(seq, dtype=np.int64).reshape(1, seq))
        pos = ctx.temp(ew.Add, steps, ctx.temp(tn.Reshape, pos, _i64(ctx, [1, 1])))
    attrs = {"interleaved": ctx.attr("interleaved", 0),
             "rotary_embedding_dim": ctx.attr("rotary_embedding_dim", 0)}
    if tensor(x).rank == 3:
        attrs["num_heads"] = ctx.attr("num_heads")
    return [ctx.value(at.RotaryEmbedding, x, ctx.input(2), ctx.input(3), pos, **attrs)]


@contrib("GroupNorm", "X gamma beta", ("channels_last", "activation", "groups", "epsilon"))
def group_norm(ctx):
    """nn.group_norm of X (NHWC by default: transposed to channels first and back), then SiLU
    when ``activation`` is 1."""
    x = ctx.input(0)
    rank = tensor(x).rank
    if rank is None or rank < 3:
        raise ctx.error(f"X must have rank 3 or more, got {x.type}")
    channels_last = ctx.attr("channels_last", 1)
    if channels_last:
        x = ctx.temp(tn.Transpose, x, perm=(0, rank - 1, *range(1, rank - 1)))
    scale, bias = ctx.input(1), ctx.input(2)
    if tensor(scale).dtype != tensor(x).dtype:  # f16 X with f32 gamma and beta
        scale = ctx.temp(cs.Cast, scale, to=tensor(x).dtype)
        bias = ctx.temp(cs.Cast, bias, to=tensor(x).dtype)
    y = ctx.temp(nm.GroupNorm, x, scale, bias, epsilon=ctx.attr("epsilon", 1e-5),
                 num_groups=ctx.required_attr("groups"))
    activation = ctx.required_attr("activation")
    if activation not in (0, 1):
        raise ctx.error(f"activation must be 0 (none) or 1 (SiLU), got {activation}")
    if activation:
        y = ctx.temp(act.Swish, y)
    if channels_last:
        y = ctx.temp(tn.Transpose, y, perm=(0, *range(2, rank), 1))
    return [y]  # the importer names it after the node's output
