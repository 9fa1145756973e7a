"""End-to-end latency: pir's compiled program (import | optimize with the fuse pipeline | codegen
--target llvm | run on the tvm runtime) against ONNX Runtime (ORT_ENABLE_ALL, the same thread
count), side by side in one run, best of --repeat with pir's and ORT's runs interleaved
(bench/benchenv.best_times), single thread by default.

Models (bench/model_zoo.py, seeded random weights, batch 1): ``gpt``, a GPT-2-style stack (4
pre-norm layers, hidden 768, 12 heads, sequence 128); ``bert-base``, a BERT-base-style encoder
(4 post-norm layers, sequence 128, with an attention mask); ``resnet50``, a ResNet-50-style
CNN at 224x224.  Any test model (tests/models/<name>.onnx, on its .inputs.npz) can be added
with --models.  For each: pir and ORT latency, their ratio, the max relative difference of the
outputs, and pir's time split per op kind (kernel.tvm by group kind, every other op by name),
from the runtime's profile (``pir run --profile``) of one extra run.  Asserts nothing.

    .venv/bin/python bench/models.py [--layers 4] [--threads 1] [--repeat 5]
                                     [--models gpt,bert-base,resnet50,gpt2,...] [--profile NAME]
"""

from __future__ import annotations

import argparse
import os
import sys

_ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_ap.add_argument("--layers", type=int, default=4, help="GPT- and BERT-style layers (default 4)")
_ap.add_argument("--hidden", type=int, default=768)
_ap.add_argument("--heads", type=int, default=12)
_ap.add_argument("--seq", type=int, default=128)
_ap.add_argument("--threads", type=int, default=1)
_ap.add_argument("--repeat", type=int, default=5)
_ap.add_argument("--models", default="gpt,bert-base,resnet50",
                 help="gpt, bert-base, resnet50 (generated), or tests/models/<name>.onnx names "
                      "(bert,gpt2,llama,mobilenet,resnet,t5,vit,whisper)")
_ap.add_argument("--profile", metavar="NAME",
                 help="also print a cProfile (top 25, cumulative) of one pir run of NAME")
ARGS = _ap.parse_args()

from benchenv import best_times, paired_ratio, profile_split, use_threads  # noqa: E402

use_threads(ARGS.threads)  # before anything imports numpy or tvm

import cProfile  # noqa: E402
import io  # noqa: E402
import pathlib  # noqa: E402
import pstats  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import model_zoo  # noqa: E402

import pir.codegen.tvm as ptvm  # noqa: E402,F401  (imports tvm with TVM_NUM_THREADS set)
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def load(name: str, args):
    if name == "gpt":
        model = model_zoo.transformer(args.layers, args.hidden, args.heads, args.seq)
        return f"gpt {args.layers}L h{args.hidden} s{args.seq}", model, model_zoo.inputs(model)
    if name == "bert-base":
        model = model_zoo.bert(args.layers, args.hidden, args.heads, args.seq)
        return f"bert-base {args.layers}L s{args.seq}", model, model_zoo.inputs(model)
    if name == "resnet50":
        model = model_zoo.resnet50()
        return "resnet50 224x224", model, model_zoo.inputs(model)
    model = onnx.load(str(ROOT / "tests" / "models" / f"{name}.onnx"))
    return name, model, dict(np.load(ROOT / "tests" / "models" / f"{name}.inputs.npz"))


def main() -> None:
    args = ARGS
    print(f"pir (tvm runtime) vs ONNX Runtime {ort.__version__} (ORT_ENABLE_ALL), "
          f"{args.threads} thread(s), best of {args.repeat}, wall time")
    rows, splits = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            label, model, feeds = load(name, args)
            t0 = time.perf_counter()
            module = import_model(model)
            PassManager(parse_pipeline(FUSE)).run(module)
            report = codegen_module(module, "llvm")
            t1 = time.perf_counter()
            interp = TvmInterpreter(module)
            t2 = time.perf_counter()
            fn = module.funcs[0]

            def pir_run():
                return interp.run(fn, feeds)

            path = os.path.join(tmp, f"{name}.onnx")
            onnx.save(model, path)
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            so.intra_op_num_threads = args.threads
            so.inter_op_num_threads = 1
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            out_names = [o.name for o in sess.get_outputs()]

            ours = pir_run()
            theirs = dict(zip(out_names, sess.run(None, feeds)))
            err = max(float(np.abs(ours[k].astype(np.float64) - v).max()
                            / max(float(np.abs(v).max()), 1e-30))
                      for k, v in theirs.items() if k in ours)
            rounds: list = []
            times = best_times({"pir": pir_run, "ort": lambda: sess.run(None, feeds)},
                               args.repeat, rounds)
            t_pir, t_ort = times["pir"], times["ort"]
            paired = paired_ratio(rounds, "pir", "ort")
            # one more run, timed per op (the runtime's --profile), split by op kind
            total, split = profile_split(interp, module, pir_run)
            n_kernels = sum(isinstance(op, TvmKernelOp) for op in fn.entry.ops)
            rows.append((label, len(fn.entry.ops), n_kernels, len(report.kept), t1 - t0, t2 - t1,
                         err, t_pir, t_ort, paired))
            splits.append((label, total, split))
            if args.profile == name:
                prof = cProfile.Profile()
                prof.enable()
                for _ in range(3):
                    pir_run()
                prof.disable()
                s = io.StringIO()
                pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
                print(f"\ncProfile of 3 pir runs of {label} (by tottime):\n{s.getvalue()}")
            del interp, sess

    print(f"\n{'model':<22}{'ops':>6}{'kernels':>8}{'groups':>7}{'opt+cg s':>9}{'build s':>8}"
          f"{'max rel diff':>13}{'pir ms':>10}{'ORT ms':>10}{'pir/ORT':>9}{'paired':>8}")
    for label, nops, nk, kept, tcg, tb, err, tp, to, paired in rows:
        print(f"{label:<22}{nops:>6}{nk:>8}{kept:>7}{tcg:>9.2f}{tb:>8.2f}{err:>13.1e}"
              f"{tp * 1e3:>10.2f}{to * 1e3:>10.2f}{tp / to:>8.2f}x{paired:>7.2f}x")
    print("ops: top-level ops of the compiled function; kernels: kernel.tvm ops among them; "
          "groups: fusion groups left uncompiled (run by the reference rules); build s: TVM "
          "build or cache load; paired: the median over rounds of pir's time over ORT's in the "
          "same round.  Target: pir/ORT <= 1.0x.")
    print("\npir time split per op kind (one extra run; % of that run; top 6):")
    for label, total, split in splits:
        top = sorted(split.items(), key=lambda kv: -kv[1])[:6]
        other = total - sum(split.values())
        parts = ", ".join(f"{k} {v / total:.0%}" for k, v in top)
        print(f"  {label:<22}{total * 1e3:>8.2f} ms: {parts}; interpreter outside exec "
              f"{other / total:.0%}")


if __name__ == "__main__":
    main()
