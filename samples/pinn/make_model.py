"""Writes the PINN sample's inputs: u.onnx, a tanh MLP u(x, y) whose weights are graph
inputs, and data.npz, the collocation points with f, the boundary points, and the initial
weights.

The problem: -Δu = f on the unit square, u = 0 on its boundary, with
f = 2π² sin(πx) sin(πy), whose solution is u = sin(πx) sin(πy).  The weights are inputs
(not initializers) so that the derivatives that pir autodiff makes of u take them as
inputs too, and the loss (loss.pir) passes its own parameters to each of them.  Float64,
and a symbolic point count N (``build`` and ``data`` also make float32, for bench/autodiff.py).
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper

TYPES = {"float64": TensorProto.DOUBLE, "float32": TensorProto.FLOAT}


def build(hidden: int = 16, dtype: str = "float64", points: int | str = "N") -> onnx.ModelProto:
    """The network; ``points``: the point count, symbolic by default."""
    et = TYPES[dtype]
    shapes = {"w1": [2, hidden], "b1": [hidden], "w2": [hidden, hidden], "b2": [hidden],
              "w3": [hidden, 1], "b3": [1]}
    nodes = [
        helper.make_node("Concat", ["x", "y"], ["xy"], axis=1, name="/in/Concat"),
        helper.make_node("Gemm", ["xy", "w1", "b1"], ["h1"], name="/fc1/Gemm"),
        helper.make_node("Tanh", ["h1"], ["a1"], name="/act1/Tanh"),
        helper.make_node("Gemm", ["a1", "w2", "b2"], ["h2"], name="/fc2/Gemm"),
        helper.make_node("Tanh", ["h2"], ["a2"], name="/act2/Tanh"),
        helper.make_node("Gemm", ["a2", "w3", "b3"], ["u"], name="/fc3/Gemm"),
    ]
    inputs = [helper.make_tensor_value_info(n, et, [points, 1]) for n in ("x", "y")]
    inputs += [helper.make_tensor_value_info(n, et, s) for n, s in shapes.items()]
    graph = helper.make_graph(nodes, "u", inputs,
                              [helper.make_tensor_value_info("u", et, [points, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="pir-samples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def data(points: int = 256, hidden: int = 16, seed: int = 0,
         dtype: str = "float64") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(0, 1, (points, 1)), rng.uniform(0, 1, (points, 1))
    f = 2 * np.pi ** 2 * np.sin(np.pi * x) * np.sin(np.pi * y)
    # boundary points: as many, spread over the four sides
    s = rng.uniform(0, 1, (points, 1))
    side = rng.integers(0, 4, (points, 1))
    xb = np.where(side < 2, s, (side == 3).astype(float))
    yb = np.where(side < 2, (side == 1).astype(float), s)

    def glorot(n_in, n_out):
        return rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / (n_in + n_out))

    out = {"x": x, "y": y, "f": f, "xb": xb, "yb": yb,
           "w1": glorot(2, hidden), "b1": np.zeros(hidden),
           "w2": glorot(hidden, hidden), "b2": np.zeros(hidden),
           "w3": glorot(hidden, 1), "b3": np.zeros(1)}
    return {k: v.astype(dtype) for k, v in out.items()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="u.onnx")
    ap.add_argument("--data", default="data.npz")
    ap.add_argument("--points", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=16)
    args = ap.parse_args()
    onnx.save(build(args.hidden), args.model)
    np.savez(args.data, **data(args.points, args.hidden))
