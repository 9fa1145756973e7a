"""A BERT-base-size encoder built with onnx.helper (no torch, no downloads): seeded random
float32 weights, the same bytes every call.

``bert(layers=12, hidden=768, heads=12, ffn=3072, seq=128, batch=1)`` is BERT-base's encoder
(85M parameters, 340 MB of float32): the embedding LayerNorm, then ``layers`` post-norm blocks

    h = LayerNorm(x + Attention(x, mask)),  x' = LayerNorm(h + W2 GELU(W1 h + b1) + b2)

with GELU in its erf form and the attention mask of BERT ([batch, seq] of 1 and 0, made
additive as (1 - mask) * -10000), and the pooler, tanh(Wp y[:, 0] + bp).  The inputs are the
summed embeddings ``x`` [batch, seq, hidden] and ``mask``; the outputs ``y`` (the last hidden
state) and ``pooled``.

Weights are scaled as tests/models/generate.py scales the exported models' (so activations
keep unit scale through the layers, and attention is far from uniform): matrices
N(0, clamp(1/sqrt(fan_in), 0.02, 0.2)), LayerNorm scales 1 + 0.1 N(0, 1), biases 0.1 N(0, 1).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["bert", "bert_inputs", "OPSET"]

OPSET = 17


class _Graph:
    def __init__(self, seed: int):
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)

    def _add(self, name: str, arr: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def matrix(self, name: str, n_in: int, n_out: int) -> str:
        std = np.float32(min(0.2, max(0.02, 1.0 / np.sqrt(n_in))))
        return self._add(name, std * self.rng.standard_normal((n_in, n_out), np.float32))

    def vector(self, name: str, n: int, mean: float = 0.0) -> str:
        return self._add(name, np.float32(mean) + np.float32(0.1) *
                         self.rng.standard_normal(n, np.float32))

    def const(self, name: str, value) -> str:
        return self._add(name, np.asarray(value))

    def node(self, op: str, inputs: list[str], out: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"/{out}", **attrs))
        return out

    def linear(self, x: str, p: str, n_in: int, n_out: int) -> str:
        y = self.node("MatMul", [x, self.matrix(f"{p}.w", n_in, n_out)], f"{p}.mm")
        return self.node("Add", [y, self.vector(f"{p}.b", n_out)], p)

    def layer_norm(self, x: str, p: str, hidden: int) -> str:
        return self.node("LayerNormalization",
                         [x, self.vector(f"{p}.g", hidden, mean=1.0), self.vector(f"{p}.b", hidden)],
                         p, axis=-1, epsilon=1e-12)

    def gelu(self, x: str, p: str) -> str:  # 0.5 x (1 + erf(x / sqrt 2)), as exporters write it
        e = self.node("Erf", [self.node("Div", [x, self.const(f"{p}.sqrt2",
                                                              np.float32(np.sqrt(2)))],
                                        f"{p}.div")], f"{p}.erf")
        e = self.node("Add", [e, self.const(f"{p}.one", np.float32(1))], f"{p}.erf1")
        y = self.node("Mul", [x, e], f"{p}.xe")
        return self.node("Mul", [y, self.const(f"{p}.half", np.float32(0.5))], p)


def _attention(g: _Graph, x: str, p: str, hidden: int, heads: int, mask: str) -> str:
    hd = hidden // heads
    split = g.const(f"{p}.split", np.array([0, 0, heads, hd], np.int64))
    qkv = {}
    for name in "qkv":
        y = g.node("Reshape", [g.linear(x, f"{p}.{name}", hidden, hidden), split],
                   f"{p}.{name}.heads")
        qkv[name] = g.node("Transpose", [y], f"{p}.{name}.t",
                           perm=[0, 2, 3, 1] if name == "k" else [0, 2, 1, 3])
    s = g.node("MatMul", [qkv["q"], qkv["k"]], f"{p}.scores")
    s = g.node("Div", [s, g.const(f"{p}.sqrt_d", np.float32(np.sqrt(hd)))], f"{p}.scaled")
    s = g.node("Add", [s, mask], f"{p}.masked")
    a = g.node("Softmax", [s], f"{p}.probs", axis=-1)
    o = g.node("Transpose", [g.node("MatMul", [a, qkv["v"]], f"{p}.ctx")], f"{p}.ctx.t",
               perm=[0, 2, 1, 3])
    o = g.node("Reshape", [o, g.const(f"{p}.merge", np.array([0, 0, hidden], np.int64))],
               f"{p}.ctx.merged")
    return g.linear(o, f"{p}.out", hidden, hidden)


def bert(layers: int = 12, hidden: int = 768, heads: int = 12, ffn: int = 3072,
         seq: int = 128, batch: int = 1, seed: int = 0) -> onnx.ModelProto:
    """The encoder (see the module's docstring) as an opset-17 model (its inputs' and
    outputs' types declared; ONNX's shape inference, 4 s on BERT-base's weights, is left
    to whoever needs the intermediate types: pir's importer runs it on the graph alone)."""
    g = _Graph(seed)
    x = g.layer_norm("x", "emb.ln", hidden)
    m = g.node("Unsqueeze", ["mask", g.const("mask.axes", np.array([1, 2], np.int64))],
               "mask.4d")
    m = g.node("Sub", [g.const("mask.one", np.float32(1)), m], "mask.inv")
    m = g.node("Mul", [m, g.const("mask.neg", np.float32(-10000))], "mask.add")
    for i in range(layers):
        p = f"l{i}"
        h = g.layer_norm(g.node("Add", [x, _attention(g, x, p, hidden, heads, m)],
                                f"{p}.res1"), f"{p}.ln1", hidden)
        f = g.linear(g.gelu(g.linear(h, f"{p}.fc1", hidden, ffn), f"{p}.gelu"), f"{p}.fc2",
                     ffn, hidden)
        x = g.layer_norm(g.node("Add", [h, f], f"{p}.res2"), f"{p}.ln2", hidden)
    g.nodes.append(helper.make_node("Identity", [x], ["y"], name="/y"))
    cls = g.node("Gather", ["y", g.const("cls.index", np.array(0, np.int64))], "cls", axis=1)
    g.node("Tanh", [g.linear(cls, "pool", hidden, hidden)], "pooled")
    graph = helper.make_graph(g.nodes, f"bert{layers}x{hidden}", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden]),
        helper.make_tensor_value_info("mask", TensorProto.FLOAT, [batch, seq])], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, hidden]),
        helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [batch, hidden])],
        g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9
    return model


def bert_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """x ~ N(0, 1), and a mask of ones with the last quarter of the positions padding."""
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    batch, seq, _ = shape
    mask = np.ones((batch, seq), np.float32)
    mask[:, seq - seq // 4:] = 0
    x = np.random.default_rng(seed).standard_normal(shape, np.float32)
    return {"x": x, "mask": mask}
