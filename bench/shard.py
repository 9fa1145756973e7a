"""Sharding plans for a GPT-2-style model (bench/model_zoo.py ``transformer``) against the
hand-derived Megatron-LM minimum, on meshes tp=2, tp=4 and dp=2 x tp=2, planned with
``pir shard --auto`` (the input's batch split on dp where the mesh has it).

**The Megatron minimum**, per forward step.  Each pre-norm layer is h = x + attn(ln1(x)),
y = h + mlp(ln2(h)).  Megatron splits q, k, v and fc1 by columns and proj and fc2 by rows
over tp, so each block ends in a partial sum over tp, reduced once:

- attention: one all-reduce of the [B/dp, S, H] output of proj;
- MLP: one all-reduce of the [B/dp, S, H] output of fc2;

so per layer 2 all-reduces of (B/dp)*S*H*4 bytes per rank (f32), and
``minimum = layers * 2 * (B/dp) * S * H * 4``.  (Counting, as ``pir shard --report`` does,
the bytes a rank passes to each collective; a ring all-reduce moves 2(n-1)/n of them.)
Data parallelism adds nothing to the forward step.  Target: planned == minimum.

**Memory.**  The parameters one rank holds against 1/N of all of them (N = ranks): tensor
parallelism splits the matrices (all but the layer-norm gains and biases and the
row-parallel biases) over tp, and data parallelism replicates them over dp, so the ideal on
dp=2 x tp=2 is 1/tp, not 1/N; both ratios are printed.

The last column is left for the MPI run time against the single process (the per-rank
runner fills it: ``mpi_time(mesh, program)``).

    .venv/bin/python bench/shard.py [--layers 2] [--hidden 768] [--heads 12] [--seq 128]
                                    [--batch 8] [--meshes tp=2,tp=4,dp=2:tp=2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from model_zoo import transformer  # noqa: E402

from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.passes.shard.driver import shard_module  # noqa: E402


def megatron_minimum(layers: int, batch: int, seq: int, hidden: int, dp: int) -> int:
    return layers * 2 * (batch // dp) * seq * hidden * 4


def mpi_time(mesh: str, program: str) -> str:
    """MPI run time vs single process: bench/shard_run.py (median of 3 runs each)."""
    from shard_run import mpi_time as measure

    return measure(mesh, program)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--meshes", default="tp=2,tp=4,dp=2:tp=2",
                    help="comma-separated meshes; ':' separates the axes of one mesh")
    args = ap.parse_args()

    t0 = time.perf_counter()
    model = import_model(transformer(args.layers, args.hidden, args.heads, seq=args.seq,
                                     batch=args.batch))
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(model)
    text = print_module(model)
    print(f"GPT-2-style model: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, "
          f"batch {args.batch}, sequence {args.seq} (prepared in {time.perf_counter() - t0:.1f} s)")

    head = ("mesh", "collectives", "planned B/step", "Megatron min", "ratio", "params/rank",
            "/(1/N)", "/(1/tp)", "plan s", "MPI vs 1 proc")
    rows = []
    for mesh in args.meshes.split(","):
        mesh = mesh.replace(":", ",")
        axes = dict((a, int(n)) for a, n in (p.split("=") for p in mesh.split(",")))
        dp, tp = axes.get("dp", 1), axes.get("tp", 1)
        spec = {"x": ["S(0)" if a == "dp" else "R" for a in axes]}
        m = parse_module(text)
        t = time.perf_counter()
        r = shard_module(m, mesh, spec, auto=True)
        plan_s = time.perf_counter() - t
        s = r.summary
        n = r.mesh.num_ranks
        kinds = {}
        for c in s.collectives:
            kinds[f"{c.kind}@{c.axis}"] = kinds.get(f"{c.kind}@{c.axis}", 0) + 1
        minimum = megatron_minimum(args.layers, args.batch, args.seq, args.hidden, dp)
        rows.append((mesh, " ".join(f"{v}x{k}" for k, v in kinds.items()) or "none",
                     f"{s.comm_bytes:,}", f"{minimum:,}", f"{s.comm_bytes / minimum:.3f}",
                     f"{s.weight_bytes:,}", f"{s.weight_bytes / (s.weight_bytes_total / n):.3f}",
                     f"{s.weight_bytes / (s.weight_bytes_total / tp):.3f}", f"{plan_s:.1f}",
                     mpi_time(mesh, print_module(m))))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in (head, *rows):
        print("  ".join(str(c).rjust(w) for c, w in zip(row, widths)))
    print("ratio: planned / Megatron minimum (target 1.000); /(1/N), /(1/tp): parameters per "
          "rank over 1/N and 1/tp of all parameters")


if __name__ == "__main__":
    main()
