"""Attention, RotaryEmbedding and SwiGLU: import, round trip, run, and compare with ONNX Runtime
(SwiGLU, which it lacks, with the ONNX formula); type rules and their diagnostics."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import check_model, node_model
from onnx import helper

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dimexpr import parse_dim_expr
from pir.ir.types import DType, TensorType

rng = np.random.default_rng(0)
B, SQ, SKV, D = 2, 4, 6, 8


def normal(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def attention_op(module):
    fn = module.body.block.ops[0]
    return next(o for o in fn.walk() if o.name == "nn.attention")


ALL_OUTPUTS = ["Y", "present_key", "present_value", "qk_matmul_output"]
INPUTS = ["Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"]


def attention_model(feeds, outputs=("Y",), opset=23, **attrs):
    """A one-node Attention model; inputs go to their ONNX positions by name, absent ones
    left empty (node_model would shift them left)."""
    used = [n for n in INPUTS if n in feeds]
    names = INPUTS[: INPUTS.index(used[-1]) + 1]
    node = helper.make_node("Attention", [n if n in feeds else "" for n in names],
                            list(outputs), name="/attention", **attrs)
    g_in = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(feeds[n].dtype),
                                          feeds[n].shape) for n in used]
    g_out = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in outputs
             if o]
    graph = helper.make_graph([node], "test_attention", g_in, g_out)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model = onnx.shape_inference.infer_shapes(model)
    model.ir_version = min(model.ir_version, 10)
    return model


def onnx_reference(model, feeds):
    """ONNX's own reference evaluator, for cases ONNX Runtime does not run."""
    from onnx.reference import ReferenceEvaluator

    names = [o.name for o in model.graph.output]
    return dict(zip(names, ReferenceEvaluator(model).run(None, feeds)))


def qkv(hq=3, hkv=3, dv=D, three_d=False, dtype=np.float32):
    if three_d:
        return {"Q": normal(B, SQ, hq * D, dtype=dtype), "K": normal(B, SKV, hkv * D, dtype=dtype),
                "V": normal(B, SKV, hkv * dv, dtype=dtype)}
    return {"Q": normal(B, hq, SQ, D, dtype=dtype), "K": normal(B, hkv, SKV, D, dtype=dtype),
            "V": normal(B, hkv, SKV, dv, dtype=dtype)}


@pytest.mark.parametrize("heads", [(3, 3), (6, 3), (4, 1)])  # MHA, GQA, MQA
@pytest.mark.parametrize("three_d", [False, True])
@pytest.mark.parametrize("attrs", [{}, {"is_causal": 1}, {"scale": 0.1}, {"softcap": 2.0}])
def test_attention(heads, three_d, attrs):
    hq, hkv = heads
    feeds = qkv(hq, hkv, dv=10, three_d=three_d)
    if three_d:
        attrs = {**attrs, "q_num_heads": hq, "kv_num_heads": hkv}
    module = check_model(node_model("Attention", feeds, ["Y"], opset=23, **attrs), feeds,
                         rtol=1e-4, atol=1e-5)
    y_shape = (B, SQ, hq * 10) if three_d else (B, hq, SQ, 10)
    assert attention_op(module).results[0].type == TensorType(DType.F32, y_shape)


