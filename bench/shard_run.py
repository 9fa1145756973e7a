"""The run time of a sharded program on ranks against the single process, measured in one
run: the global-view program on one process (``pir run --repeat``, collectives are
identities, every op on whole tensors), its per-rank program on N threads of one process
(``pir run --ranks N --repeat``) and on N MPI processes (``mpiexec -n N pir run --dist mpi
--repeat``).  Each figure is the median latency the command prints; the ratios are single
process / ranks (above 1: the ranks are faster).

``bench/shard.py`` calls :func:`mpi_time` for its last column.  Alone, it shards the
GPT-2-style model of ``bench/model_zoo.py`` with the Megatron spec of ``samples/shard``:

    .venv/bin/python bench/shard_run.py [--layers 2] [--hidden 256] [--heads 8] [--seq 64]
                                        [--batch 8] [--meshes tp=2,tp=4,dp=2:tp=2]

The machine's cores bound what N processes can gain: with fewer cores than ranks, MPI runs
oversubscribed and measures the overhead more than the speed-up.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
BIN = os.path.dirname(sys.executable)
PIR = [sys.executable, "-c", "from pir.cli.main import main; main()"]
_LATENCY = re.compile(r"latency: median ([0-9.]+) ms")


def _latency(cmd: list[str], env=None) -> float:
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    m = _LATENCY.search(r.stderr)
    if r.returncode != 0 or m is None:
        raise RuntimeError(f"{' '.join(cmd[:6])} ... failed: {r.stderr.strip()[-800:]}")
    return float(m.group(1))


def _mpiexec() -> str | None:
    return shutil.which("mpiexec", path=BIN) or shutil.which("mpiexec")


def measure(mesh: str, program_text: str, repeat: int = 5) -> dict[str, float]:
    """Median ms of the program (global view or per-rank) on 1 process, N threads and N MPI
    processes (the last missing when mpiexec is)."""
    from pir.ir.dialects.dist import Mesh
    from pir.ir.parser import parse_module
    from pir.runtimes.inputs import random_inputs

    n = Mesh.parse(mesh).num_ranks
    module = parse_module(program_text)
    feeds = random_inputs(module.lookup("main"), seed=0)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = {}
    with tempfile.TemporaryDirectory() as d:
        prog, inputs = os.path.join(d, "s.pir"), os.path.join(d, "in.npz")
        with open(prog, "w") as f:
            f.write(program_text)
        np.savez(inputs, **feeds)
        run = ["run", prog, "--inputs", inputs, "--repeat", str(repeat)]
        single = "dist.per_rank" not in module.attributes  # the global view runs as it is
        if single:
            out["single"] = _latency(PIR + run, env)
        out["threads"] = _latency(PIR + run + ["--ranks", str(n)], env)
        mpiexec = _mpiexec()
        if mpiexec:
            flags = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
            out["mpi"] = _latency([mpiexec, *flags, "-n", str(n), *PIR, *run, "--dist", "mpi"],
                                  env)
        if single:  # once more after the others: the faster of the two (a shared machine)
            out["single"] = min(out["single"], _latency(PIR + run, env))
    return out


def mpi_time(mesh: str, program: str) -> str:
    """``bench/shard.py``'s last column: single process ms / MPI ms, with both times."""
    try:
        t = measure(mesh, program, repeat=3)
    except Exception as e:  # noqa: BLE001 - a benchmark row says what went wrong
        return f"failed ({str(e).splitlines()[0][:40]})"
    if "mpi" not in t:
        return "no mpiexec"
    return f"{t['single'] / t['mpi']:.2f}x ({t['single']:.0f}/{t['mpi']:.0f} ms)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--meshes", default="tp=2,tp=4,dp=2:tp=2")
    args = ap.parse_args()

    from model_zoo import transformer

    from pir.frontends.onnx.importer import import_model
    from pir.ir.printer import print_module
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline
    from pir.passes.shard.driver import shard_module

    base = import_model(transformer(args.layers, args.hidden, args.heads, seq=args.seq,
                                    batch=args.batch))
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(base)
    text = print_module(base)
    print(f"GPT-2-style model: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, "
          f"batch {args.batch}, sequence {args.seq}; {os.cpu_count()} CPUs; median of "
          f"{args.repeat} runs")
    head = ("mesh", "1 process ms", "N threads ms", "N MPI ms", "1 proc / threads",
            "1 proc / MPI")
    rows = []
    for mesh in args.meshes.split(","):
        mesh = mesh.replace(":", ",")
        from pir.ir.parser import parse_module

        m = parse_module(text)
        axes = [a.split("=")[0] for a in mesh.split(",")]
        shard_module(m, mesh, {"x": ["S(0)" if a == "dp" else "R" for a in axes]}, auto=True)
        t = measure(mesh, print_module(m), args.repeat)
        mpi = t.get("mpi")
        rows.append((mesh, f"{t['single']:.1f}", f"{t['threads']:.1f}",
                     f"{mpi:.1f}" if mpi else "-", f"{t['single'] / t['threads']:.2f}",
                     f"{t['single'] / mpi:.2f}" if mpi else "-"))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in (head, *rows):
        print("  ".join(str(c).rjust(w) for c, w in zip(row, widths)))


if __name__ == "__main__":
    main()
