"""Writes block.onnx: a small pre-norm transformer (2 layers of attention and MLP, model
width 64, 4 heads) with seeded random weights, for sharding over ranks.

Shapes are static (batch 4, sequence 16), so every split divides evenly and the per-rank
program has plain sizes.  Only numpy and onnx's helpers are needed.
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH, SEQ, D, HEADS, LAYERS = 4, 16, 64, 4, 2


def build(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def weight(name, *shape, scale=None):
        scale = 1.0 / np.sqrt(shape[0]) if scale is None else scale
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name))

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))

    def node(op, ins, outs, name, **attrs):
        nodes.append(helper.make_node(op, ins, outs, name=name, **attrs))

    dh = D // HEADS
    const("heads_shape", np.array([BATCH, SEQ, HEADS, dh], np.int64))
    const("model_shape", np.array([BATCH, SEQ, D], np.int64))
    const("scale", np.array(1 / np.sqrt(dh), np.float32))
    x = "x"
    for i in range(LAYERS):
        p = f"h{i}"
        weight(f"{p}.ln1.scale", D, scale=0.1)
        weight(f"{p}.ln1.bias", D, scale=0.1)
        node("LayerNormalization", [x, f"{p}.ln1.scale", f"{p}.ln1.bias"], [f"{p}.ln1"],
             f"/{p}/ln1", axis=-1)
        for w in "qkv":
            weight(f"{p}.attn.{w}.weight", D, D)
            weight(f"{p}.attn.{w}.bias", D, scale=0.1)
            node("MatMul", [f"{p}.ln1", f"{p}.attn.{w}.weight"], [f"{p}.{w}0"], f"/{p}/attn/{w}")
            node("Add", [f"{p}.{w}0", f"{p}.attn.{w}.bias"], [f"{p}.{w}1"], f"/{p}/attn/{w}/Add")
            node("Reshape", [f"{p}.{w}1", "heads_shape"], [f"{p}.{w}2"], f"/{p}/attn/{w}/Reshape")
            node("Transpose", [f"{p}.{w}2"], [f"{p}.{w}"], f"/{p}/attn/{w}/T", perm=[0, 2, 1, 3])
        node("Transpose", [f"{p}.k"], [f"{p}.kt"], f"/{p}/attn/kt", perm=[0, 1, 3, 2])
        node("MatMul", [f"{p}.q", f"{p}.kt"], [f"{p}.s0"], f"/{p}/attn/scores")
        node("Mul", [f"{p}.s0", "scale"], [f"{p}.s1"], f"/{p}/attn/scale")
        node("Softmax", [f"{p}.s1"], [f"{p}.p"], f"/{p}/attn/softmax", axis=-1)
        node("MatMul", [f"{p}.p", f"{p}.v"], [f"{p}.o0"], f"/{p}/attn/pv")
        node("Transpose", [f"{p}.o0"], [f"{p}.o1"], f"/{p}/attn/o/T", perm=[0, 2, 1, 3])
        node("Reshape", [f"{p}.o1", "model_shape"], [f"{p}.o2"], f"/{p}/attn/o/Reshape")
        weight(f"{p}.attn.o.weight", D, D)
        weight(f"{p}.attn.o.bias", D, scale=0.1)
        node("MatMul", [f"{p}.o2", f"{p}.attn.o.weight"], [f"{p}.o3"], f"/{p}/attn/o")
        node("Add", [f"{p}.o3", f"{p}.attn.o.bias"], [f"{p}.o4"], f"/{p}/attn/o/Add")
        node("Add", [x, f"{p}.o4"], [f"{p}.r1"], f"/{p}/res1")
        weight(f"{p}.ln2.scale", D, scale=0.1)
        weight(f"{p}.ln2.bias", D, scale=0.1)
        node("LayerNormalization", [f"{p}.r1", f"{p}.ln2.scale", f"{p}.ln2.bias"],
             [f"{p}.ln2"], f"/{p}/ln2", axis=-1)
        weight(f"{p}.mlp.fc1.weight", D, 4 * D)
        weight(f"{p}.mlp.fc1.bias", 4 * D, scale=0.1)
        weight(f"{p}.mlp.fc2.weight", 4 * D, D)
        weight(f"{p}.mlp.fc2.bias", D, scale=0.1)
        node("MatMul", [f"{p}.ln2", f"{p}.mlp.fc1.weight"], [f"{p}.m0"], f"/{p}/mlp/fc1")
        node("Add", [f"{p}.m0", f"{p}.mlp.fc1.bias"], [f"{p}.m1"], f"/{p}/mlp/fc1/Add")
        node("Tanh", [f"{p}.m1"], [f"{p}.m2"], f"/{p}/mlp/act")
        node("MatMul", [f"{p}.m2", f"{p}.mlp.fc2.weight"], [f"{p}.m3"], f"/{p}/mlp/fc2")
        node("Add", [f"{p}.m3", f"{p}.mlp.fc2.bias"], [f"{p}.m4"], f"/{p}/mlp/fc2/Add")
        y = "y" if i == LAYERS - 1 else f"{p}.out"
        node("Add", [f"{p}.r1", f"{p}.m4"], [y], f"/{p}/res2")
        x = y
    graph = helper.make_graph(
        nodes, "block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, SEQ, D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, SEQ, D])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="pir-samples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="block.onnx")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    onnx.save(build(args.seed), args.output)
