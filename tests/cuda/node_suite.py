"""The ONNX node suite through CUDA code generation, without a GPU (``make cuda-suite``).

Every case that passes on the reference path (tests/onnx_suite/passing.txt) goes through
``import | optimize -p <fuse pipeline> | codegen --target cuda`` with the chosen generators;
the groups kept on the host are counted by reason; every kernel is compiled by ``nvcc
-arch=sm_90 --ptx`` (batched, two workers); and every ``--every``-th case with kernels is run
on the host emulation (pir.codegen.cuda.emulate) and compared with the suite's expected
outputs at the suite's tolerances.  Prints a summary; exits 1 on any failure.

    .venv/bin/python tests/cuda/node_suite.py [--kernels native,tvm] [--every 4] [--pattern RX]
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import re
import sys
import time
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

_DEF = r"(__global__\s+void\s+(?:__launch_bounds__\(\d+\)\s+)?)"


def _cases(pattern):
    from pir.testing.onnx_suite import load_cases

    passing = set((ROOT / "tests" / "onnx_suite" / "passing.txt").read_text().split())
    return [c for c in load_cases(pattern) if c.name in passing]


def _module(case, generator):
    from pir.codegen.cuda.codegen import codegen_cuda
    from pir.frontends.onnx.importer import import_model
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module
    from pir.testing.onnx_suite import COMPILED_PIPELINE, _optimized

    m = _optimized(import_model(case.model, filename=case.name), COMPILED_PIPELINE, case.name)
    report = codegen_cuda(m, "sm_90", generator)
    return parse_module(print_module(m), case.name), report


def _emulate(case, module) -> None:
    from pir.codegen.cuda.emulate import EmulatedInterpreter
    from pir.testing.onnx_suite import _compare, _tensor_protos_to_arrays

    model = case.model
    init = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in init]
    for inputs, outputs in case.data_sets:
        inputs, outputs = _tensor_protos_to_arrays(inputs), _tensor_protos_to_arrays(outputs)
        feeds = dict(zip(names, [np.asarray(x) for x in inputs]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = EmulatedInterpreter(module).run(module.funcs[0], feeds)
        for exp, act in zip(outputs, got.values()):
            _compare(np.asarray(exp), act, case.rtol, case.atol)


def run(generator: str, cases, every: int) -> bool:
    from pir.codegen.cuda.nvcc import compile_units, have_nvcc, translation_units
    from pir.ir.dialects.kernel import CudaKernelOp

    t0 = time.time()
    kept: collections.Counter = collections.Counter()
    sources: dict[str, str] = {}
    failures: list[str] = []
    emulated = with_kernels = 0
    for i, case in enumerate(cases):
        try:
            module, report = _module(case, generator)
        except Exception as e:  # noqa: BLE001 - a crash of codegen is a failure
            failures.append(f"{case.name}: codegen: {type(e).__name__}: {str(e)[:200]}")
            continue
        for _, why in report.kept:
            kept[re.sub(r"%\S+|'[^']*'", "X", why)[:100]] += 1
        ops = {op.symbol: op.source for op in module.walk() if isinstance(op, CudaKernelOp)}
        for sym, src in ops.items():  # unique names across cases, for batching
            sources[f"c{i}_{sym}"] = re.sub(_DEF + sym + r"\(",
                                            lambda m, s=f"c{i}_{sym}": m.group(1) + s + "(", src)
        if ops:
            with_kernels += 1
            if every and with_kernels % every == 0:
                try:
                    _emulate(case, module)
                    emulated += 1
                except Exception as e:  # noqa: BLE001 - mismatch or crash
                    failures.append(f"{case.name}: emulation: {' '.join(str(e).split())[:200]}")
    print(f"[{generator}] {len(cases)} cases, {with_kernels} with kernels, {len(sources)} "
          f"kernels; codegen + emulation {time.time() - t0:.0f}s")
    for why, n in kept.most_common():
        print(f"  kept {n:4d} x {why}")
    if have_nvcc():
        t1 = time.time()
        keys = sorted(sources)
        units = []
        for k in range(0, len(keys), 150):
            units += translation_units({s: sources[s] for s in keys[k:k + 150]})
        bad = [r for r in compile_units(units, ("sm_90",), jobs=2) if not r.ok]
        print(f"  nvcc sm_90: {len(units)} units, {len(bad)} failed ({time.time() - t1:.0f}s)")
        failures += [f"nvcc unit {r.unit}: {r.log[-300:]}" for r in bad]
    else:
        print("  nvcc not on PATH: not compiled")
    print(f"  emulated {emulated} cases against the suite's outputs")
    for f in failures:
        print(f"  FAIL {f}")
    return not failures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default="native,tvm")
    ap.add_argument("--every", type=int, default=4,
                    help="emulate every N-th case with kernels (0: none)")
    ap.add_argument("--pattern", help="only the cases whose name matches this regex")
    args = ap.parse_args(argv)
    cases = _cases(args.pattern)
    ok = True
    for gen in args.kernels.split(","):
        ok &= run(gen, cases, args.every if gen == "native" else 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
