"""Small ONNX models for the runner's tests (seeded weights), as prim programs."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from pir.frontends.onnx.importer import import_model
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline

F = onnx.TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits, name) -> onnx.ModelProto:
    g = helper.make_graph(nodes, name, inputs, outputs,
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def _w(rng, *shape):
    return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)


def mlp(batch=8, d=16, hidden=32, seed=0) -> onnx.ModelProto:
    """x @ fc1.weight + fc1.bias -> tanh-gelu -> @ fc2.weight + fc2.bias."""
    rng = np.random.default_rng(seed)
    inits = {"fc1.weight": _w(rng, d, hidden), "fc1.bias": _w(rng, hidden),
             "fc2.weight": _w(rng, hidden, d), "fc2.bias": _w(rng, d)}
    nodes = [helper.make_node("MatMul", ["x", "fc1.weight"], ["h0"], name="/fc1/MatMul"),
             helper.make_node("Add", ["h0", "fc1.bias"], ["h1"], name="/fc1/Add"),
             helper.make_node("Tanh", ["h1"], ["h2"], name="/act"),
             helper.make_node("Mul", ["h2", "h1"], ["h3"], name="/act/Mul"),
             helper.make_node("MatMul", ["h3", "fc2.weight"], ["h4"], name="/fc2/MatMul"),
             helper.make_node("Add", ["h4", "fc2.bias"], ["y"], name="/fc2/Add")]
    return _model(nodes, [helper.make_tensor_value_info("x", F, [batch, d])],
                  [helper.make_tensor_value_info("y", F, [batch, d])], inits, "mlp")


#: What a user runs before ``pir shard``.  ``shapes{broadcast-equal}`` first: a model exported
#: from PyTorch (bert) slices a buffer to the sequence length, which the importer types with
#: an unknown dim; broadcasting it against ``seq`` leaves ``nn.add`` and ``nn.slice`` that
#: decompose cannot lower, until the pass unifies the two dims (no symbolic dim is 1 at run
#: time, as ONNX Runtime assumes).
PIPELINE = "shapes{broadcast-equal=true},decompose,canonicalize,cse,dce"


def prim_program(model: onnx.ModelProto):
    """The model imported and decomposed to prim ops."""
    module = import_model(model)
    PassManager(parse_pipeline(PIPELINE)).run(module)
    return module


def transformer_block(batch=2, seq=8, d=16, heads=4, seed=0) -> onnx.ModelProto:
    """A pre-norm transformer block: x + attention(layer_norm(x)), then + MLP(layer_norm)."""
    rng = np.random.default_rng(seed)
    dh = d // heads
    inits = {"ln1.scale": 1 + 0.1 * _w(rng, d), "ln1.bias": 0.1 * _w(rng, d),
             "ln2.scale": 1 + 0.1 * _w(rng, d), "ln2.bias": 0.1 * _w(rng, d),
             "attn.q.weight": _w(rng, d, d), "attn.q.bias": _w(rng, d),
             "attn.k.weight": _w(rng, d, d), "attn.k.bias": _w(rng, d),
             "attn.v.weight": _w(rng, d, d), "attn.v.bias": _w(rng, d),
             "attn.o.weight": _w(rng, d, d), "attn.o.bias": _w(rng, d),
             "mlp.fc1.weight": _w(rng, d, 4 * d), "mlp.fc1.bias": _w(rng, 4 * d),
             "mlp.fc2.weight": _w(rng, 4 * d, d), "mlp.fc2.bias": _w(rng, d),
             "heads_shape": np.array([batch, seq, heads, dh], np.int64),
             "model_shape": np.array([batch, seq, d], np.int64),
             "scale": np.array(1 / np.sqrt(dh), np.float32)}
    n = helper.make_node
    nodes = [n("LayerNormalization", ["x", "ln1.scale", "ln1.bias"], ["ln1"], axis=-1,
               name="/ln1")]
    for p in "qkv":
        nodes += [n("MatMul", ["ln1", f"attn.{p}.weight"], [f"{p}0"], name=f"/attn/{p}"),
                  n("Add", [f"{p}0", f"attn.{p}.bias"], [f"{p}1"], name=f"/attn/{p}/Add"),
                  n("Reshape", [f"{p}1", "heads_shape"], [f"{p}2"], name=f"/attn/{p}/Reshape"),
                  n("Transpose", [f"{p}2"], [p], perm=[0, 2, 1, 3], name=f"/attn/{p}/T")]
    nodes += [n("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="/attn/kt"),
              n("MatMul", ["q", "kt"], ["s0"], name="/attn/scores"),
              n("Mul", ["s0", "scale"], ["s1"], name="/attn/scale"),
              n("Softmax", ["s1"], ["p"], axis=-1, name="/attn/softmax"),
              n("MatMul", ["p", "v"], ["o0"], name="/attn/pv"),
              n("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3], name="/attn/o/T"),
              n("Reshape", ["o1", "model_shape"], ["o2"], name="/attn/o/Reshape"),
              n("MatMul", ["o2", "attn.o.weight"], ["o3"], name="/attn/o"),
              n("Add", ["o3", "attn.o.bias"], ["o4"], name="/attn/o/Add"),
              n("Add", ["x", "o4"], ["r1"], name="/res1"),
              n("LayerNormalization", ["r1", "ln2.scale", "ln2.bias"], ["ln2"], axis=-1,
                name="/ln2"),
              n("MatMul", ["ln2", "mlp.fc1.weight"], ["m0"], name="/mlp/fc1"),
              n("Add", ["m0", "mlp.fc1.bias"], ["m1"], name="/mlp/fc1/Add"),
              n("Tanh", ["m1"], ["m2"], name="/mlp/act"),
              n("MatMul", ["m2", "mlp.fc2.weight"], ["m3"], name="/mlp/fc2"),
              n("Add", ["m3", "mlp.fc2.bias"], ["m4"], name="/mlp/fc2/Add"),
              n("Add", ["r1", "m4"], ["y"], name="/res2")]
    return _model(nodes, [helper.make_tensor_value_info("x", F, [batch, seq, d])],
                  [helper.make_tensor_value_info("y", F, [batch, seq, d])], inits, "block")


#: Megatron tensor parallelism for the block: q/k/v and fc1 column-parallel, o and fc2
#: row-parallel (one all_reduce after attention, one after the MLP).
BLOCK_TP = {"attn.[qkv].weight": ["S(1)"], "attn.[qkv].bias": ["S(0)"],
            "attn.o.weight": ["S(0)"], "mlp.fc1.weight": ["S(1)"], "mlp.fc1.bias": ["S(0)"],
            "mlp.fc2.weight": ["S(0)"]}
MLP_TP = {"fc1.weight": ["S(1)"], "fc1.bias": ["S(0)"], "fc2.weight": ["S(0)"]}


def shard(module, mesh: str, spec: dict, auto: bool = False):
    """``module`` sharded in the global view by the planner (what ``pir shard
    --global-view`` writes)."""
    from pir.passes.shard.driver import shard_module

    shard_module(module, mesh, spec, auto=auto)
    return module


def gpt2_program():
    """The GPT-2-style test model (tests/models) and its inputs."""
    return model_program("gpt2")


def model_program(name: str):
    """A test model of tests/models as a prim program, the model and its inputs."""
    import os

    from pir.frontends.onnx.importer import load_model

    here = os.path.join(os.path.dirname(__file__), "..", "models")
    model = load_model(os.path.join(here, f"{name}.onnx"))
    feeds = dict(np.load(os.path.join(here, f"{name}.inputs.npz")))
    return prim_program(model), model, feeds
