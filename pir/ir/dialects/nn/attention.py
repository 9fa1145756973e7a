"""Transformer blocks: scaled dot-product attention, rotary position embedding, SwiGLU."""

from __future__ import annotations

from pir.errors import PirError
from pir.ir import dimexpr as de
from pir.ir.attributes import BOOL, DTYPE, FLOAT, INT
from pir.ir.core import Operation
from pir.ir.dialects.nn.linalg import same_dim
from pir.ir.opdef import Elementwise, Pure, attr, operand, result
from pir.ir.typerules import tensor
from pir.ir.types import Dim, DType, TensorType

__all__ = ["Attention", "RotaryEmbedding", "SwiGLU"]

_F = frozenset({DType.BF16, DType.F16, DType.F32, DType.F64})


def _split_heads(shape: tuple[Dim, ...], heads: int, what: str) -> tuple[Dim, ...]:
    """(B, S, H*D) -> (B, H, S, D), the 4-D layout attention works in."""
    b, s, hidden = shape
    if isinstance(hidden, int) and hidden % heads:
        raise PirError(f"{what}'s hidden size {hidden} is not a multiple of {heads} heads")
    return (b, heads, s, de.floordiv(hidden, heads))  # heads must divide it


class Attention(Operation):
    """y = softmax(softcap(q k^T * scale) + mask) v, over heads (3-D inputs are (B, S, H*D),
    4-D ones (B, H, S, D)); k and v may have fewer heads (GQA/MQA), get past_key/past_value
    prepended (present_key/present_value), a boolean or additive mask, a causal or sliding
    window (offset by the past, or by nonpad_kv_seqlen - S_q), and padding past
    nonpad_kv_seqlen.  qk_matmul_output is q k^T at the stage qk_matmul_output_mode names."""

    name = "nn.attention"
    traits = frozenset({Pure})
    q = operand(dtypes=_F)
    k = operand(dtypes=_F)
    v = operand(dtypes=_F)
    attn_mask = operand(optional=True)
    past_key = operand(optional=True, dtypes=_F)
    past_value = operand(optional=True, dtypes=_F)
    nonpad_kv_seqlen = operand(optional=True, dtypes={DType.I64})
    is_causal = attr(BOOL, False)
    q_num_heads = attr(INT, None)  # 3-D inputs only
    kv_num_heads = attr(INT, None)  # 3-D inputs only
    scale = attr(FLOAT, None)  # absent: 1 / sqrt(head size)
    softcap = attr(FLOAT, 0.0)  # 0: no soft cap
    softmax_precision = attr(DTYPE, None)  # absent: q's type
    qk_matmul_output_mode = attr(INT, 0)  # 0 raw, 1 soft-capped, 2 + mask, 3 softmax
    left_window_size = attr(INT, -1)  # -1: unbounded
    right_window_size = attr(INT, -1)
    y = result()
    present_key = result()
    present_value = result()
    qk_matmul_output = result()

    def verify_(self) -> None:
        if self.nonpad_kv_seqlen is not None and self.past_key is not None:
            raise PirError("nonpad_kv_seqlen (an external cache) excludes past_key/past_value")
        if not 0 <= self.qk_matmul_output_mode <= 3:
            raise PirError(f"qk_matmul_output_mode must be 0 to 3, got {self.qk_matmul_output_mode}")
        for side in ("left", "right"):
            if getattr(self, f"{side}_window_size") < -1:
                raise PirError(f"{side}_window_size must be -1 or non-negative")

    def _heads_layout(self) -> tuple[tuple[Dim, ...], ...] | None:
        """q, k, v as (B, H, S, D) shapes, or None when a rank is unknown."""
        tq, tk, tv = tensor(self.q), tensor(self.k), tensor(self.v)
        if None in (tq.shape, tk.shape, tv.shape):
            return None
        ranks = {len(tq.shape), len(tk.shape), len(tv.shape)}
        if len(ranks) != 1 or ranks.pop() not in (3, 4):
            raise PirError(f"q, k and v must all be 3-D or all 4-D, got {tq}, {tk}, {tv}")
        if len(tq.shape) == 4:
            if self.q_num_heads is not None or self.kv_num_heads is not None:
                raise PirError("q_num_heads and kv_num_heads are for 3-D inputs only")
            return tq.shape, tk.shape, tv.shape
        if self.q_num_heads is None or self.kv_num_heads is None:
            raise PirError("3-D inputs need q_num_heads and kv_num_heads")
        return (_split_heads(tq.shape, self.q_num_heads, "q"),
                _split_heads(tk.shape, self.kv_num_heads, "k"),
                _split_heads(tv.shape, self.kv_num_heads, "v"))

    def infer(self):
        if (self.past_key is None) != (self.past_value is None):
            raise PirError("past_key and past_value go together")
        tq = tensor(self.q)
        unknown = TensorType(tq.dtype, None)
        layout = self._heads_layout()
        if layout is None:
            return [unknown, unknown, TensorType(tensor(self.v).dtype, None), unknown]
        (b, hq, sq, dq), (_, hkv, skv, dk), (_, hv, skv2, dv) = layout
        same_dim(dq, dk, "head sizes of q and k")
        same_dim(skv, skv2, "sequence lengths of k and v")
        hkv = same_dim(hkv, hv, "head counts of k and v")
        if isinstance(hq, int) and isinstance(hkv, int) and hq % hkv:
            raise PirError(f"q's {hq} heads are not a multiple of k/v's {hkv} heads")
        total = skv
        if self.past_key is not None:
            pk, pv = tensor(self.past_key).shape, tensor(self.past_value).shape
            if pk is not None and pv is not None:
                if len(pk) != 4 or len(pv) != 4:
                    raise PirError("past_key and past_value must be 4-D (B, H, S, D)")
                same_dim(pk[3], dk, "head sizes of past_key and k")
                same_dim(pv[3], dv, "head sizes of past_value and v")
                total = de.add(pk[2], skv)
            else:
                total = None
        if len(tq.shape) == 3:
            y_shape = (b, sq, de.mul(hq, dv))
        else:
            y_shape = (b, hq, sq, dv)
        return [TensorType(tq.dtype, y_shape),
                TensorType(tensor(self.k).dtype, (b, hkv, total, dk)),
                TensorType(tensor(self.v).dtype, (b, hkv, total, dv)),
                TensorType(tq.dtype, (b, hq, sq, total))]


