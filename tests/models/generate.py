#!/usr/bin/env python
"""Regenerate the small ONNX test models in this directory.

Run from the repository root with a Python environment that has torch (CPU),
transformers, onnx, onnxruntime and numpy installed (see README.md):

    /work/torchenv/bin/python tests/models/generate.py            # all models
    /work/torchenv/bin/python tests/models/generate.py gpt2 resnet # a subset

Every model is built from a tiny config (no pretrained weights are downloaded),
then EVERY floating-point parameter and BatchNorm statistic is re-initialised
with seeded random values, so the weights are non-trivial and reproducible.
Each model is exported with the TorchScript ONNX exporter (dynamo=False),
opset 17, into a single self-contained .onnx file, checked with
onnx.checker, and run with onnxruntime on the saved inputs
(<name>.inputs.npz); the onnxruntime outputs are compared against PyTorch.
Models with dynamic dims are additionally checked on a second input shape.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections import Counter


import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

OPSET = 17
HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 128

torch.set_num_threads(1)  # deterministic float reductions


# --------------------------------------------------------------------------
# weight initialisation
# --------------------------------------------------------------------------

# Float buffers that are a deterministic function of the config (not weights);
# randomising them would produce a model that is no longer the architecture.
_KEEP_BUFFERS = ("inv_freq", "original_inv_freq")


@torch.no_grad()
def reinit_(model: nn.Module, seed: int) -> None:
    """Re-initialise every parameter and (float) buffer with seeded values."""
    g = torch.Generator().manual_seed(seed)

    def randn(shape):
        return torch.randn(shape, generator=g)

    for name, p in model.named_parameters():
        leaf = name.rsplit(".", 1)[-1]
        if p.dim() == 1:
            if leaf == "weight" or leaf == "scale":  # norm scales (LN/RMSNorm/BN)
                p.copy_(1.0 + 0.1 * randn(p.shape))
            else:  # biases
                p.copy_(0.1 * randn(p.shape))
        elif leaf == "weight":
            # Linear [out, in] / Conv [out, in/groups, *k] / Embedding [n, d] /
            # GPT-2 Conv1D [in, out]: scale by ~1/sqrt(fan_in), clamped.
            if "Conv1D" in type(_owner(model, name)).__name__:
                fan_in = p.shape[0]
            elif isinstance(_owner(model, name), nn.Embedding):
                fan_in = p.shape[1]
            else:
                fan_in = math.prod(p.shape[1:])
            std = min(0.2, max(0.02, 1.0 / math.sqrt(fan_in)))
            p.copy_(std * randn(p.shape))
        else:  # cls tokens, position embedding tables stored as raw params
            p.copy_(0.1 * randn(p.shape))

    for name, b in model.named_buffers():
        leaf = name.rsplit(".", 1)[-1]
        if not b.is_floating_point() or leaf in _KEEP_BUFFERS:
            continue  # position_ids, num_batches_tracked, rotary inv_freq
        if leaf == "running_mean":
            b.copy_(0.1 * randn(b.shape))
        elif leaf == "running_var":
            b.copy_(0.5 + torch.rand(b.shape, generator=g))
        else:
            raise RuntimeError(f"unexpected float buffer {name} {tuple(b.shape)}")


def _owner(model: nn.Module, pname: str) -> nn.Module:
    mod_name = pname.rsplit(".", 1)[0] if "." in pname else ""
    return model.get_submodule(mod_name)


# --------------------------------------------------------------------------
# hand-written CNNs
# --------------------------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + identity)


class TinyResNet(nn.Module):
    """ResNet-18-style: stem conv/bn/relu/maxpool, 3 stages x 2 basic blocks."""

    def __init__(self, num_classes: int = 10, widths=(16, 32, 64)):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], widths[0]
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w, 1)))
            cin = w
        self.layer1, self.layer2, self.layer3 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer3(self.layer2(self.layer1(x)))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def conv_bn_act(cin, cout, k, stride, groups=1, act: type[nn.Module] | None = nn.ReLU6):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand, act):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        layers = []
        if expand != 1:
            layers.append(conv_bn_act(cin, hidden, 1, 1, act=act))  # pointwise expand
        layers.append(conv_bn_act(hidden, hidden, 3, stride, groups=hidden, act=act))  # depthwise
        layers.append(conv_bn_act(hidden, cout, 1, 1, act=None))  # linear bottleneck
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class TinyMobileNetV2(nn.Module):
    """MobileNetV2-style: inverted residuals, depthwise convs, ReLU6 then Hardswish."""

    # (expand t, out channels c, repeats n, stride s, activation)
    CFG = [
        (1, 16, 1, 1, nn.ReLU6),
        (4, 24, 2, 2, nn.ReLU6),
        (4, 32, 2, 2, nn.Hardswish),
        (4, 48, 1, 1, nn.Hardswish),
    ]

    def __init__(self, num_classes: int = 10, last: int = 128):
        super().__init__()
        feats = [conv_bn_act(3, 16, 3, 2, act=nn.ReLU6)]
        cin = 16
        for t, c, n, s, act in self.CFG:
            for i in range(n):
                feats.append(InvertedResidual(cin, c, s if i == 0 else 1, t, act))
                cin = c
        feats.append(conv_bn_act(cin, last, 1, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*feats)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(last, num_classes)

    def forward(self, x):
        x = self.pool(self.features(x)).flatten(1)
        return self.classifier(x)


# --------------------------------------------------------------------------
# transformers wrappers (plain tuple outputs, no caches)
# --------------------------------------------------------------------------


class CausalLMWrapper(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask):
        out = self.m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False, return_dict=True)
        return (out.logits,)


class BertWrapper(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.m(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, return_dict=True
        )
        return out.last_hidden_state, out.pooler_output


class T5Wrapper(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask, decoder_input_ids):
        out = self.m(
            input_ids=input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            use_cache=False,
            return_dict=True,
        )
        return out.last_hidden_state, out.encoder_last_hidden_state


class WhisperWrapper(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_features, decoder_input_ids):
        # An explicit all-ones decoder mask: without it transformers' mask code
        # takes a packed-sequence path using aten::diff, which has no ONNX export.
        out = self.m(
            input_features=input_features,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=torch.ones_like(decoder_input_ids),
            use_cache=False,
            return_dict=True,
        )
        return out.last_hidden_state, out.encoder_last_hidden_state


class ViTWrapper(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, pixel_values):
        out = self.m(pixel_values=pixel_values, return_dict=True)
        return out.last_hidden_state, out.pooler_output


# --------------------------------------------------------------------------
# model specs
# --------------------------------------------------------------------------


def _ids(rng, shape, vocab=VOCAB, low=0):
    return rng.integers(low, vocab, size=shape, dtype=np.int64)


def _ones(shape):
    return np.ones(shape, dtype=np.int64)


def _randf(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def _padded_mask(shape):
    """Attention mask with right padding on every row but the first."""
    b, s = shape
    m = np.ones(shape, dtype=np.int64)
    for i in range(1, b):
        m[i, s - i :] = 0
    return m


def build_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=4,
        bos_token_id=0, eos_token_id=1, pad_token_id=1, use_cache=False,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )
    cfg._attn_implementation = "eager"
    model = GPT2LMHeadModel(cfg)
    return CausalLMWrapper(model), cfg


def build_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=0, eos_token_id=1, pad_token_id=2, tie_word_embeddings=False, use_cache=False,
    )
    cfg._attn_implementation = "eager"
    model = LlamaForCausalLM(cfg)
    return CausalLMWrapper(model), cfg


def build_bert():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=64, type_vocab_size=2, pad_token_id=0,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )
    cfg._attn_implementation = "eager"
    model = BertModel(cfg, add_pooling_layer=True)
    return BertWrapper(model), cfg


def build_t5():
    from transformers import T5Config, T5Model

    cfg = T5Config(
        vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
        num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=32,
        dropout_rate=0.0, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, use_cache=False,
        feed_forward_proj="relu",
    )
    cfg._attn_implementation = "eager"
    model = T5Model(cfg)
    return T5Wrapper(model), cfg


WHISPER_MELS, WHISPER_SRC_POS = 16, 16  # input_features: [B, 16, 32]


def build_whisper():
    from transformers import WhisperConfig, WhisperModel

    cfg = WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=WHISPER_MELS, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
        max_source_positions=WHISPER_SRC_POS, max_target_positions=32,
        pad_token_id=1, bos_token_id=0, eos_token_id=1, decoder_start_token_id=0,
        suppress_tokens=None, begin_suppress_tokens=None, forced_decoder_ids=None,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, use_cache=False,
    )
    cfg._attn_implementation = "eager"
    model = WhisperModel(cfg)
    return WhisperWrapper(model), cfg


def build_vit():
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(
        image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    cfg._attn_implementation = "eager"
    model = ViTModel(cfg, add_pooling_layer=True)
    return ViTWrapper(model), cfg


def build_resnet():
    return TinyResNet(), None


def build_mobilenet():
    return TinyMobileNetV2(), None


# name -> (builder, input specs, output names, dynamic axes, alt shape fn, seed)
# input spec: (name, maker(rng, shape) -> ndarray, shape, alt_shape)
B, S = 2, 8
B2, S2 = 3, 12  # second shape used to check the dynamic dims


def _tok(name, vocab=VOCAB):
    return (name, lambda rng, shp: _ids(rng, shp, vocab), (B, S), (B2, S2))


def _mask(name):
    return (name, lambda rng, shp: _ones(shp), (B, S), (B2, S2))


def _ttype(name):
    return (name, lambda rng, shp: (np.arange(shp[1])[None, :] >= shp[1] // 2).astype(np.int64).repeat(shp[0], 0), (B, S), (B2, S2))


BS = {0: "batch", 1: "seq"}
MODELS: dict[str, dict] = {
    "gpt2": dict(
        build=build_gpt2, seed=1,
        inputs=[_tok("input_ids"), _mask("attention_mask")],
        outputs=["logits"],
        dynamic_axes={"input_ids": BS, "attention_mask": BS, "logits": BS},
    ),
    "bert": dict(
        build=build_bert, seed=2,
        inputs=[_tok("input_ids"), _mask("attention_mask"), _ttype("token_type_ids")],
        outputs=["last_hidden_state", "pooler_output"],
        dynamic_axes={"input_ids": BS, "attention_mask": BS, "token_type_ids": BS,
                      "last_hidden_state": BS, "pooler_output": {0: "batch"}},
    ),
    "llama": dict(
        build=build_llama, seed=3,
        inputs=[_tok("input_ids"), _mask("attention_mask")],
        outputs=["logits"],
        dynamic_axes={"input_ids": BS, "attention_mask": BS, "logits": BS},
    ),
    "t5": dict(
        build=build_t5, seed=4,
        inputs=[_tok("input_ids"), _mask("attention_mask"),
                ("decoder_input_ids", lambda rng, shp: _ids(rng, shp), (B, 4), (B2, 6))],
        outputs=["last_hidden_state", "encoder_last_hidden_state"],
        dynamic_axes={"input_ids": BS, "attention_mask": BS,
                      "decoder_input_ids": {0: "batch", 1: "dec_seq"},
                      "last_hidden_state": {0: "batch", 1: "dec_seq"},
                      "encoder_last_hidden_state": BS},
    ),
    "whisper": dict(
        build=build_whisper, seed=5,
        inputs=[("input_features", _randf, (1, WHISPER_MELS, 2 * WHISPER_SRC_POS), (2, WHISPER_MELS, 2 * WHISPER_SRC_POS)),
                ("decoder_input_ids", lambda rng, shp: _ids(rng, shp), (1, 4), (2, 7))],
        outputs=["last_hidden_state", "encoder_last_hidden_state"],
        dynamic_axes={"input_features": {0: "batch"},
                      "decoder_input_ids": {0: "batch", 1: "dec_seq"},
                      "last_hidden_state": {0: "batch", 1: "dec_seq"},
                      "encoder_last_hidden_state": {0: "batch"}},
    ),
    "vit": dict(
        build=build_vit, seed=6,
        inputs=[("pixel_values", _randf, (1, 3, 32, 32), (2, 3, 32, 32))],
        outputs=["last_hidden_state", "pooler_output"],
        dynamic_axes={"pixel_values": {0: "batch"}, "last_hidden_state": {0: "batch"},
                      "pooler_output": {0: "batch"}},
    ),
    "resnet": dict(
        build=build_resnet, seed=7,
        inputs=[("input", _randf, (1, 3, 32, 32), (3, 3, 32, 32))],
        outputs=["logits"],
        dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
        # keep BatchNormalization nodes (constant folding would fuse them into Conv)
        constant_folding=False,
    ),
    "mobilenet": dict(
        build=build_mobilenet, seed=8,
        inputs=[("input", _randf, (1, 3, 32, 32), (3, 3, 32, 32))],
        outputs=["logits"],
        dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
        constant_folding=False,
    ),
}


# --------------------------------------------------------------------------
# export + checks
# --------------------------------------------------------------------------


def make_inputs(spec, seed: int, alt: bool = False) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + (1000 if alt else 0))
    feeds = {}
    for name, maker, shape, alt_shape in spec["inputs"]:
        feeds[name] = maker(rng, alt_shape if alt else shape)
    if alt and "attention_mask" in feeds:  # exercise the mask on the 2nd check
        feeds["attention_mask"] = _padded_mask(feeds["attention_mask"].shape)
    return feeds


def torch_run(model, feeds):
    with torch.no_grad():
        out = model(*[torch.from_numpy(v) for v in feeds.values()])
    if isinstance(out, torch.Tensor):
        out = (out,)
    return [o.detach().numpy() for o in out]


def check_close(name, what, ref, got, feeds):
    for i, (r, o) in enumerate(zip(ref, got)):
        if r.shape != o.shape:
            raise AssertionError(f"{name} {what}: output {i} shape {o.shape} != torch {r.shape}")
        if not np.isfinite(o).all():
            raise AssertionError(f"{name} {what}: output {i} has NaN/inf")
        if np.abs(o).max() < 1e-3 or np.std(o) < 1e-3:
            raise AssertionError(f"{name} {what}: output {i} is ~constant/zero")
        valid = np.ones(r.shape, dtype=bool)
        # positions masked out by padding may legitimately differ
        mask = feeds.get("attention_mask")
        if mask is not None and r.ndim == 3 and r.shape[:2] == mask.shape:
            valid = np.broadcast_to(mask.astype(bool)[..., None], r.shape)
        err = np.abs(r - o)[valid].max()
        if err > 1e-4 * max(1.0, np.abs(r).max()):
            raise AssertionError(f"{name} {what}: output {i} max abs err {err:g}")


def export_one(name: str) -> None:
    spec = MODELS[name]
    seed = spec["seed"]
    torch.manual_seed(seed)
    model, _cfg = spec["build"]()
    reinit_(model, seed)
    model.eval()

    feeds = make_inputs(spec, seed)
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    path = os.path.join(HERE, f"{name}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # legacy exporter notice
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        # transformers' mask code indexes the 2D padding mask with arange()
        # indices (never negative), so this generic warning does not apply.
        warnings.filterwarnings("ignore", message="Exporting aten::index operator of advanced indexing")
        torch.onnx.export(
            model, args, path,
            dynamo=False,
            opset_version=OPSET,
            input_names=list(feeds),
            output_names=spec["outputs"],
            dynamic_axes=spec["dynamic_axes"],
            do_constant_folding=spec.get("constant_folding", True),
        )

    # Re-save through onnx: guarantees a single self-contained file with no
    # external data and strips the per-node doc strings.
    m = onnx.load(path)
    for n in m.graph.node:
        n.doc_string = ""
    # The exporter sometimes leaves static output dims as generated symbols
    # (e.g. ViT's token dim): pin every non-dynamic dim to its concrete size.
    ref = torch_run(model, feeds)
    for vi, r in zip(m.graph.output, ref):
        dyn = spec["dynamic_axes"].get(vi.name, {})
        for ax, d in enumerate(vi.type.tensor_type.shape.dim):
            if ax in dyn:
                d.dim_param = dyn[ax]
            else:
                d.dim_value = r.shape[ax]
    onnx.save_model(m, path, save_as_external_data=False)
    if any(f.startswith(name + ".onnx") and f != name + ".onnx" for f in os.listdir(HERE)):
        raise AssertionError(f"{name}: stray external data file")
    onnx.checker.check_model(path, full_check=True)
    np.savez(os.path.join(HERE, f"{name}.inputs.npz"), **feeds)

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == list(feeds), (name, [i.name for i in sess.get_inputs()])
    check_close(name, "saved inputs", ref, sess.run(None, feeds), feeds)
    alt = make_inputs(spec, seed, alt=True)
    check_close(name, "alt shape", torch_run(model, alt), sess.run(None, alt), alt)

    ops = Counter((n.domain or "", n.op_type) for n in m.graph.node)
    size = os.path.getsize(path)
    print(f"{name}: {size / 1024:.0f} KiB, opset {OPSET}, {sum(ops.values())} nodes, "
          f"{len(ops)} op types", flush=True)


def main(argv: list[str]) -> int:
    names = argv or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"unknown model(s): {unknown}; choose from {list(MODELS)}", file=sys.stderr)
        return 2
    for n in names:
        export_one(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
