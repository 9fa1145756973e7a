"""IR text throughput: print and parse speed on a generated 20,000-op module, and resource
write/read speed on 500 MB of weights beside onnx.save/onnx.load on the same weights, all in
one run (this machine is shared and noisy: only the side-by-side ratios mean something).

    .venv/bin/python bench/ir_throughput.py [--ops 20000] [--mb 500] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

from pir.ir import Builder, ConstantOp, DType, FuncOp, ModuleOp, ResourceRef, ReturnOp, TensorType
from pir.ir.core import OPS
from pir.ir.dialects import load_dialects
from pir.ir.parser import parse_file, parse_file_bytes
from pir.ir.printer import print_module, write_module


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def op_module(n_ops: int) -> ModuleOp:
    """A function of ``n_ops`` elementwise ops over symbolic-batch tensors, with named values,
    locations and small inline constants, like an imported model's body."""
    m = ModuleOp.create("bench", {"pir.source": "generated"})
    t = TensorType(DType.F32, ("B", 768))
    fn = FuncOp.create("main", [t, t], [t], ["x", "y"])
    m.body.block.append(fn)
    b = Builder(fn.entry)
    vals = list(fn.args)
    load_dialects()
    kinds = tuple(OPS[f"nn.{k}"] for k in ("add", "mul", "sub", "div"))
    rng = np.random.default_rng(0)
    for i in range(n_ops - 1):
        b.loc = f"/layers.{i // 50}/op_{i}"
        if i % 10 == 0:
            scalar = np.array(rng.standard_normal(), dtype=np.float32)
            vals.append(b.value(ConstantOp, value=scalar, name=f"c{i}"))
            continue
        a, c = vals[-1], vals[-1 - (i % 7) - 1 if len(vals) > 8 else 0]
        vals.append(b.value(kinds[i % 4], a, c, name=f"/layers.{i // 50}/v{i}"))
    out = vals[-1]
    b.loc = None
    b.create(ReturnOp, [out])
    from pir.ir.types import FunctionType

    fn.attributes["function_type"] = FunctionType((t, t), (out.type,))
    return m


def weights_module(total_mb: int, n_tensors: int = 50) -> tuple[ModuleOp, list[np.ndarray]]:
    m = ModuleOp.create("weights")
    fn = FuncOp.create("main", [], [], [])
    m.body.block.append(fn)
    b = Builder(fn.entry)
    per = total_mb * 1_000_000 // 4 // n_tensors
    rng = np.random.default_rng(0)
    arrays = []
    for i in range(n_tensors):
        arr = rng.standard_normal(per, dtype=np.float32)
        arrays.append(arr)
        m.resources[f"w{i}"] = arr
        b.value(ConstantOp, value=ResourceRef(f"w{i}"), result_types=[TensorType.of(arr)])
    b.create(ReturnOp, [])
    return m, arrays


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    m = op_module(args.ops)
    n = sum(1 for _ in m.funcs[0].walk()) - 1
    text = print_module(m)
    data = text.encode()
    t_print = best_of(args.repeat, lambda: print_module(m))
    t_parse = best_of(args.repeat, lambda: parse_file_bytes(data, "bench.pir"))
    print(f"module: {n} ops, {len(data) / 1e6:.1f} MB of text")
    print(f"{'':24}{'ops/s':>12}{'target':>10}{'ratio':>8}")
    for name, t in (("print", t_print), ("parse (incl. verify)", t_parse)):
        rate = n / t
        print(f"{name:24}{rate:>12,.0f}{30000:>10,}{rate / 30000:>8.2f}x")

    wm, arrays = weights_module(args.mb)
    nbytes = sum(a.nbytes for a in arrays)
    model = helper.make_model(helper.make_graph(
        [], "w", [], [], [numpy_helper.from_array(a, f"w{i}") for i, a in enumerate(arrays)]))
    with tempfile.TemporaryDirectory(dir=os.environ.get("PIR_BENCH_DIR")) as d:
        pir_path, onnx_path = os.path.join(d, "w.pir"), os.path.join(d, "w.onnx")

        def pir_write():
            with open(pir_path, "wb") as f:
                write_module(wm, f)

        def pir_read():
            got = parse_file(pir_path)
            assert got.resources["w0"].shape == arrays[0].shape

        def onnx_write():
            onnx.save(model, onnx_path)

        def onnx_read():
            got = onnx.load(onnx_path)
            [numpy_helper.to_array(t) for t in got.graph.initializer]

        # interleave the two so that both see the same machine load
        results = {}
        for name, fn in (("pir write", pir_write), ("onnx.save", onnx_write),
                         ("pir read", pir_read), ("onnx.load", onnx_read)):
            results[name] = nbytes / 1e6 / best_of(args.repeat, fn)
    print(f"\nresources: {len(arrays)} tensors, {nbytes / 1e6:.0f} MB")
    print(f"{'':12}{'pir MB/s':>10}{'onnx MB/s':>11}{'pir/onnx':>10}{'target':>8}")
    for what, ours, theirs in (("write", "pir write", "onnx.save"), ("read", "pir read", "onnx.load")):
        r = results[ours] / results[theirs]
        print(f"{what:12}{results[ours]:>10,.0f}{results[theirs]:>11,.0f}{r:>9.2f}x{'>=0.5x':>8}")


if __name__ == "__main__":
    main()
