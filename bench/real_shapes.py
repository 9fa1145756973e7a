"""Convolution stacks and attention with their dims left symbolic, against ONNX Runtime.

A real detector or OCR model takes images of any size: its ``N x 3 x H x W`` input keeps H
and W symbolic, and every convolution runs in the direct form of pir.codegen.tvm.direct
(the static fast paths need static sizes).  The models (seeded random weights):

- ``cnn``: four 3x3 convolutions with bias and relu, 3 -> 16 -> 32 (stride 2) -> 32 -> 32
  channels, input ``1 x 3 x H x W`` with H and W symbolic;
- ``neck``: a detector neck's deeper levels, where a row is a few vectors wide: 3x3
  convolutions 64 -> 64 -> 64 -> 128 (stride 2), then a 1x1 128 -> 128, each with bias and
  relu, input ``1 x 64 x H x W`` at 40x40 and 80x60;
- ``attention``: softmax(q . k^T / sqrt(d)) . v over ``[1, 12, S, 64]``, S symbolic.

Each is compiled once (import | fuse pipeline | codegen --target llvm) and run by the tvm
runtime at two sizes (``cnn``: 320x320 and 640x480; ``attention``: S = 128 and 384) without
building again ("builds" counts the TVM programs built for a size: 0 when it reused the
compiled program), side by side with ONNX Runtime (ORT_ENABLE_ALL) at 1 and 2 threads, best
of --repeat with pir's and ORT's runs interleaved (bench/benchenv.best_times).  For the CNN and
the neck the program compiled with the size made static (the fast paths: channel blocks, Winograd,
halos) is timed too ("static ms"), and pir's time split per op kind is printed for every
row.  Asserts nothing.

    .venv/bin/python bench/real_shapes.py [--models cnn,attention] [--threads 1,2]
                                          [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys

_ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_ap.add_argument("--models", default="cnn,neck,attention")
_ap.add_argument("--threads", default="1,2", help="thread counts to measure (default 1,2)")
_ap.add_argument("--repeat", type=int, default=5)
_ap.add_argument("--no-static", action="store_true", help="skip the static-size programs")
ARGS = _ap.parse_args()
THREADS = [int(t) for t in ARGS.threads.split(",")]

from benchenv import best_times, paired_ratio, profile_split, use_threads  # noqa: E402

use_threads(max(THREADS))  # TVM's pool holds the most; set_threads picks the count

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from pir.codegen.tvm.build import set_threads  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from pir.runtimes.tvm import executor as tvm_executor  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _finish(nodes, inputs, inits) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, s)
                     for k, s in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return onnx.shape_inference.infer_shapes(model)


def _conv_stack(layers, c0: int, h, w) -> onnx.ModelProto:
    """Convolutions (in, out, kernel, stride) with bias and relu on a ``1 x c0 x h x w``
    input."""
    rng = np.random.default_rng(0)
    nodes, inits, x = [], {}, "x"
    for i, (c, o, k, stride) in enumerate(layers):
        inits[f"w{i}"] = (rng.standard_normal((o, c, k, k)) / np.sqrt(k * k * c)).astype(np.float32)
        inits[f"b{i}"] = (rng.standard_normal(o) * 0.1).astype(np.float32)
        y = "y" if i == len(layers) - 1 else f"r{i}"
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], kernel_shape=[k, k],
                                   pads=[k // 2] * 4, strides=[stride, stride]),
                  helper.make_node("Relu", [f"c{i}"], [y])]
        x = y
    return _finish(nodes, {"x": [1, c0, h, w]}, inits)


def cnn(h="H", w="W") -> onnx.ModelProto:
    return _conv_stack([(3, 16, 3, 1), (16, 32, 3, 2), (32, 32, 3, 1), (32, 32, 3, 1)], 3, h, w)


def neck(h="H", w="W") -> onnx.ModelProto:
    return _conv_stack([(64, 64, 3, 1), (64, 64, 3, 1), (64, 128, 3, 2), (128, 128, 1, 1)],
                       64, h, w)


def attention(s="S") -> onnx.ModelProto:
    scale = numpy_helper.from_array(np.float32(1 / 8), "scale")
    nodes = [helper.make_node("MatMul", ["q", "kt"], ["z"]),
             helper.make_node("Mul", ["z", "scale"], ["zs"]),
             helper.make_node("Softmax", ["zs"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    model = _finish(nodes, {"q": [1, 12, s, 64], "kt": [1, 12, 64, s], "v": [1, 12, s, 64]}, {})
    model.graph.initializer.append(scale)
    return model


MODELS = {
    "cnn": (cnn, [("320x320", {"h": 320, "w": 320}), ("640x480", {"h": 640, "w": 480})],
            lambda p: {"x": (1, 3, p["h"], p["w"])}),
    "neck": (neck, [("40x40", {"h": 40, "w": 40}), ("80x60", {"h": 80, "w": 60})],
             lambda p: {"x": (1, 64, p["h"], p["w"])}),
    "attention": (attention, [("S=128", {"s": 128}), ("S=384", {"s": 384})],
                  lambda p: {"q": (1, 12, p["s"], 64), "kt": (1, 12, 64, p["s"]),
                             "v": (1, 12, p["s"], 64)}),
}


def compiled(model):
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    codegen_module(module, "llvm")
    return module, TvmInterpreter(module)


def main() -> None:
    print(f"pir (compiled once, dims symbolic; tvm runtime) vs ONNX Runtime {ort.__version__} "
          f"(ORT_ENABLE_ALL), best of {ARGS.repeat}, wall time")
    rows, splits = [], []
    for name in ARGS.models.split(","):
        make, sizes, shapes = MODELS[name]
        model = make()
        module, interp = compiled(model)
        fn = module.funcs[0]
        host = [op.name for op in fn.entry.ops if op.name in ("prim.conv", "prim.dot_general")]
        rng = np.random.default_rng(1)
        for label, params in sizes:
            feeds = {k: rng.standard_normal(s).astype(np.float32)
                     for k, s in shapes(params).items()}
            static = None
            if name in ("cnn", "neck") and not ARGS.no_static:
                static = compiled(make(**params))
            for threads in THREADS:
                set_threads(threads)
                so = ort.SessionOptions()
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                so.intra_op_num_threads = threads
                so.inter_op_num_threads = 1
                sess = ort.InferenceSession(model.SerializeToString(), so,
                                            providers=["CPUExecutionProvider"])
                built = tvm_executor.stats["compiled"]
                ours = interp.run(fn, feeds)["y"]
                rebuilt = tvm_executor.stats["compiled"] - built
                theirs = sess.run(None, feeds)[0]
                err = float(np.abs(ours - theirs).max() / np.abs(theirs).max())
                fns = {"pir": lambda: interp.run(fn, feeds),
                       "ort": lambda: sess.run(None, feeds)}
                if static is not None:
                    fns["static"] = lambda: static[1].run(static[0].funcs[0], feeds)
                rounds: list = []
                times = best_times(fns, ARGS.repeat, rounds)
                rows.append((name, label, threads, err, times["pir"], times["ort"],
                             times.get("static"), paired_ratio(rounds, "pir", "ort"), rebuilt))
                splits.append((f"{name} {label} t{threads}",
                               *profile_split(interp, module, lambda: interp.run(fn, feeds))))
                del sess
        if host:
            print(f"  {name}: left on the host: {', '.join(host)}")
    print(f"\n{'model':<11}{'size':<9}{'thr':>4}{'max rel diff':>13}{'pir ms':>10}{'ORT ms':>10}"
          f"{'pir/ORT':>9}{'static ms':>11}{'builds':>7}")
    for name, label, thr, err, tp, to, ts, ratio, rebuilt in rows:
        static = f"{ts * 1e3:>11.2f}" if ts is not None else f"{'-':>11}"
        print(f"{name:<11}{label:<9}{thr:>4}{err:>13.1e}{tp * 1e3:>10.2f}{to * 1e3:>10.2f}"
              f"{ratio:>8.2f}x{static}{rebuilt:>7}")
    print("pir/ORT: the median over rounds of pir's time over ORT's in the same round; "
          "static ms: pir with the size compiled in (fast paths); builds: TVM programs built "
          "for that size (0: the compiled program was reused).  Target: pir/ORT <= 1.0x.")
    print("\npir time split per op kind (one extra run; top 4):")
    for label, total, split in splits:
        top = sorted(split.items(), key=lambda kv: -kv[1])[:4]
        parts = ", ".join(f"{k} {v / total:.0%}" for k, v in top)
        print(f"  {label:<26}{total * 1e3:>9.2f} ms: {parts}")


if __name__ == "__main__":
    sys.exit(main())
