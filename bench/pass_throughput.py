"""Pass throughput: the default pipeline (`pir optimize -O2`, verification after every pass
included) on generated GPT-style transformer graphs of 2, 8 and 32 layers, in one run.

Each layer is an ONNX-level pre-norm block: layer_norm, q/k/v projections (matmul + bias),
reshape and transpose to heads, q.kT scaled, softmax, .v, heads back, output projection,
residual add; layer_norm, MLP with gelu, residual add.  The models are built with
onnx.helper and imported, as a user's model would be.  Prints input ops per second and time
per layer, and how the time grows with depth (targets: >= 10,000 ops/s; 32 layers within
4.5x the time of 8), best of --repeat runs, in CPU time.

    .venv/bin/python bench/pass_throughput.py [--layers 2,8,32] [--hidden 128] [--repeat 3]
                                              [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.passes.manager import PassManager, count_ops
from pir.passes.pipeline import DEFAULT_PIPELINE, parse_pipeline

TARGET_OPS_PER_S = 10_000
TARGET_GROWTH = 4.5  # time(32 layers) / time(8 layers)


class _Graph:
    """Collects ONNX nodes and initializers, naming values per layer."""

    def __init__(self, seed: int):
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)

    def weight(self, name: str, *shape: int, scale: float = 0.02) -> str:
        arr = (self.rng.standard_normal(shape) * scale).astype(np.float32)
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


def _layer(g: _Graph, x: str, i: int, hidden: int, heads: int) -> str:
    p, hd = f"h{i}", hidden // heads
    ln = g.node("LayerNormalization", [x, g.weight(f"{p}.ln1.g", hidden, scale=1.0),
                                       g.weight(f"{p}.ln1.b", hidden)], f"{p}.ln1", axis=-1)
    to_heads = g.const(f"{p}.heads", np.array([0, 0, heads, hd], np.int64))
    qkv = {}
    for name in "qkv":
        y = g.linear(ln, f"{p}.{name}", hidden, hidden)
        y = g.node("Reshape", [y, to_heads], f"{p}.{name}.split")
        perm = [0, 2, 3, 1] if name == "k" else [0, 2, 1, 3]  # k is transposed for q.kT
        qkv[name] = g.node("Transpose", [y], f"{p}.{name}.t", perm=perm)
    s = g.node("MatMul", [qkv["q"], qkv["k"]], f"{p}.scores")
    s = g.node("Mul", [s, g.const(f"{p}.scale", np.float32(1 / np.sqrt(hd)))], f"{p}.scaled")
    a = g.node("Softmax", [s], f"{p}.probs", axis=-1)
    o = g.node("MatMul", [a, qkv["v"]], f"{p}.ctx")
    o = g.node("Transpose", [o], f"{p}.ctx.t", perm=[0, 2, 1, 3])
    o = g.node("Reshape", [o, g.const(f"{p}.merge", np.array([0, 0, hidden], np.int64))],
               f"{p}.ctx.merge")
    h = g.node("Add", [x, g.linear(o, f"{p}.proj", hidden, hidden)], f"{p}.res1")
    ln = g.node("LayerNormalization", [h, g.weight(f"{p}.ln2.g", hidden, scale=1.0),
                                       g.weight(f"{p}.ln2.b", hidden)], f"{p}.ln2", axis=-1)
    m = g.node("Gelu", [g.linear(ln, f"{p}.fc1", hidden, 4 * hidden)], f"{p}.gelu")
    return g.node("Add", [h, g.linear(m, f"{p}.fc2", 4 * hidden, hidden)], f"{p}.res2")


def transformer(layers: int, hidden: int, heads: int, seq: int = 64) -> onnx.ModelProto:
    """A GPT-style stack of ``layers`` blocks on x: tensor<B x seq x hidden>."""
    g = _Graph(seed=layers)
    x = "x"
    for i in range(layers):
        x = _layer(g, x, i, hidden, heads)
    x = g.node("LayerNormalization", [x, g.weight("ln_f.g", hidden, scale=1.0),
                                      g.weight("ln_f.b", hidden)], "y", axis=-1)
    graph = helper.make_graph(
        g.nodes, f"gpt{layers}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", seq, hidden])],
        g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    return onnx.shape_inference.infer_shapes(model)


def run_pipeline(text: str, verify_each: bool = True) -> tuple[float, int]:
    """Parse a fresh copy of the module (untimed), run the default pipeline on it; return
    the CPU seconds the pipeline took (CPU time, not wall time: the machines this runs on
    are shared, and the pipeline is single-threaded) and the op count after it."""
    module = parse_module(text)
    passes = parse_pipeline(DEFAULT_PIPELINE)
    gc.collect()
    start = time.process_time()
    PassManager(passes, verify_each=verify_each).run(module)
    return time.process_time() - start, count_ops(module)


def pass_shares(text: str) -> str:
    pm = PassManager(parse_pipeline(DEFAULT_PIPELINE), timing=True)
    pm.run(parse_module(text))
    return pm.timing_table()


def profile(text: str, top: int = 25) -> str:
    module = parse_module(text)
    prof = cProfile.Profile()
    prof.enable()
    PassManager(parse_pipeline(DEFAULT_PIPELINE)).run(module)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="2,8,32", help="comma-separated layer counts")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true",
                    help="also print per-pass times and a cProfile of the deepest graph")
    args = ap.parse_args()

    depths = [int(n) for n in args.layers.split(",")]
    texts = {n: print_module(import_model(transformer(n, args.hidden, args.heads)))
             for n in depths}
    print(f"default pipeline: {DEFAULT_PIPELINE}")
    print(f"GPT-style blocks, hidden {args.hidden}, {args.heads} heads, best of {args.repeat}")
    rows = {}
    for n in depths:
        ops_in = count_ops(parse_module(texts[n]))
        runs = [run_pipeline(texts[n]) for _ in range(args.repeat)]
        bare = min(run_pipeline(texts[n], verify_each=False)[0] for _ in range(args.repeat))
        rows[n] = (ops_in, runs[0][1], min(t for t, _ in runs), bare)

    base = 8 if 8 in rows else depths[0]
    print(f"{'layers':>6}{'ops in':>8}{'ops out':>9}{'CPU ms':>9}{'ms/layer':>10}{'ops/s':>9}"
          f"{'vs target':>11}{f'time/{base} layers':>17}{'ops/s unverified':>18}")
    for n, (ops_in, ops_out, t, bare) in rows.items():
        rate = ops_in / t
        print(f"{n:>6}{ops_in:>8}{ops_out:>9}{t * 1e3:>9.1f}{t * 1e3 / n:>10.2f}{rate:>9,.0f}"
              f"{rate / TARGET_OPS_PER_S:>10.2f}x{t / rows[base][2]:>16.2f}x"
              f"{ops_in / bare:>18,.0f}")
    print(f"targets: >= {TARGET_OPS_PER_S:,} ops/s; time(32) / time(8) <= {TARGET_GROWTH}x"
          " (linear: 4.0x).  'unverified': the same without verification after each pass")
    if args.profile:
        deepest = max(depths)
        print(f"\nper pass, {deepest} layers:\n{pass_shares(texts[deepest])}")
        print(profile(texts[deepest]))


if __name__ == "__main__":
    main()
