"""Small models for the sharding tests, built with onnx.helper from seeded weights, imported
and decomposed to prim ops (what `pir shard` takes): an MLP, an attention block, and a
pre-norm transformer block (layer norms, attention, MLP, residuals)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pir.frontends.onnx.importer import import_model
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline


class _G:
    def __init__(self, seed: int = 0):
        self.nodes, self.inits = [], []
        self.rng = np.random.default_rng(seed)

    def w(self, name, *shape, scale=0.3, mean=0.0):
        a = (self.rng.standard_normal(shape) * scale + mean).astype(np.float32)
        self.inits.append(numpy_helper.from_array(a, name))
        return name

    def c(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def n(self, op, ins, out, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=f"/{out}", **attrs))
        return out

    def linear(self, x, p, n_in, n_out):
        y = self.n("MatMul", [x, self.w(f"{p}.w", n_in, n_out)], f"{p}.mm")
        return self.n("Add", [y, self.w(f"{p}.b", n_out)], p)

    def mlp(self, x, p, hidden, ffn):
        h = self.n("Gelu", [self.linear(x, f"{p}.fc1", hidden, ffn)], f"{p}.gelu")
        return self.linear(h, f"{p}.fc2", ffn, hidden)

    def attention(self, x, p, hidden, heads):
        hd = hidden // heads
        split = self.c(f"{p}.heads", np.array([0, 0, heads, hd], np.int64))
        qkv = {}
        for k in "qkv":
            y = self.n("Reshape", [self.linear(x, f"{p}.{k}", hidden, hidden), split], f"{p}.{k}.split")
            qkv[k] = self.n("Transpose", [y], f"{p}.{k}.t",
                            perm=[0, 2, 3, 1] if k == "k" else [0, 2, 1, 3])
        s = self.n("MatMul", [qkv["q"], qkv["k"]], f"{p}.scores")
        s = self.n("Mul", [s, self.c(f"{p}.scale", np.float32(1 / np.sqrt(hd)))], f"{p}.scaled")
        a = self.n("Softmax", [s], f"{p}.probs", axis=-1)
        o = self.n("Transpose", [self.n("MatMul", [a, qkv["v"]], f"{p}.ctx")], f"{p}.ctx.t",
                   perm=[0, 2, 1, 3])
        o = self.n("Reshape", [o, self.c(f"{p}.merge", np.array([0, 0, hidden], np.int64))],
                   f"{p}.ctx.merge")
        return self.linear(o, f"{p}.proj", hidden, hidden)

    def ln(self, x, p, hidden):
        return self.n("LayerNormalization", [x, self.w(f"{p}.g", hidden, mean=1.0),
                                             self.w(f"{p}.b", hidden)], p, axis=-1)

    def module(self, name, x_shape, out):
        self.nodes[-1].output[0] = "y"
        for node in self.nodes:  # rename the last value to y everywhere
            node.input[:] = ["y" if i == out else i for i in node.input]
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
        model.ir_version = 10
        model = onnx.shape_inference.infer_shapes(model)
        m = import_model(model)
        PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(m)
        return m


def mlp(batch=4, hidden=8, ffn=16):
    """x [batch, hidden] -> fc1 -> gelu -> fc2 -> y."""
    g = _G(1)
    return g.module("mlp", [batch, hidden], g.mlp("x", "l0", hidden, ffn))


def attention(batch=2, seq=4, hidden=8, heads=2):
    """Multi-head self-attention on x [batch, seq, hidden] (q, k, v, proj)."""
    g = _G(2)
    return g.module("attn", [batch, seq, hidden], g.attention("x", "l0", hidden, heads))


def block(batch=2, seq=4, hidden=8, heads=2, layers=1):
    """Pre-norm transformer blocks: h = x + attn(ln1(x)); y = h + mlp(ln2(h))."""
    g = _G(3)
    x = "x"
    for i in range(layers):
        p = f"h{i}"
        h = g.n("Add", [x, g.attention(g.ln(x, f"{p}.ln1", hidden), p, hidden, heads)],
                f"{p}.res1")
        x = g.n("Add", [h, g.mlp(g.ln(h, f"{p}.ln2", hidden), p, hidden, 4 * hidden)],
                f"{p}.res2")
    return g.module("block", [batch, seq, hidden], x)


def inputs(module, seed=0):
    fn = module.lookup("main")
    rng = np.random.default_rng(seed)
    return {a.name: rng.standard_normal(a.type.shape).astype(np.float32) for a in fn.entry.args}
