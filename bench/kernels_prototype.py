"""Prototype kernel benchmark: pir's TVM kernels for RMSNorm, softmax, LayerNorm and GELU on a
[N, D] float32 input against numpy's composed ops and the memory floor.

The floor is the bytes a kernel must move (read x, write y; the [D] scale/bias are noise)
divided by the copy bandwidth measured in the same run: with one large ``np.copyto`` (one
thread), and with a parallel copy kernel built by the same TVM path (all threads), so each
thread count is held against the floor it can reach.

    .venv/bin/python bench/kernels_prototype.py [--n 16384] [--d 768] [--ops rms,softmax]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from helpers import node_model  # noqa: E402

import pir.codegen.tvm as ptvm  # noqa: E402  (sets TVM_NUM_THREADS before TVM starts)
import tvm  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402

EPS = 1e-5


def prim_module(kind: str, d: int, s: np.ndarray, b: np.ndarray):
    """The decomposed prim function of one ONNX op on a [N, d] input (N symbolic)."""
    x = np.zeros((2, d), np.float32)
    shapes = {"x": ["N", d]}
    model = {
        "rms": lambda: node_model("RMSNormalization", {"x": x}, ["y"], opset=23,
                                  initializers={"s": s}, axis=-1, epsilon=EPS, shapes=shapes),
        "softmax": lambda: node_model("Softmax", {"x": x}, ["y"], axis=-1, shapes=shapes),
        "layernorm": lambda: node_model("LayerNormalization", {"x": x}, ["y"],
                                        initializers={"s": s, "b": b}, axis=-1, epsilon=EPS,
                                        shapes=shapes),
        "gelu": lambda: node_model("Gelu", {"x": x}, ["y"], opset=20, shapes=shapes),
    }[kind]()
    module = import_model(model)
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(module)
    return module


def numpy_ref(kind: str, x, s, b):
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
        import math  # numpy has no erf (and scipy is not installed): slow, reference only
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return 0.5 * x * (1 + erf(x / np.sqrt(2.0)))
    raise KeyError(kind)


def median_time(fn, repeat: int) -> float:
    fn()  # warm up (page faults, thread pool start)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def copy_kernel(d: int):
    """y = x on [N, d], through pir's own lowering and schedule (parallel rows, vectors)."""
    from pir.ir.core import Block
    from pir.ir.dialects.func import ReturnOp
    from pir.ir.types import DType, TensorType

    block = Block([TensorType(DType.F32, ("N", d))], ["x"])
    block.append(ReturnOp.build([block.args[0]]))
    return ptvm.compile_block(block, "copy")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--ops", default="rms,softmax,layernorm,gelu")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", default=f"1,{len(os.sched_getaffinity(0))}")
    args = ap.parse_args()
    n, d = args.n, args.d
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d), dtype=np.float32)
    s = rng.standard_normal(d, dtype=np.float32)
    b = rng.standard_normal(d, dtype=np.float32)
    nbytes = 2 * x.nbytes  # read x once, write y once

    big = np.ones(64 * 1024 * 1024, np.float32)  # 256 MiB: far beyond the caches
    dst = np.empty_like(big)
    t_np_copy = median_time(lambda: np.copyto(dst, big), max(5, args.repeat // 4))
    bw_np = 2 * big.nbytes / t_np_copy
    print(f"np.copyto bandwidth (1 thread): {bw_np / 1e9:.1f} GB/s; x is {x.nbytes / 2**20:.0f} "
          f"MiB; floor (1 thread) {nbytes / bw_np * 1e3:.2f} ms")

    dev = tvm.cpu()
    xt = tvm.runtime.tensor(x, dev)
    yt = tvm.runtime.empty((n, d), "float32", dev)
    copy = copy_kernel(d)
    bigt = tvm.runtime.tensor(big[: big.size // d * d].reshape(-1, d), dev)
    bigo = tvm.runtime.empty(bigt.shape, "float32", dev)

    kernels = {}
    for kind in args.ops.split(","):
        module = prim_module(kind, d, s, b)
        t = time.perf_counter()
        kernels[kind] = ptvm.compile_block(module.funcs[0].entry, kind)
        unsched = ptvm.build(ptvm.lower_block(module.funcs[0].entry, kind), schedule=False)
        compile_s = time.perf_counter() - t
        kernels[kind].run_tensors([xt], [yt])
        ref = numpy_ref(kind, x.astype(np.float64), s, b)
        err = np.abs(yt.numpy() - ref).max() / np.abs(ref).max()
        # numpy's GELU needs erf, which numpy lacks: no fair numpy time for it
        t_np = (median_time(lambda: numpy_ref(kind, x, s, b), max(3, args.repeat // 4))
                if kind != "gelu" else float("nan"))
        print(f"\n{kind}: compile (scheduled + unscheduled) {compile_s:.2f}s, max rel err "
              f"{err:.1e}; numpy {t_np * 1e3:.2f} ms = {t_np / (nbytes / bw_np):.2f}x floor(1T)")
        for nt in [int(v) for v in args.threads.split(",")]:
            ptvm.set_threads(nt)
            t_copy = median_time(lambda: copy.run_tensors([bigt], [bigo]), args.repeat)
            bw = 2 * bigo.shape[0] * d * 4 / t_copy  # bytes read + written
            floor = nbytes / bw
            t_k = median_time(lambda: kernels[kind].run_tensors([xt], [yt]), args.repeat)
            t_u = median_time(lambda: unsched.run_tensors([xt], [yt]), max(3, args.repeat // 4))
            print(f"  threads={nt}: pir {t_k * 1e3:.2f} ms = {t_k / floor:.2f}x floor "
                  f"(copy kernel {bw / 1e9:.1f} GB/s) = {t_k / (nbytes / bw_np):.2f}x "
                  f"floor(np.copyto); numpy/pir {t_np / t_k:.1f}x; unscheduled TVM "
                  f"{t_u / floor:.2f}x floor")


if __name__ == "__main__":
    main()
