"""Generated benchmark models, built with onnx.helper from seeded random weights (no
downloads, the same bytes every run):

- ``transformer``: a GPT-2-style pre-norm decoder stack (bench/pass_throughput.py,
  bench/models.py, bench/compile.py);
- ``bert``: a BERT-base-style post-norm encoder with an attention mask;
- ``resnet50``: a ResNet-50-style CNN (bottleneck blocks, batch-norm, relu).

Every model is shape-inferred and uses opset 20 (which has LayerNormalization and Gelu), the
form a user's exported model has.  ``batch`` may be a symbol (``"B"``) or a number.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["transformer", "bert", "resnet50", "OPSET"]

OPSET = 20


class _Graph:
    """Collects ONNX nodes and initializers, naming values per layer."""

    def __init__(self, seed: int):
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)

    def weight(self, name: str, *shape: int, scale: float = 0.02, mean: float = 0.0) -> str:
        arr = (self.rng.standard_normal(shape) * scale + mean).astype(np.float32)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def const(self, name: str, value) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"/{out}", **attrs))
        return out

    def linear(self, x: str, p: str, n_in: int, n_out: int) -> str:
        y = self.node("MatMul", [x, self.weight(f"{p}.w", n_in, n_out)], f"{p}.mm")
        return self.node("Add", [y, self.weight(f"{p}.b", n_out)], p)

    def layer_norm(self, x: str, p: str, hidden: int, out: str | None = None) -> str:
        return self.node("LayerNormalization", [x, self.weight(f"{p}.g", hidden, scale=1.0),
                                                self.weight(f"{p}.b", hidden)], out or p,
                         axis=-1)

    def model(self, name: str, inputs, outputs) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 10
        return onnx.shape_inference.infer_shapes(model)


def _attention(g: _Graph, x: str, p: str, hidden: int, heads: int, mask: str | None) -> str:
    """Multi-head self-attention on x: [B, S, hidden]; ``mask`` is added to the scores."""
    hd = hidden // heads
    to_heads = g.const(f"{p}.heads", np.array([0, 0, heads, hd], np.int64))
    qkv = {}
    for name in "qkv":
        y = g.linear(x, f"{p}.{name}", hidden, hidden)
        y = g.node("Reshape", [y, to_heads], f"{p}.{name}.split")
        perm = [0, 2, 3, 1] if name == "k" else [0, 2, 1, 3]  # k is transposed for q.kT
        qkv[name] = g.node("Transpose", [y], f"{p}.{name}.t", perm=perm)
    s = g.node("MatMul", [qkv["q"], qkv["k"]], f"{p}.scores")
    s = g.node("Mul", [s, g.const(f"{p}.scale", np.float32(1 / np.sqrt(hd)))], f"{p}.scaled")
    if mask is not None:
        s = g.node("Add", [s, mask], f"{p}.masked")
    a = g.node("Softmax", [s], f"{p}.probs", axis=-1)
    o = g.node("MatMul", [a, qkv["v"]], f"{p}.ctx")
    o = g.node("Transpose", [o], f"{p}.ctx.t", perm=[0, 2, 1, 3])
    o = g.node("Reshape", [o, g.const(f"{p}.merge", np.array([0, 0, hidden], np.int64))],
               f"{p}.ctx.merge")
    return g.linear(o, f"{p}.proj", hidden, hidden)


def _mlp(g: _Graph, x: str, p: str, hidden: int) -> str:
    m = g.node("Gelu", [g.linear(x, f"{p}.fc1", hidden, 4 * hidden)], f"{p}.gelu")
    return g.linear(m, f"{p}.fc2", 4 * hidden, hidden)


def _gpt_layer(g: _Graph, x: str, i: int, hidden: int, heads: int) -> str:
    """A pre-norm block: x + attn(ln(x)), then h + mlp(ln(h))."""
    p = f"h{i}"
    h = g.node("Add", [x, _attention(g, g.layer_norm(x, f"{p}.ln1", hidden), p, hidden, heads,
                                     None)], f"{p}.res1")
    return g.node("Add", [h, _mlp(g, g.layer_norm(h, f"{p}.ln2", hidden), p, hidden)],
                  f"{p}.res2")


def transformer(layers: int, hidden: int, heads: int, seq: int = 64,
                batch: int | str = "B") -> onnx.ModelProto:
    """A GPT-style stack of ``layers`` pre-norm blocks and a final layer_norm on
    x: tensor<batch x seq x hidden> (the embeddings)."""
    g = _Graph(seed=layers)
    x = "x"
    for i in range(layers):
        x = _gpt_layer(g, x, i, hidden, heads)
    g.layer_norm(x, "ln_f", hidden, out="y")
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [batch, seq, hidden])
          for n in ("x", "y")]
    return g.model(f"gpt{layers}", io[:1], io[1:])


def bert(layers: int = 4, hidden: int = 768, heads: int = 12, seq: int = 128,
         batch: int | str = "B") -> onnx.ModelProto:
    """A BERT-base-style encoder: layer_norm of the embeddings x: [batch, seq, hidden], then
    ``layers`` post-norm blocks, h = ln(x + attn(x)), y = ln(h + mlp(h)), with GELU (erf) and
    an attention mask: [batch, seq] of 1 (attend) and 0 (padding), made additive as
    (1 - mask) * -10000 and broadcast over heads and query positions."""
    g = _Graph(seed=100 + layers)
    x = g.layer_norm("x", "emb.ln", hidden)
    m = g.node("Unsqueeze", ["mask", g.const("mask.axes", np.array([1, 2], np.int64))],
               "mask.4d")
    m = g.node("Sub", [g.const("one", np.float32(1)), m], "mask.inv")
    m = g.node("Mul", [m, g.const("mask.neg", np.float32(-10000))], "mask.add")
    for i in range(layers):
        p = f"l{i}"
        h = g.node("Add", [x, _attention(g, x, p, hidden, heads, m)], f"{p}.res1")
        h = g.layer_norm(h, f"{p}.ln1", hidden)
        y = g.node("Add", [h, _mlp(g, h, p, hidden)], f"{p}.res2")
        x = g.layer_norm(y, f"{p}.ln2", hidden, out="y" if i == layers - 1 else None)
    return g.model(f"bert{layers}", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden]),
        helper.make_tensor_value_info("mask", TensorProto.FLOAT, [batch, seq])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, hidden])])


def _conv_bn(g: _Graph, x: str, p: str, cin: int, cout: int, k: int, stride: int,
             relu: bool, gamma: float = 1.0) -> str:
    """Conv (no bias, He-initialised so activations keep their scale) + BatchNormalization
    (inference form, random statistics, scale around ``gamma``) [+ Relu]."""
    w = g.weight(f"{p}.w", cout, cin, k, k, scale=float(np.sqrt(2.0 / (cin * k * k))))
    y = g.node("Conv", [x, w], f"{p}.conv", kernel_shape=[k, k], strides=[stride, stride],
               pads=[k // 2] * 4)
    var = g.const(f"{p}.var", g.rng.uniform(0.5, 1.5, cout).astype(np.float32))
    y = g.node("BatchNormalization", [y, g.weight(f"{p}.gamma", cout, scale=0.1 * gamma, mean=gamma),
                                      g.weight(f"{p}.beta", cout, scale=0.1),
                                      g.weight(f"{p}.mean", cout, scale=0.1), var],
               f"{p}.bn", epsilon=1e-5)
    return g.node("Relu", [y], f"{p}.relu") if relu else y


def _bottleneck(g: _Graph, x: str, p: str, cin: int, width: int, stride: int) -> str:
    """1x1 reduce, 3x3 (strided), 1x1 expand x4; the shortcut is a strided 1x1 conv + bn
    when the shape changes.  The last bn scales by about 0.2 (as trained ResNets' do, more
    or less), so that the residual sums do not grow block after block."""
    cout = 4 * width
    y = _conv_bn(g, x, f"{p}.a", cin, width, 1, 1, True)
    y = _conv_bn(g, y, f"{p}.b", width, width, 3, stride, True)
    y = _conv_bn(g, y, f"{p}.c", width, cout, 1, 1, False, gamma=0.2)
    short = x if (cin == cout and stride == 1) else \
        _conv_bn(g, x, f"{p}.down", cin, cout, 1, stride, False)
    return g.node("Relu", [g.node("Add", [y, short], f"{p}.add")], f"{p}.out")


def resnet50(blocks=(3, 4, 6, 3), image: int = 224, classes: int = 1000,
             batch: int | str = "B") -> onnx.ModelProto:
    """A ResNet-50-style CNN on x: [batch, 3, image, image]: a 7x7/2 stem, 3x3/2 max-pool,
    bottleneck stages of widths 64, 128, 256, 512 (``blocks`` per stage; the first of each
    stage after the first is strided), global average pool, and a classifier."""
    g = _Graph(seed=50)
    x = _conv_bn(g, "x", "stem", 3, 64, 7, 2, True)
    x = g.node("MaxPool", [x], "stem.pool", kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    cin = 64
    for s, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
        for b in range(n):
            x = _bottleneck(g, x, f"s{s}.b{b}", cin, width, 2 if (b == 0 and s > 0) else 1)
            cin = 4 * width
    x = g.node("GlobalAveragePool", [x], "pool")
    x = g.node("Flatten", [x], "flat", axis=1)
    g.node("Gemm", [x, g.weight("fc.w", classes, cin, scale=float(np.sqrt(1.0 / cin))),
                    g.weight("fc.b", classes)], "y", transB=1)
    return g.model("resnet50", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, image, image])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, classes])])


def inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Random feeds for a zoo model (symbolic dims taken as 1; a mask is all ones but for
    the last quarter of the positions, as padding)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value if d.HasField("dim_value") else 1
                 for d in vi.type.tensor_type.shape.dim]
        if vi.name == "mask":
            m = np.ones(shape, np.float32)
            m[..., shape[-1] - shape[-1] // 4:] = 0
            feeds[vi.name] = m
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds
