"""Pass throughput: the default pipeline (`pir optimize -O2`, verification after every pass
included) on generated GPT-style transformer graphs of 2, 8 and 32 layers, in one run.

Each layer is an ONNX-level pre-norm block: layer_norm, q/k/v projections (matmul + bias),
reshape and transpose to heads, q.kT scaled, softmax, .v, heads back, output projection,
residual add; layer_norm, MLP with gelu, residual add.  The models are built with
onnx.helper (bench/model_zoo.py) and imported, as a user's model would be.  Prints input ops
per second and time per layer, and how the time grows with depth (targets: >= 10,000 ops/s;
32 layers within 4.5x the time of 8), best of --repeat runs, in CPU time.

    .venv/bin/python bench/pass_throughput.py [--layers 2,8,32] [--hidden 128] [--repeat 3]
                                              [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import time

from model_zoo import transformer  # noqa: F401  (bench/models.py imports it from here)

from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.passes.manager import PassManager, count_ops
from pir.passes.pipeline import DEFAULT_PIPELINE, parse_pipeline

TARGET_OPS_PER_S = 10_000
TARGET_GROWTH = 4.5  # time(32 layers) / time(8 layers)


def run_pipeline(text: str, verify_each: bool = True) -> tuple[float, int]:
    """Parse a fresh copy of the module (untimed), run the default pipeline on it; return
    the CPU seconds the pipeline took (CPU time, not wall time: the machines this runs on
    are shared, and the pipeline is single-threaded) and the op count after it."""
    module = parse_module(text)
    passes = parse_pipeline(DEFAULT_PIPELINE)
    gc.collect()
    start = time.process_time()
    PassManager(passes, verify_each=verify_each).run(module)
    return time.process_time() - start, count_ops(module)


def pass_shares(text: str) -> str:
    pm = PassManager(parse_pipeline(DEFAULT_PIPELINE), timing=True)
    pm.run(parse_module(text))
    return pm.timing_table()


def profile(text: str, top: int = 25) -> str:
    module = parse_module(text)
    prof = cProfile.Profile()
    prof.enable()
    PassManager(parse_pipeline(DEFAULT_PIPELINE)).run(module)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="2,8,32", help="comma-separated layer counts")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true",
                    help="also print per-pass times and a cProfile of the deepest graph")
    args = ap.parse_args()

    depths = [int(n) for n in args.layers.split(",")]
    texts = {n: print_module(import_model(transformer(n, args.hidden, args.heads)))
             for n in depths}
    print(f"default pipeline: {DEFAULT_PIPELINE}")
    print(f"GPT-style blocks, hidden {args.hidden}, {args.heads} heads, best of {args.repeat}")
    rows = {}
    for n in depths:
        ops_in = count_ops(parse_module(texts[n]))
        runs = [run_pipeline(texts[n]) for _ in range(args.repeat)]
        bare = min(run_pipeline(texts[n], verify_each=False)[0] for _ in range(args.repeat))
        rows[n] = (ops_in, runs[0][1], min(t for t, _ in runs), bare)

    base = 8 if 8 in rows else depths[0]
    print(f"{'layers':>6}{'ops in':>8}{'ops out':>9}{'CPU ms':>9}{'ms/layer':>10}{'ops/s':>9}"
          f"{'vs target':>11}{f'time/{base} layers':>17}{'ops/s unverified':>18}")
    for n, (ops_in, ops_out, t, bare) in rows.items():
        rate = ops_in / t
        print(f"{n:>6}{ops_in:>8}{ops_out:>9}{t * 1e3:>9.1f}{t * 1e3 / n:>10.2f}{rate:>9,.0f}"
              f"{rate / TARGET_OPS_PER_S:>10.2f}x{t / rows[base][2]:>16.2f}x"
              f"{ops_in / bare:>18,.0f}")
    print(f"targets: >= {TARGET_OPS_PER_S:,} ops/s; time(32) / time(8) <= {TARGET_GROWTH}x"
          " (linear: 4.0x).  'unverified': the same without verification after each pass")
    if args.profile:
        deepest = max(depths)
        print(f"\nper pass, {deepest} layers:\n{pass_shares(texts[deepest])}")
        print(profile(texts[deepest]))


if __name__ == "__main__":
    main()
