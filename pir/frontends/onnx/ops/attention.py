"""ONNX transformer ops (Attention, RotaryEmbedding, SwiGLU) -> nn."""

from __future__ import annotations

from pir.frontends.onnx.importer import dtype_from_onnx
from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import attention as at
from pir.ir.typerules import tensor


@converter("Attention")
def attention(ctx):
    q = ctx.input(0)
    attrs = {
        "is_causal": ctx.attr("is_causal", 0),
        "q_num_heads": ctx.attr("q_num_heads"),
        "kv_num_heads": ctx.attr("kv_num_heads"),
        "scale": ctx.attr("scale"),
        "softcap": ctx.attr("softcap", 0.0),
        "qk_matmul_output_mode": ctx.attr("qk_matmul_output_mode", 0),
        "left_window_size": ctx.attr("left_window_size", -1),  # opset 25
        "right_window_size": ctx.attr("right_window_size", -1),
    }
    if ctx.attr("softmax_precision"):
        attrs["softmax_precision"] = dtype_from_onnx(ctx.attr("softmax_precision"))
    if ctx.opset < 25 and tensor(q).rank == 4:
        # Before opset 25 the head counts of 4-D inputs were ignored rather than refused.
        attrs["q_num_heads"] = attrs["kv_num_heads"] = None
    # Inputs: q, k, v, attn_mask, past_key, past_value, and nonpad_kv_seqlen from opset 24.
    op = ctx.emit(at.Attention, *(ctx.input(i) for i in range(7)), outputs=[0, 1, 2, 3], **attrs)
    return list(op.results)


@converter("RotaryEmbedding")
def rotary_embedding(ctx):
    attrs = {"interleaved": ctx.attr("interleaved", 0), "num_heads": ctx.attr("num_heads"),
             "rotary_embedding_dim": ctx.attr("rotary_embedding_dim", 0)}
    return [ctx.value(at.RotaryEmbedding, *(ctx.input(i) for i in range(4)), **attrs)]


@converter("SwiGLU")
def swiglu(ctx):
    return [ctx.value(at.SwiGLU, ctx.input(0), ctx.input(1), alpha=ctx.attr("alpha", 1.0))]
