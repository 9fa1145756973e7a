"""Kernel benchmark: RMSNorm, softmax, LayerNorm and GELU on a [N, D] float32 input (default
[16384, 768]), single thread, all measured side by side in one run, best of --repeat (pir's
kernel and ORT's fused op interleaved, bench/benchenv.best_times):

- pir: a one-node ONNX model imported, optimized with the fuse pipeline
  (decompose,canonicalize,fold,cse,dce,shapes,fuse), codegen'd to one ``kernel.tvm`` op, built by
  the tvm runtime (``compile_program``), and its compiled function called on TVM tensors already
  in place ("pir kernel").  "pir run" is the same program through ``TvmInterpreter.run`` on
  numpy arrays (what ``pir run`` does: its input 64-byte aligned as ``pir run`` loads it,
  the output from the runtime's pool, the interpreter).
- numpy: the op composed from numpy ops (GELU's erf as the Abramowitz-Stegun 7.1.26 polynomial,
  |err| < 1.5e-7, since numpy has no erf).
- ONNX Runtime: the fused op (RMSNormalization opset 23, LayerNormalization, Softmax, Gelu
  opset 20), ORT_ENABLE_ALL, intra_op_num_threads = 1, IOBinding-free ``run`` on numpy arrays.
- floor: the bytes that must move (read x + write y; the [D] scale/bias are noise) divided by
  the copy bandwidth of one large ``np.copyto`` (256 MiB) measured in the same run.

Targets (issue 4): every pir kernel within 1.2x of the floor and not slower than ORT's fused op.
Prints a table; asserts nothing.

    .venv/bin/python bench/kernels.py [--n 16384] [--d 768] [--ops rms,softmax,layernorm,gelu]
                                      [--repeat 10]
"""

from __future__ import annotations

import os

os.environ["TVM_NUM_THREADS"] = "1"  # before anything imports tvm: single-thread comparison
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import pir.codegen.tvm as ptvm  # noqa: E402,F401  (imports tvm with TVM_NUM_THREADS=1)
from benchenv import best_time, best_times, paired_ratio  # noqa: E402
import tvm  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.aligned import aligned  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter, compile_program  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"
EPS = 1e-5
ONNX_OP = {"rms": ("RMSNormalization", 23), "softmax": ("Softmax", 20),
           "layernorm": ("LayerNormalization", 20), "gelu": ("Gelu", 20)}


def one_node_model(kind: str, n: int, d: int, s: np.ndarray, b: np.ndarray) -> onnx.ModelProto:
    op, opset = ONNX_OP[kind]
    inits = {"rms": {"s": s}, "layernorm": {"s": s, "b": b}}.get(kind, {})
    attrs = {"rms": {"axis": -1, "epsilon": EPS}, "layernorm": {"axis": -1, "epsilon": EPS},
             "softmax": {"axis": -1}}.get(kind, {})
    node = helper.make_node(op, ["x", *inits], ["y"], name=f"/{kind}", **attrs)
    graph = helper.make_graph(
        [node], kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, d])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return onnx.shape_inference.infer_shapes(model)


def _erf(x):
    """Abramowitz & Stegun 7.1.26 in numpy ops (numpy has no erf; scipy is not installed)."""
    a1, a2, a3, a4, a5, p = 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429, \
        0.3275911
    sign = np.sign(x)
    ax = np.abs(x)
    t = 1.0 / (1.0 + p * ax)
    y = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * np.exp(-ax * ax)
    return sign * y


def numpy_op(kind: str, x, s, b):
    if kind == "rms":
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * s
    if kind == "softmax":
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    if kind == "layernorm":
        m = x.mean(-1, keepdims=True)
        c = x - m
        return c / np.sqrt((c * c).mean(-1, keepdims=True) + EPS) * s + b
    if kind == "gelu":
        return 0.5 * x * (1 + _erf(x * np.float32(1 / np.sqrt(2.0))))
    raise KeyError(kind)


