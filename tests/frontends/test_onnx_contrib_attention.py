"""onnxruntime's attention contrib ops (com.microsoft): Attention, MultiHeadAttention,
RotaryEmbedding, GroupNorm, against onnxruntime (GroupNorm has no CPU kernel there: its
formula), and through the fused pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_pipeline
from ms_helpers import check_ort, ms_model, run_pir

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model

rng = np.random.default_rng(0)
FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"
B, S, L, N, H = 2, 4, 5, 2, 3
D = N * H


def normal(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _check(model, feeds):
    module = check_ort(model, feeds, rtol=1e-5, atol=2e-6)
    check_pipeline(module, feeds, FUSE, atol=1e-5)


KEY_MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)

MHA_CASES = {
    "plain": ({}, ["q", "k", "v"], {}),
    "bias-scale": ({"bias": normal(3 * D)}, ["q", "k", "v", "bias"], {"scale": 0.3}),
    "mask-attention-bias": ({"kpm": KEY_MASK, "ab": normal(B, N, S, L)},
                            ["q", "k", "v", "", "kpm", "ab"], {}),
    "key-lengths": ({"lens": np.array([2, 5], np.int32)}, ["q", "k", "v", "", "lens"], {}),
}


@pytest.mark.parametrize("case", MHA_CASES)
def test_multi_head_attention(case):
    inits, order, attrs = MHA_CASES[case]
    feeds = {"q": normal(B, S, D), "k": normal(B, L, D), "v": normal(B, L, D)}
    _check(ms_model("MultiHeadAttention", feeds, ["y"], inits, order=order, num_heads=N,
                    **attrs), feeds)


def test_multi_head_attention_causal_with_past():
    feeds = {"q": normal(B, S, D), "k": normal(B, S, D), "v": normal(B, S, D),
             "pk": normal(B, N, 3, H), "pv": normal(B, N, 3, H)}
    model = ms_model("MultiHeadAttention", feeds, ["y", "present_key", "present_value"],
                     order=["q", "k", "v", "", "", "", "pk", "pv"], num_heads=N,
                     unidirectional=1)
    _check(model, feeds)


ATTENTION_CASES = {
    "plain": ({}, {}),
    "raw-mask-causal": ({"m": np.array([[1, 1, 1, 0], [1, 1, 1, 1]], np.int32)},
                        {"unidirectional": 1}),
    "lengths": ({"m": np.array([2, 4], np.int32)}, {}),
    "mask-3d": ({"m": np.array([[[1, 0, 1, 1]] * S, [[1, 1, 0, 0]] * S], np.int32)}, {}),
}


@pytest.mark.parametrize("case", ATTENTION_CASES)
def test_attention(case):
    extra, attrs = ATTENTION_CASES[case]
    x = normal(B, S, 6)
    inits = {"W": normal(6, 3 * D), "b": normal(3 * D), **extra}
    _check(ms_model("Attention", {"x": x}, ["y"], inits, num_heads=N, **attrs), {"x": x})


def test_attention_with_past_and_present():
    feeds = {"x": normal(B, S, 6), "past": normal(2, B, N, 3, H)}
    inits = {"W": normal(6, 3 * D), "b": normal(3 * D), "m": np.array([5, 7], np.int32)}
    model = ms_model("Attention", feeds, ["y", "present"], inits,
                     order=["x", "W", "b", "m", "past"], num_heads=N, unidirectional=1)
    _check(model, feeds)


def test_attention_qkv_hidden_sizes():
    x = normal(B, S, 6)
    model = ms_model("Attention", {"x": x}, ["y"], {"W": normal(6, 2 * D + 4)}, num_heads=N,
                     qkv_hidden_sizes=[D, D, 4])
    _check(model, {"x": x})


@pytest.mark.parametrize("node, message", [
    (("Attention", {"W": normal(6, 3 * D)}, {"do_rotary": 1}), "do_rotary is not supported"),
    (("MultiHeadAttention", {}, {}), "only unpacked 3-D query, key and value"),
])
def test_attention_refusals(node, message):
    op, inits, attrs = node
    with pytest.raises(PirError, match=message):
        import_model(ms_model(op, {"x": normal(B, S, 6)}, ["y"], inits, num_heads=N, **attrs))


COS, SIN = normal(16, 4), normal(16, 4)


@pytest.mark.parametrize("x_shape, positions, attrs", [
    ((B, S, N * 8), np.array([[0, 1, 2, 3], [5, 6, 7, 8]], np.int64), {"num_heads": N}),
    ((B, S, N * 8), np.array([3], np.int64), {"num_heads": N, "interleaved": 1}),  # an offset
    ((B, N, S, 8), np.array([[0, 1, 2, 3], [5, 6, 7, 8]], np.int64),
     {"rotary_embedding_dim": 4, "num_heads": N}),
])
def test_rotary_embedding(x_shape, positions, attrs):
    x = normal(*x_shape)
    rot = attrs.get("rotary_embedding_dim", 8)
    inits = {"p": positions, "cos": COS[:, :rot // 2], "sin": SIN[:, :rot // 2]}
    _check(ms_model("RotaryEmbedding", {"x": x}, ["y"], inits, **attrs), {"x": x})


def _group_norm(x, gamma, beta, groups, eps, silu, channels_last):
    if channels_last:
        x = np.moveaxis(x, -1, 1)
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1).astype(np.float64)
    y = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    y = y.reshape(x.shape) * gamma.reshape(1, c, *[1] * (x.ndim - 2)) + \
        beta.reshape(1, c, *[1] * (x.ndim - 2))
    if silu:
        y = y / (1 + np.exp(-y))
    return (np.moveaxis(y, 1, -1) if channels_last else y).astype(np.float32)


@pytest.mark.parametrize("shape, channels_last, groups, silu", [
    ((2, 3, 4, 8), 1, 4, 0), ((2, 3, 4, 8), 1, 2, 1), ((2, 8, 3, 4), 0, 4, 1)])
def test_group_norm_is_its_formula(shape, channels_last, groups, silu):
    x, gamma, beta = normal(*shape), normal(8), normal(8)
    model = ms_model("GroupNorm", {"x": x}, ["y"], {"gamma": gamma, "beta": beta},
                     groups=groups, activation=silu, channels_last=channels_last,
                     epsilon=1e-3)
    module, got = run_pir(model, {"x": x})
    np.testing.assert_allclose(got["y"], _group_norm(x, gamma, beta, groups, 1e-3, silu,
                                                     channels_last), rtol=1e-5, atol=1e-5)
    check_pipeline(module, {"x": x}, FUSE, atol=1e-5)