class RotaryEmbedding(Operation):
    """y = x with the first rotary_embedding_dim features of each head rotated by the angles of
    cos_cache/sin_cache (indexed by position_ids when given); halves or interleaved pairs."""

    name = "nn.rotary_embedding"
    traits = frozenset({Pure})
    x = operand(dtypes={DType.F32, DType.F16, DType.BF16})
    cos_cache = operand(dtypes={DType.F32, DType.F16, DType.BF16})
    sin_cache = operand(dtypes={DType.F32, DType.F16, DType.BF16})
    position_ids = operand(optional=True, dtypes={DType.I64})
    interleaved = attr(BOOL, False)
    num_heads = attr(INT, None)  # needed for 3-D x, (B, S, H*D)
    rotary_embedding_dim = attr(INT, 0)  # 0: the whole head
    y = result()

    def infer(self):
        tx = tensor(self.x)
        if tx.shape is None:
            return [tx]
        if len(tx.shape) not in (3, 4):
            raise PirError(f"x must be (B, H, S, D) or (B, S, H*D), got {tx}")
        if len(tx.shape) == 3:
            if not self.num_heads:
                raise PirError("3-D x needs num_heads")
            head = _split_heads(tx.shape, self.num_heads, "x")[3]
        else:
            head = tx.shape[3]
        rot = self.rotary_embedding_dim or head
        if isinstance(rot, int) and rot % 2:
            raise PirError(f"the rotary dim {rot} must be even")
        want_rank = 2 if self.position_ids is not None else 3
        for name in ("cos_cache", "sin_cache"):
            t = tensor(getattr(self, name))
            if t.shape is None:
                continue
            if len(t.shape) != want_rank:
                raise PirError(f"{name} must have rank {want_rank} "
                               f"({'with' if want_rank == 2 else 'without'} position_ids), "
                               f"got {t}")
            if isinstance(rot, int):
                same_dim(t.shape[-1], rot // 2, f"{name}'s last dim and rotary dim / 2")
        return [tx]


class SwiGLU(Operation):
    """y = a * sigmoid(alpha * a) * b (the Swish-gated linear unit); a and b have one shape."""

    name = "nn.swiglu"
    traits = frozenset({Pure, Elementwise})
    a = operand(dtypes=_F)
    b = operand(dtypes=_F)
    alpha = attr(FLOAT, 1.0)
    y = result()

    def infer(self):
        ta, tb = tensor(self.a), tensor(self.b)
        if ta.dtype != tb.dtype:
            raise PirError(f"a and b have element types {ta.dtype.value} and {tb.dtype.value}")
        if ta.shape is not None and tb.shape is not None:
            if len(ta.shape) != len(tb.shape):
                raise PirError(f"a {ta} and b {tb} must have one shape (no broadcasting)")
            shape = tuple(same_dim(x, y, "dims of a and b") for x, y in zip(ta.shape, tb.shape))
            return [ta.with_shape(shape)]
        return [ta if ta.shape is not None else tb]