class PirKernel:
    """The one kernel.tvm op of a codegen'd one-node program, callable on TVM tensors."""

    def __init__(self, model: onnx.ModelProto, x: np.ndarray):
        self.module = import_model(model)
        PassManager(parse_pipeline(FUSE)).run(self.module)
        self.report = codegen_module(self.module, "llvm")
        self.kernels = [op for op in self.module.walk() if isinstance(op, TvmKernelOp)]
        self.fn = self.module.funcs[0]
        t = time.perf_counter()
        self.interp = TvmInterpreter(self.module, keep_values=True)
        self.compile_s = time.perf_counter() - t
        self.program = compile_program(self.module)
        # one run through the runtime gives every kernel operand's value
        self.out = self.interp.run(self.fn, {"x": x})["y"]
        dev = tvm.cpu()
        self.calls = []
        for op in self.kernels:
            k = self.program.kernel(op)
            ins = [tvm.runtime.tensor(np.array(self.interp.values[v], order="C"), dev)
                   for v in op.operands]
            outs = [tvm.runtime.empty(tuple(r.type.shape), "float32", dev) for r in op.results]
            self.calls.append((k.fn, [*ins, *k.params, *outs]))

    def run_kernel(self) -> None:
        for fn, args in self.calls:
            fn(*args)

    def run_program(self, x: np.ndarray) -> None:
        self.interp.values.clear()
        self.interp.symbols.clear()
        self.interp.run(self.fn, {"x": x})


def ort_session(model: onnx.ModelProto, path: str) -> ort.InferenceSession:
    onnx.save(model, path)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--ops", default="rms,softmax,layernorm,gelu")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    n, d = args.n, args.d
    rng = np.random.default_rng(0)
    # 64-byte aligned, as `pir run` reads its inputs (pir.runtimes.inputs); ORT gets the same
    x = aligned(rng.standard_normal((n, d), dtype=np.float32))
    s = rng.standard_normal(d, dtype=np.float32)
    b = rng.standard_normal(d, dtype=np.float32)
    nbytes = 2 * x.nbytes  # read x once, write y once

    big = np.ones(64 * 1024 * 1024, np.float32)  # 256 MiB: far beyond the caches
    dst = np.empty_like(big)
    t_copy = best_time(lambda: np.copyto(dst, big), max(3, args.repeat // 2))
    bw = 2 * big.nbytes / t_copy
    floor = nbytes / bw
    print(f"[{n}, {d}] float32, 1 thread, best of {args.repeat}; np.copyto bandwidth "
          f"{bw / 1e9:.1f} GB/s -> floor {floor * 1e3:.2f} ms (read x + write y, "
          f"{nbytes / 2**20:.0f} MiB)")
    print(f"onnxruntime {ort.__version__}, tvm {tvm.__version__}, numpy {np.__version__}")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.ops.split(","):
            model = one_node_model(kind, n, d, s, b)
            k = PirKernel(model, x)
            sess = ort_session(model, os.path.join(tmp, f"{kind}.onnx"))
            want = sess.run(None, {"x": x})[0]
            err = float(np.abs(k.out - want).max() / np.abs(want).max())
            # pir's kernel and ORT's op interleaved (benchenv.best_times); the slower
            # references after them
            rounds: list = []
            times = best_times({"pir kernel": k.run_kernel,
                                "ORT fused": lambda: sess.run(None, {"x": x})}, args.repeat,
                               rounds)
            times["paired"] = paired_ratio(rounds, "pir kernel", "ORT fused")
            times["pir run"] = best_time(lambda: k.run_program(x), max(3, args.repeat // 2))
            times["numpy"] = best_time(lambda: numpy_op(kind, x, s, b), max(3, args.repeat // 2))
            rows.append((kind, len(k.kernels), err, k.compile_s, times))
            del k, sess

    cols = ["pir kernel", "pir run", "numpy", "ORT fused"]
    print(f"\n{'op':<10}{'kernels':>8}{'rel err':>9}{'build s':>8}"
          + "".join(f"{c + ' ms':>15}" for c in cols)
          + "".join(f"{c + '/floor':>17}" for c in cols) + f"{'pir/ORT':>9}{'paired':>8}")
    for kind, nk, err, cs, t in rows:
        print(f"{kind:<10}{nk:>8}{err:>9.1e}{cs:>8.2f}"
              + "".join(f"{t[c] * 1e3:>15.2f}" for c in cols)
              + "".join(f"{t[c] / floor:>16.2f}x" for c in cols)
              + f"{t['pir kernel'] / t['ORT fused']:>8.2f}x{t['paired']:>7.2f}x")
    print(f"floor {floor * 1e3:.2f} ms.  Targets: pir kernel <= 1.2x floor and <= 1.0x ORT "
          "fused.  'pir run' = the kernel through TvmInterpreter.run (aligned input, output "
          "from the runtime's pool); 'build s' = compile or cache load; 'rel err' = max |pir - ORT| / max|ORT|; "
          "'paired' = the median over rounds of pir's time over ORT's in the same round.")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