@pytest.mark.parametrize("mask_shape", [(SQ, SKV), (B, 1, SQ, SKV), (B, 3, SQ, SKV), (3, SQ, SKV)])
@pytest.mark.parametrize("mask_kind", ["bool", "float"])
@pytest.mark.parametrize("is_causal", [0, 1])
def test_attention_masks(mask_shape, mask_kind, is_causal):
    feeds = qkv()
    if mask_kind == "bool":
        mask = rng.random(mask_shape) < 0.7
        mask[..., 0] = True  # keep every row attending somewhere, as ONNX Runtime expects
    else:
        mask = normal(*mask_shape)
    feeds["attn_mask"] = mask
    check_model(node_model("Attention", feeds, ["Y"], opset=23, is_causal=is_causal), feeds,
                rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_attention_past_present_and_qk_output(mode):
    feeds = qkv(6, 3)
    past = 5
    feeds["attn_mask"] = normal(SQ, past + SKV)
    feeds["past_key"] = normal(B, 3, past, D)
    feeds["past_value"] = normal(B, 3, past, D)
    attrs = {"qk_matmul_output_mode": mode, "softcap": 3.0}  # mode 0 is before the cap
    module = check_model(attention_model(feeds, ALL_OUTPUTS, **attrs), feeds,
                         rtol=1e-4, atol=1e-5)
    types = [r.type.shape for r in attention_op(module).results]
    assert types == [(B, 6, SQ, D), (B, 3, past + SKV, D), (B, 3, past + SKV, D),
                     (B, 6, SQ, past + SKV)]


def test_attention_fully_masked_rows_are_zero():
    feeds = qkv()
    mask = np.ones((SQ, SKV), bool)
    mask[1] = False  # query 1 sees no key: its output is 0, not NaN
    feeds["attn_mask"] = mask
    module = import_model(node_model("Attention", feeds, ["Y"], opset=23))
    from pir.runtimes.reference import run_function

    y = run_function(module, feeds)["Y"]
    assert np.all(y[:, :, 1] == 0) and not np.isnan(y).any()


@pytest.mark.parametrize("attrs", [{}, {"is_causal": 1}])
def test_attention_nonpad_kv_seqlen(attrs):
    feeds = qkv()
    feeds["nonpad_kv_seqlen"] = np.array([SQ, SKV - 1], np.int64)
    check_model(attention_model(feeds, opset=24, **attrs), feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", [{}, {"is_causal": 1, "left_window_size": 2}])
def test_attention_short_mask_with_external_cache(attrs):
    # The mask may stop at the longest valid key; keys past it are masked out.
    feeds = qkv()
    feeds["attn_mask"] = normal(B, 1, SQ, SKV - 2)
    feeds["nonpad_kv_seqlen"] = np.array([SKV - 3, SKV - 2], np.int64)
    model = attention_model(feeds, opset=25, **attrs)
    check_model(model, feeds, rtol=1e-4, atol=1e-5, expected=onnx_reference(model, feeds))


@pytest.mark.parametrize("window", [(2, -1), (1, 1), (-1, 0)])
def test_attention_sliding_window(window):
    feeds = qkv()
    left, right = window
    check_model(node_model("Attention", feeds, ["Y"], opset=25, left_window_size=left,
                           right_window_size=right), feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("precision", [None, onnx.TensorProto.FLOAT])
def test_attention_float16(precision):
    feeds = qkv(dtype=np.float16)
    attrs = {"softmax_precision": precision} if precision else {}
    module = check_model(node_model("Attention", feeds, ["Y"], opset=23, is_causal=1, **attrs),
                         feeds, rtol=2e-3, atol=2e-3)
    assert attention_op(module).softmax_precision == (DType.F32 if precision else None)


def test_attention_type_rule_keeps_symbols():
    from pir.ir.core import Block
    from pir.ir.dialects.nn.attention import Attention

    f32 = lambda *shape: TensorType(DType.F32, shape)  # noqa: E731
    block = Block([f32("B", "S", 64), f32("B", "S", 16), f32("B", "S", 16),
                   f32("B", 2, "P", 8), f32("B", 2, "P", 8)])
    q, k, v, pk, pv = block.args
    op = Attention.build(q, k, v, None, pk, pv, q_num_heads=8, kv_num_heads=2)
    total = parse_dim_expr("P + S")  # the past and the new keys
    assert [r.type for r in op.results] == [
        f32("B", "S", 64), f32("B", 2, total, 8), f32("B", 2, total, 8), f32("B", 8, "S", total)]


def test_attention_3d_needs_head_counts():
    feeds = qkv(three_d=True)
    with pytest.raises(PirError, match="3-D inputs need q_num_heads and kv_num_heads"):
        import_model(node_model("Attention", feeds, ["Y"], opset=23))


def test_attention_heads_must_group():
    feeds = qkv(4, 3)
    with pytest.raises(PirError, match="q's 4 heads are not a multiple of k/v's 3 heads"):
        import_model(node_model("Attention", feeds, ["Y"], opset=23))


def test_attention_past_needs_both_halves():
    feeds = qkv()
    feeds["attn_mask"] = normal(SQ, 2 + SKV)
    feeds["past_key"] = normal(B, 3, 2, D)
    with pytest.raises(PirError, match="past_key and past_value go together"):
        import_model(attention_model(feeds))


@pytest.mark.parametrize("attrs", [{}, {"interleaved": 1}, {"rotary_embedding_dim": 4},
                                   {"interleaved": 1, "rotary_embedding_dim": 4}])
@pytest.mark.parametrize("layout", ["4d", "3d", "no_position_ids"])
def test_rotary_embedding(attrs, layout):
    heads, seq, head = 4, 3, 8
    rot = attrs.get("rotary_embedding_dim", head)
    if layout == "3d":
        feeds = {"x": normal(B, seq, heads * head)}
        attrs = {**attrs, "num_heads": heads}
    else:
        feeds = {"x": normal(B, heads, seq, head)}
    if layout == "no_position_ids":
        feeds["cos"], feeds["sin"] = normal(B, seq, rot // 2), normal(B, seq, rot // 2)
    else:
        feeds["cos"], feeds["sin"] = normal(50, rot // 2), normal(50, rot // 2)
        feeds["position_ids"] = rng.integers(0, 50, (B, seq)).astype(np.int64)
    check_model(node_model("RotaryEmbedding", feeds, ["y"], opset=23, **attrs), feeds)


def test_rotary_embedding_3d_needs_num_heads():
    feeds = {"x": normal(B, 3, 32), "cos": normal(50, 4), "sin": normal(50, 4),
             "position_ids": np.zeros((B, 3), np.int64)}
    with pytest.raises(PirError, match="3-D x needs num_heads"):
        import_model(node_model("RotaryEmbedding", feeds, ["y"], opset=23))


def test_rotary_embedding_cache_must_fit_rotary_dim():
    feeds = {"x": normal(B, 4, 3, 8), "cos": normal(50, 3), "sin": normal(50, 3),
             "position_ids": np.zeros((B, 3), np.int64)}
    with pytest.raises(PirError, match="cos_cache's last dim and rotary dim / 2: 3 and 4 differ"):
        import_model(node_model("RotaryEmbedding", feeds, ["y"], opset=23))


def swiglu(a, b, alpha):
    return (a * (1 / (1 + np.exp(-alpha * a))) * b).astype(a.dtype)


@pytest.mark.parametrize("alpha", [1.0, 0.5, 1.702])
@pytest.mark.parametrize("shape", [(2, 4), (3, 2, 5)])
@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-6), (np.float16, 2e-3)])
def test_swiglu(alpha, shape, dtype, tol):
    # ONNX Runtime has no SwiGLU kernel: compare with the ONNX formula.
    feeds = {"a": normal(*shape, dtype=dtype), "b": normal(*shape, dtype=dtype)}
    want = swiglu(feeds["a"].astype(np.float64), feeds["b"].astype(np.float64), alpha)
    check_model(node_model("SwiGLU", feeds, ["y"], opset=28, alpha=alpha), feeds,
                rtol=tol, atol=tol, expected={"y": want.astype(dtype)})


def test_swiglu_shapes_must_match():
    feeds = {"a": normal(2, 4), "b": normal(1, 4)}
    with pytest.raises(PirError, match="dims of a and b: 2 and 1 differ"):
        import_model(node_model("SwiGLU", feeds, ["y"], opset=28))


@pytest.mark.parametrize("mode", [0, 3])
def test_attention_qk_output_without_cache(mode):
    feeds = qkv(4, 2)
    feeds["attn_mask"] = rng.random((SQ, SKV)) < 0.8
    feeds["attn_mask"][:, 0] = True
    model = attention_model(feeds, ("Y", "", "", "qk"), qk_matmul_output_mode=mode, softcap=2.0)
    check_model(model, feeds, rtol=1e-4, atol=1e-5)
