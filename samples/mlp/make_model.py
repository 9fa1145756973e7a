"""Writes mlp.onnx: a small classifier (784 -> 256 -> 128 -> 10) with seeded random weights.

The batch dim is symbolic ("B"), so the imported program keeps it symbolic.  Only numpy and
onnx's helpers are needed.
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)

    def weight(name, *shape):
        scale = 1.0 / np.sqrt(shape[0])
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        weight("fc1.weight", 784, 256), weight("fc1.bias", 256),
        weight("fc2.weight", 256, 128), weight("fc2.bias", 128),
        weight("fc3.weight", 128, 10), weight("fc3.bias", 10),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "fc1.weight"], ["fc1.mm"], name="/fc1/MatMul"),
        helper.make_node("Add", ["fc1.mm", "fc1.bias"], ["fc1"], name="/fc1/Add"),
        helper.make_node("Relu", ["fc1"], ["act1"], name="/act1/Relu"),
        helper.make_node("Gemm", ["act1", "fc2.weight", "fc2.bias"], ["fc2"], name="/fc2/Gemm"),
        helper.make_node("Tanh", ["fc2"], ["act2"], name="/act2/Tanh"),
        helper.make_node("MatMul", ["act2", "fc3.weight"], ["fc3.mm"], name="/fc3/MatMul"),
        helper.make_node("Add", ["fc3.mm", "fc3.bias"], ["logits"], name="/fc3/Add"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="/softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 784])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["B", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="pir-samples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="mlp.onnx")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    onnx.save(build(args.seed), args.output)
