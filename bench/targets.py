"""Convolution chains compiled for several CPU targets, side by side with ONNX Runtime.

Each case is a model of ``layers`` static ``C -> C`` 3x3 convolutions with a bias and ReLU
over a ``HW x HW`` map (the middle ones read and write channel blocks, so they are
Winograd's where it applies), and one with a symbolic ``H x W`` (the direct form).  Each is
compiled once per ``--target`` (pir.codegen.tvm.target: the register tiles follow the
target's vector registers) and all are timed in the same rounds beside ORT
(ORT_ENABLE_ALL), one thread, best of ``--repeat`` (bench/benchenv.best_times).  A kernel
scheduled for another CPU still runs here: ``pir run`` builds for this machine's, so this
measures the tiles alone.  Asserts nothing.

    .venv/bin/python bench/targets.py [--target llvm --target 'llvm -mcpu=skylake-avx512']
        [--cases 64x56,128x28,32x112,sym64x40] [--layers 3] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys

_ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_ap.add_argument("--target", action="append", default=[],
                 help="a CPU target (repeat; default: llvm and llvm -mcpu=skylake-avx512)")
_ap.add_argument("--cases", default="64x56,128x28,256x14,32x112,sym64x40",
                 help="CxHW per case; symCxHW leaves H and W symbolic (run at HW x HW)")
_ap.add_argument("--layers", type=int, default=3)
_ap.add_argument("--repeat", type=int, default=5)
ARGS = _ap.parse_args()
TARGETS = ARGS.target or ["llvm", "llvm -mcpu=skylake-avx512 -num-cores=2"]

from benchenv import best_times, paired_ratio, use_threads  # noqa: E402

use_threads(1)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnx.helper as oh  # noqa: E402
import onnxruntime as ort  # noqa: E402

from pir.codegen.tvm.build import set_threads  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def chain(c: int, hw: int, symbolic: bool) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(ARGS.layers):
        w = (rng.standard_normal((c, c, 3, 3)) * 0.1).astype(np.float32)
        b = (rng.standard_normal(c) * 0.1).astype(np.float32)
        inits += [onnx.numpy_helper.from_array(w, f"w{i}"),
                  onnx.numpy_helper.from_array(b, f"b{i}")]
        out = "y" if i == ARGS.layers - 1 else f"r{i}"
        nodes += [oh.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], kernel_shape=[3, 3],
                               pads=[1, 1, 1, 1]),
                  oh.make_node("Relu", [f"c{i}"], [out])]
        prev = out
    dims = [1, c, "H", "W"] if symbolic else [1, c, hw, hw]
    graph = oh.make_graph(nodes, "chain",
                          [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, dims)],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def main() -> None:
    set_threads(1)
    print(f"{ARGS.layers} Conv 3x3 + ReLU layers, one thread, best of {ARGS.repeat}; targets: "
          + "; ".join(f"t{k}: {t}" for k, t in enumerate(TARGETS)))
    head = "".join(f"{f't{k} ms':>9}{f't{k}/ORT':>8}" for k in range(len(TARGETS)))
    print(f"\n{'case':<12}{'ORT ms':>9}{head}{'max rel diff':>14}")
    for case in ARGS.cases.split(","):
        symbolic = case.startswith("sym")
        c, hw = (int(v) for v in case.removeprefix("sym").split("x"))
        model = chain(c, hw, symbolic)
        x = np.random.default_rng(1).standard_normal((1, c, hw, hw)).astype(np.float32)
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        want = sess.run(None, {"x": x})[0]
        fns, err = {"ort": lambda: sess.run(None, {"x": x})}, 0.0
        for k, target in enumerate(TARGETS):
            module = import_model(model)
            PassManager(parse_pipeline(FUSE)).run(module)
            codegen_module(module, target)
            interp, fn = TvmInterpreter(module), module.funcs[0]
            got = interp.run(fn, {"x": x})["y"]
            err = max(err, float(np.abs(got - want).max() / np.abs(want).max()))
            fns[f"t{k}"] = lambda interp=interp, fn=fn: interp.run(fn, {"x": x})
        rounds: list = []
        times = best_times(fns, ARGS.repeat, rounds)
        cols = "".join(f"{times[f't{k}'] * 1e3:>9.2f}{paired_ratio(rounds, f't{k}', 'ort'):>7.2f}x"
                       for k in range(len(TARGETS)))
        print(f"{case:<12}{times['ort'] * 1e3:>9.2f}{cols}{err:>14.1e}")
    print("tK/ORT: the median over rounds of the target's time over ORT's in the same round.")


if __name__ == "__main__":
    sys.exit(main())
