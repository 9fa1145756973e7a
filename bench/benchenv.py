"""What the benchmarks share: the thread settings every library must see before it is
imported, and the best-of-N wall time.  Imports nothing heavy, so a benchmark can call
:func:`use_threads` before numpy, TVM or ONNX Runtime are loaded."""

from __future__ import annotations

import os
import time

__all__ = ["use_threads", "best_time", "best_times", "paired_ratio", "profile_split"]


def use_threads(threads: int) -> None:
    """TVM's pool size and the BLAS / OpenMP thread counts, and OpenBLAS's AVX-512 kernels on
    the AMD CPUs that have them, as the pir command sets them (pir.cpu_env).  Call it before
    anything imports numpy or TVM."""
    os.environ["TVM_NUM_THREADS"] = str(threads)
    from pir.cpu_env import choose_openblas_kernels

    choose_openblas_kernels()
    # numpy's BLAS on one thread, as `pir run` runs it (pir.cpu_env.one_blas_thread): with
    # more, its spinning threads and TVM's starve each other
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


def best_time(fn, repeat: int) -> float:
    """The fastest of ``repeat`` calls of ``fn``, in seconds, after one call to warm up
    (page faults, pools, caches)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


#: Calls of a function in a row per round: the best of them is the round's time.
CALLS_PER_ROUND = 3
#: Seconds a function is called untimed when its turn comes, before its timed calls: what
#: the function before it left behind (ONNX Runtime's pool threads spin on after a run and
#: TVM's workers then wait for the cores; a cache the other library filled) falls on those
#: calls.  On two cores a 1.1 ms 2-thread pir run took 15-29 ms for its first two calls
#: after an ORT run, and 1.2-6 ms for the third (bench/real_shapes.py's neck at 40x40):
#: three calls alone were not enough.  Each library is timed in its own steady state, as a
#: program that runs only one of them sees it.
SETTLE_S = 0.03


def best_times(fns: dict, repeat: int, rounds: list | None = None) -> dict:
    """The fastest of ``repeat`` rounds of each of ``fns`` (name -> callable), in seconds.
    Each round runs every function for SETTLE_S untimed, then CALLS_PER_ROUND times in a row
    and keeps its best, in an order that reverses from one round to the next: on a shared, noisy machine a load that
    comes and goes then falls on all of them alike, and none always runs right after the
    same neighbour (which measured up to 0.5 ms of bias on ResNet-50 when one order was
    kept).  ``rounds``, if given, receives each round's times (name -> seconds), for
    :func:`paired_ratio`."""
    for fn in fns.values():
        fn()  # warm up: page faults, pools, caches
    best = dict.fromkeys(fns, float("inf"))
    names = list(fns)
    for r in range(repeat):
        times = {}
        for name in (names if r % 2 == 0 else names[::-1]):
            settle = time.perf_counter() + SETTLE_S
            fns[name]()
            while time.perf_counter() < settle:
                fns[name]()
            calls = []
            for _ in range(CALLS_PER_ROUND):
                t = time.perf_counter()
                fns[name]()
                calls.append(time.perf_counter() - t)
            times[name] = min(calls)
            best[name] = min(best[name], times[name])
        if rounds is not None:
            rounds.append(times)
    return best


def paired_ratio(rounds: list, a: str, b: str) -> float:
    """The median over rounds of ``a``'s time over ``b``'s in the same round.  The two ran
    back to back, so a slow spell of the machine divides out; the ratio of two bests can
    pair a quiet moment of one with a busy one of the other (on this machine the two
    differed by up to 10% on softmax)."""
    ratios = sorted(t[a] / t[b] for t in rounds)
    mid = len(ratios) // 2
    return ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2


def profile_split(interp, module, run) -> tuple[float, dict]:
    """One more ``run()`` with the interpreter's profile on: (its seconds, seconds per op
    kind), kernels by their group kind (``kernel.tvm[conv]``), every other op by name."""
    from collections import defaultdict

    from pir.ir.dialects.kernel import TvmKernelOp

    run()  # (after the other library's run: see CALLS_PER_ROUND)
    interp.profile = prof = {}
    t = time.perf_counter()
    run()
    total = time.perf_counter() - t
    interp.profile = None
    kinds = {op.symbol: op.kind for op in module.walk() if isinstance(op, TvmKernelOp)}
    split: dict = defaultdict(float)
    for (what, key), (_, dt) in prof.items():
        split[f"kernel.tvm[{kinds.get(key)}]" if what == "kernel" else key] += dt
    return total, split
