"""GPU benchmark and check of the CUDA code generation (issue 7), for a machine with a GPU.

    bench/gpu.sh                         # venv with pir[cuda,bench], then this script
    .venv/bin/python bench/gpu.py [--n 16384] [--d 4096] [--ops rms,softmax,layernorm,gelu]
                                  [--dtypes f32,bf16] [--models gpt2,llama,...] [--repeat 50]
                                  [--kernels native,tvm] [--no-torch] [--dry-run]

Four stages, one table at the end, within 8 minutes (--budget):

1. **Models: build and check.**  Every test model (tests/models) through import | optimize
   (fuse pipeline) | codegen --target cuda, for each kernel generator; every kernel compiled
   (NVRTC, through the cuda runtime), every model run on the cuda runtime and compared with
   the reference runtime (max abs error over outputs, relative to the largest magnitude), and
   timed (median of --repeat runs, end to end: inputs up, outputs down).
2. **Kernels.**  Fused RMSNorm, softmax, LayerNorm and GELU (erf) on [n, d] in float32 and
   bfloat16: one nn op each, fused into one kernel.cuda; the compiled kernel is launched
   directly on device arrays and timed with CUDA events (median of --repeat).
3. **Baselines measured in the same run:** the copy bandwidth (device-to-device copy of the
   same bytes, the floor a memory-bound kernel can reach), PyTorch eager
   (torch.nn.functional), and torch.compile of the same function (torch is imported lazily;
   the ``bench`` extra installs it).
4. **Table:** per op and dtype: pir's time, its bandwidth as a share of the copy bandwidth
   (target >= 85%), torch eager, torch.compile and pir / torch.compile (target <= 1.0).

``--dry-run`` does everything that needs no GPU: parses the arguments, builds every kernel
(both generators) and compiles it with ``nvcc -arch=sm_90 --ptx`` when nvcc is on PATH, and
prints the plan; the tests run it.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pir.codegen.cuda.codegen import codegen_cuda  # noqa: E402
from pir.ir.dialects.kernel import CudaKernelOp  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"
OPS = ("rms", "softmax", "layernorm", "gelu")
DTYPES = {"f32": "f32", "bf16": "bf16"}
MODELS = sorted(p.stem for p in (ROOT / "tests" / "models").glob("*.onnx"))


def op_program(kind: str, n: int, d: int, dtype: str) -> str:
    """One nn op on x[n, d] (and its [d] scale / bias) as a .pir program."""
    x = f"tensor<{n}x{d}x{dtype}>"
    v = f"tensor<{d}x{dtype}>"
    body = {
        "rms": (f"%s: {v}", f"nn.rms_norm(%x, %s) {{epsilon = 1e-05}} : ({x}, {v})"),
        "softmax": ("", f"nn.softmax(%x) {{axis = -1}} : ({x})"),
        "layernorm": (f"%s: {v}, %b: {v}",
                      f"nn.layer_norm(%x, %s, %b) {{epsilon = 1e-05}} : ({x}, {v}, {v})"),
        "gelu": ("", f"nn.gelu(%x) : ({x})"),
    }[kind]
    params = f"%x: {x}" + (f", {body[0]}" if body[0] else "")
    if kind == "softmax" and dtype != "f32":
        # decompose leaves a bf16 softmax alone: computed in f32 between two casts (what
        # torch does inside its bf16 softmax), all of it fused into one kernel
        x32 = f"tensor<{n}x{d}xf32>"
        lines = [f"%x32 = nn.cast(%x) {{to = f32}} : ({x}) -> {x32}",
                 f"%y32 = nn.softmax(%x32) {{axis = -1}} : ({x32}) -> {x32}",
                 f"%y = nn.cast(%y32) {{to = {dtype}}} : ({x32}) -> {x}"]
    else:
        lines = [f"%y = {body[1]} -> {x}"]
    text = "\n".join(f"    {line}" for line in lines)
    return (f"module @{kind} {{\n  func.func @main({params}) -> ({x}) {{\n"
            f"{text}\n    func.return(%y) : ({x}) -> ()\n  }}\n}}\n")


def fused(module):
    PassManager(parse_pipeline(FUSE)).run(module)
    return module


def build(module, generator: str):
    """``module`` code-generated for CUDA (a copy, read back from text as `pir run` would)."""
    module = parse_module(print_module(module), "<bench>")
    report = codegen_cuda(module, "sm_90", generator)
    return parse_module(print_module(module), "<bench>"), report


def kernels_of(module) -> dict[str, str]:
    return {op.symbol: op.source for op in module.walk() if isinstance(op, CudaKernelOp)}


def op_inputs(kind: str, n: int, d: int, dtype: str, seed: int = 0) -> dict[str, np.ndarray]:
    import ml_dtypes

    rng = np.random.default_rng(seed)
    np_t = np.float32 if dtype == "f32" else ml_dtypes.bfloat16
    feeds = {"x": rng.standard_normal((n, d), np.float32).astype(np_t)}
    if kind in ("rms", "layernorm"):
        feeds["s"] = (1 + 0.1 * rng.standard_normal(d)).astype(np_t)
    if kind == "layernorm":
        feeds["b"] = (0.1 * rng.standard_normal(d)).astype(np_t)
    return feeds


# -- stage 1: models --------------------------------------------------------------------------

def stage_models(args, gpu: bool, rows: list, deadline: float) -> None:
    from pir.frontends.onnx.importer import import_model

    for name in args.models:
        if time.time() > deadline:
            rows.append((f"model {name}", "skipped: out of time"))
            continue
        base = fused(import_model(str(ROOT / "tests" / "models" / f"{name}.onnx")))
        feeds = dict(np.load(ROOT / "tests" / "models" / f"{name}.inputs.npz"))
        for gen in args.kernels:
            t0 = time.time()
            module, report = build(base, gen)
            line = (f"{report.kernels} kernels ({report.sources} distinct), {report.cublas} "
                    f"cublas, {len(report.kept)} on the host; codegen {time.time() - t0:.1f}s")
            if not gpu:
                line += "; " + nvcc_check(kernels_of(module))
                rows.append((f"model {name} [{gen}]", line))
                continue
            rows.append((f"model {name} [{gen}]", line + "; " + run_model(module, feeds,
                                                                          args.repeat)))


def nvcc_check(sources: dict[str, str]) -> str:
    from pir.codegen.cuda.nvcc import compile_units, have_nvcc, translation_units

    if not sources:
        return "no kernels"
    if not have_nvcc():
        return "nvcc not on PATH: not compiled"
    res = compile_units(translation_units(sources), ("sm_90",), jobs=2)
    bad = [r for r in res if not r.ok]
    return "nvcc sm_90 ok" if not bad else f"nvcc FAILED: {bad[0].log[-300:]}"


def run_reference(module, feeds):
    from pir.runtimes.reference import run_function

    return run_function(module, feeds)


def rel_error(got: dict, want: dict) -> float:
    """The largest error over the outputs, relative to each output's largest magnitude."""
    return max(float(np.abs(np.asarray(got[k], np.float64) - np.asarray(w, np.float64)).max()
                     / max(1e-30, float(np.abs(np.asarray(w, np.float64)).max())))
               for k, w in want.items())


