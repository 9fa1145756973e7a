"""Writes the train-mlp sample's inputs: mlp.onnx, a small classifier (2 -> 32 -> 32 -> 3,
tanh) with its cross-entropy loss and accuracy as outputs, and data.npz, three interleaved
spirals of points with their one-hot labels.

The weights are initializers (constants once imported): `pir autodiff --train` makes them
the parameters of the training step.  Only numpy and onnx's helpers are needed.
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
CLASSES = 3


def build(hidden: int = 32, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)

    def weight(name, *shape):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * np.sqrt(1.0 / shape[0])).astype(np.float32), name)

    def bias(name, n):
        return numpy_helper.from_array(np.zeros(n, np.float32), name)

    inits = [weight("fc1.weight", 2, hidden), bias("fc1.bias", hidden),
             weight("fc2.weight", hidden, hidden), bias("fc2.bias", hidden),
             weight("fc3.weight", hidden, CLASSES), bias("fc3.bias", CLASSES)]
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["fc1"], name="/fc1/Gemm"),
        helper.make_node("Tanh", ["fc1"], ["act1"], name="/act1/Tanh"),
        helper.make_node("Gemm", ["act1", "fc2.weight", "fc2.bias"], ["fc2"], name="/fc2/Gemm"),
        helper.make_node("Tanh", ["fc2"], ["act2"], name="/act2/Tanh"),
        helper.make_node("Gemm", ["act2", "fc3.weight", "fc3.bias"], ["logits"],
                         name="/fc3/Gemm"),
        # loss = mean over the batch of -sum(labels * log_softmax(logits))
        helper.make_node("LogSoftmax", ["logits"], ["logp"], axis=-1, name="/loss/LogSoftmax"),
        helper.make_node("Mul", ["logp", "labels"], ["picked"], name="/loss/Mul"),
        helper.make_node("ReduceSum", ["picked", "class_axis"], ["ll"], keepdims=0,
                         name="/loss/ReduceSum"),
        helper.make_node("ReduceMean", ["ll"], ["mean_ll"], keepdims=0, name="/loss/ReduceMean"),
        helper.make_node("Neg", ["mean_ll"], ["loss"], name="/loss/Neg"),
        # accuracy: how often the largest logit is the label's
        helper.make_node("ArgMax", ["logits"], ["pred"], axis=1, keepdims=0, name="/acc/ArgMax"),
        helper.make_node("ArgMax", ["labels"], ["truth"], axis=1, keepdims=0,
                         name="/acc/ArgMaxLabels"),
        helper.make_node("Equal", ["pred", "truth"], ["hit"], name="/acc/Equal"),
        helper.make_node("Cast", ["hit"], ["hitf"], to=F32, name="/acc/Cast"),
        helper.make_node("ReduceMean", ["hitf"], ["accuracy"], keepdims=0, name="/acc/Mean"),
    ]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "class_axis"))
    graph = helper.make_graph(
        nodes, "train_mlp",
        [helper.make_tensor_value_info("x", F32, ["B", 2]),
         helper.make_tensor_value_info("labels", F32, ["B", CLASSES])],
        [helper.make_tensor_value_info("loss", F32, []),
         helper.make_tensor_value_info("accuracy", F32, []),
         helper.make_tensor_value_info("logits", F32, ["B", CLASSES])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="pir-samples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def spirals(points: int = 300, seed: int = 1) -> dict[str, np.ndarray]:
    """``points`` points per class on three noisy spiral arms."""
    rng = np.random.default_rng(seed)
    xs, labels = [], []
    for k in range(CLASSES):
        r = np.linspace(0.05, 1.0, points)
        t = np.linspace(k * 4.0, (k + 1) * 4.0, points) + rng.normal(0, 0.2, points)
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        labels.append(np.full(points, k))
    x = np.concatenate(xs).astype(np.float32)
    onehot = np.eye(CLASSES, dtype=np.float32)[np.concatenate(labels)]
    return {"x": x, "labels": onehot}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mlp.onnx")
    ap.add_argument("--data", default="data.npz")
    ap.add_argument("--points", type=int, default=300, help="points per class")
    args = ap.parse_args()
    onnx.save(build(), args.model)
    np.savez(args.data, **spirals(args.points))
