"""Small ONNX networks for the autodiff tests (memory, training)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

_TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}


def tanh_mlp(sizes=(3, 8, 8, 1), batch=6, dtype=np.float64, seed=0):
    """``pred = tanh(tanh(x W1 + b1) W2 + b2) W3 + b3``, ``loss = mean((pred - t)²)``;
    weights are initializers (constants once imported), named ``w1``, ``b1`` ..."""
    rng = np.random.default_rng(seed)
    inits, nodes, h = [], [], "x"
    n = len(sizes) - 1
    for i in range(n):
        w, b = f"w{i + 1}", f"b{i + 1}"
        inits += [numpy_helper.from_array(
                      (rng.standard_normal(sizes[i:i + 2]) / np.sqrt(sizes[i])).astype(dtype), w),
                  numpy_helper.from_array((0.1 * rng.standard_normal(sizes[i + 1])).astype(dtype),
                                          b)]
        out = "pred" if i == n - 1 else f"h{i + 1}"
        nodes.append(helper.make_node("Gemm", [h, w, b], [out]))
        if i < n - 1:
            nodes.append(helper.make_node("Tanh", [out], [f"a{i + 1}"]))
            h = f"a{i + 1}"
    nodes += [helper.make_node("Sub", ["pred", "t"], ["d"]),
              helper.make_node("Mul", ["d", "d"], ["d2"]),
              helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0)]
    et = _TYPES[dtype]
    graph = helper.make_graph(
        nodes, "tanh_mlp",
        [helper.make_tensor_value_info("x", et, [batch, sizes[0]]),
         helper.make_tensor_value_info("t", et, [batch, sizes[-1]])],
        [helper.make_tensor_value_info("loss", et, []),
         helper.make_tensor_value_info("pred", et, [batch, sizes[-1]])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def weights(model) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def forward(ws: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """numpy reference of :func:`tanh_mlp`'s ``pred``, with the layer inputs."""
    n = len(ws) // 2
    h, acts = x, [x]
    for i in range(1, n + 1):
        h = h @ ws[f"w{i}"] + ws[f"b{i}"]
        if i < n:
            h = np.tanh(h)
            acts.append(h)
    return h, acts


def loss_grads(ws: dict[str, np.ndarray], x: np.ndarray, t: np.ndarray):
    """numpy reference of ``loss`` and its gradients with respect to every weight."""
    n = len(ws) // 2
    pred, acts = forward(ws, x)
    d = pred - t
    loss = np.mean(d * d)
    g = 2 * d / d.size
    grads = {}
    for i in range(n, 0, -1):
        grads[f"w{i}"] = acts[i - 1].T @ g
        grads[f"b{i}"] = g.sum(axis=0)
        if i > 1:
            g = (g @ ws[f"w{i}"].T) * (1 - acts[i - 1] ** 2)
    return loss, grads