def run_model(module, feeds, repeat: int) -> str:
    from pir.runtimes.cuda import CudaInterpreter

    want = run_reference(module, feeds)
    interp = CudaInterpreter(module)
    got = interp.run(module.funcs[0], feeds)
    err = rel_error(got, want)
    times = []
    for _ in range(max(3, repeat // 5)):
        t0 = time.perf_counter()
        interp.run(module.funcs[0], feeds)
        times.append(time.perf_counter() - t0)
    verdict = "ok" if err < 1e-4 else "MISMATCH"
    return f"max rel err {err:.2e} {verdict}; {np.median(times) * 1e3:.2f} ms/run"


# -- stage 2 and 3: kernels and baselines -----------------------------------------------------

class Kernel:
    """One op's kernel.cuda, compiled, with its device inputs: ``launch()`` runs it once."""

    def __init__(self, module, feeds):
        from pir.runtimes.cuda import CudaInterpreter
        from pir.runtimes.cuda.abi import prepare_call

        self.interp = interp = CudaInterpreter(module)
        cp = interp.cp
        (op,) = [o for o in module.walk() if isinstance(o, CudaKernelOp)]
        self.op = op
        first = op.source.lstrip().splitlines()[0]
        self.schedule = first.split(": ", 1)[-1] if first.startswith("// pir kernel") else \
            f"{op.generator}, {op.block[0]} threads a block, grid {op.grid}"
        fn = module.funcs[0]
        got = interp.run(fn, feeds)  # binds the dims, uploads the constants, warms up
        self.err = rel_error(got, run_reference(module, feeds))
        self.ins = [interp._to_device(np.asarray(feeds[a.name])) for a in fn.entry.args]
        block_ins = {a: d for a, d in zip(fn.entry.args, self.ins)}
        ins = [block_ins.get(v) if v in block_ins else interp._to_device(
            np.asarray(interp.values[v])) for v in op.operands]
        call = prepare_call(op, [a.shape for a in ins], dict(interp.symbols))
        from pir.runtimes.cuda.abi import region_constants

        consts = [interp._to_device(c) for c in region_constants(op)]
        self.outs = [cp.empty(s, ins[0].dtype) for s in call.out_shapes]
        args = []
        for kind, v in call.args:
            if kind in ("i64", "i32"):
                args.append(np.int64(v) if kind == "i64" else np.int32(v))
            else:
                args.append({"in": ins, "const": consts, "out": self.outs}[kind][v])
        self.fn, self.call, self.args = interp.functions[op.symbol], call, tuple(args)
        self.nbytes = ins[0].nbytes + self.outs[0].nbytes  # x in, y out (weights: noise)

    def launch(self) -> None:
        self.fn(self.call.grid, self.call.block, self.args, shared_mem=self.call.shared_mem)


def event_time(cp, fn, repeat: int) -> float:
    """Median seconds of ``fn()`` on the GPU (CUDA events), after 3 warm-up calls."""
    for _ in range(3):
        fn()
    times = []
    start, end = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(repeat):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return float(np.median(times))


def torch_fns(kind: str, dtype: str, n: int, d: int):
    """(eager, compiled) functions of torch on device tensors, or None without torch."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    t = torch.float32 if dtype == "f32" else torch.bfloat16
    x = torch.randn(n, d, device="cuda", dtype=t)
    s = torch.ones(d, device="cuda", dtype=t)
    b = torch.zeros(d, device="cuda", dtype=t)
    f = {"rms": lambda: F.rms_norm(x, (d,), s, 1e-5),
         "softmax": lambda: torch.softmax(x, -1),
         "layernorm": lambda: F.layer_norm(x, (d,), s, b, 1e-5),
         "gelu": lambda: F.gelu(x)}[kind]
    compiled = torch.compile(f)
    return f, compiled


def torch_time(fn, repeat: int) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return float(np.median(times))


def stage_kernels(args, gpu: bool, table: list, rows: list, deadline: float) -> None:
    for dtype in args.dtypes:
        for kind in args.ops:
            if time.time() > deadline:
                rows.append((f"{kind} {dtype}", "skipped: out of time"))
                continue
            base = fused(parse_module(op_program(kind, args.n, args.d, dtype), "<op>"))
            entry = {"op": kind, "dtype": dtype}
            for gen in args.kernels:
                module, report = build(base, gen)
                if report.kernels != 1:
                    entry[gen] = None
                    rows.append((f"{kind} {dtype} [{gen}]", f"{report.kernels} kernels, not "
                                 "one: " + ("; ".join(r for _, r in report.kept) or "-")))
                    continue
                if not gpu:
                    (sched,) = report.schedules
                    rows.append((f"{kind} {dtype} [{gen}]", sched + "; " +
                                 nvcc_check(kernels_of(module))))
                    continue
                k = Kernel(module, op_inputs(kind, args.n, args.d, dtype))
                tol = 1e-4 if dtype == "f32" else 2e-2  # bf16: the output's rounding
                rows.append((f"{kind} {dtype} [{gen}]", f"{k.schedule}; max rel err "
                             f"{k.err:.2e} {'ok' if k.err < tol else 'MISMATCH'}"))
                entry[gen] = event_time(k.interp.cp, k.launch, args.repeat)
                entry["bytes"] = k.nbytes
                entry.setdefault("schedule", k.schedule)
            if gpu:
                cp = __import__("cupy")
                src = cp.empty(entry.get("bytes", 8) // 2, cp.uint8)
                dst = cp.empty_like(src)
                entry["copy"] = event_time(cp, lambda: cp.copyto(dst, src), args.repeat)
                fns = None if args.no_torch else torch_fns(kind, dtype, args.n, args.d)
                if fns is not None:
                    entry["eager"] = torch_time(fns[0], args.repeat)
                    entry["compile"] = torch_time(fns[1], args.repeat)
            table.append(entry)


def print_table(table: list, rows: list, args, gpu: bool) -> None:
    print("\n== build and check ==")
    width = max([len(r[0]) for r in rows] + [10])
    for name, text in rows:
        print(f"{name:<{width}}  {text}")
    if not gpu:
        print("\n(dry run: no GPU; nothing was timed. Kernels above were built and compiled "
              "to PTX; run without --dry-run on a GPU machine for the ratio table.)")
        return
    print(f"\n== fused kernels on [{args.n}, {args.d}]: time (us), bandwidth as % of the "
          "copy bandwidth, ratios to torch.compile ==")
    head = (f"{'op':<10} {'dtype':<5} {'pir':>8} {'%copy':>6} {'tvm':>8} {'copy':>8} "
            f"{'eager':>8} {'compile':>8} {'pir/compile':>11} {'pir/eager':>9}")
    print(head)
    for e in table:
        def us(k):
            return f"{e[k] * 1e6:8.1f}" if e.get(k) else f"{'-':>8}"
        pir = e.get("native")
        pct = f"{100 * e['copy'] / pir:5.0f}%" if pir and e.get("copy") else f"{'-':>6}"
        rc = f"{pir / e['compile']:11.2f}" if pir and e.get("compile") else f"{'-':>11}"
        re_ = f"{pir / e['eager']:9.2f}" if pir and e.get("eager") else f"{'-':>9}"
        print(f"{e['op']:<10} {e['dtype']:<5} {us('native')} {pct} {us('tvm')} {us('copy')} "
              f"{us('eager')} {us('compile')} {rc} {re_}")
    print("targets: %copy >= 85 (the copy moves the same bytes: read x, write y), "
          "pir/compile <= 1.00")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--d", type=int, default=4096)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--kernels", default="native,tvm")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--budget", type=float, default=450.0, help="seconds for the whole run")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: build every kernel, compile with nvcc, print the plan")
    args = ap.parse_args(argv)
    args.ops = [o for o in args.ops.split(",") if o]
    args.dtypes = [t for t in args.dtypes.split(",") if t]
    args.models = [m for m in args.models.split(",") if m]
    args.kernels = [k for k in args.kernels.split(",") if k]
    for name, got, allowed in (("--ops", args.ops, OPS), ("--dtypes", args.dtypes, DTYPES),
                               ("--models", args.models, MODELS),
                               ("--kernels", args.kernels, ("native", "tvm"))):
        bad = [g for g in got if g not in allowed]
        if bad:
            ap.error(f"{name}: unknown {', '.join(bad)} (choose from {', '.join(allowed)})")
    gpu = not args.dry_run
    if gpu:
        from pir.runtimes.cuda.device import require_gpu

        try:
            require_gpu()
        except Exception as e:  # noqa: BLE001 - PirError: say why, as pir would
            print(f"gpu.py: error: {e} (use --dry-run on a machine without one)",
                  file=sys.stderr)
            return 1
    t0 = time.time()
    deadline = t0 + args.budget
    rows: list = []
    table: list = []
    print(f"gpu.py: {'dry run' if not gpu else 'GPU run'}; nvcc: "
          f"{shutil.which('nvcc') or 'not found'}; budget {args.budget:.0f}s", flush=True)
    stage_kernels(args, gpu, table, rows, deadline)
    stage_models(args, gpu, rows, deadline)
    print_table(table, rows, args, gpu)
    print(f"\ntotal {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
