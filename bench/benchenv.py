"""What the benchmarks share: the thread settings every library must see before it is
imported, and the best-of-N wall time.  Imports nothing heavy, so a benchmark can call
:func:`use_threads` before numpy, TVM or ONNX Runtime are loaded."""

from __future__ import annotations

import os
import time

__all__ = ["use_threads", "best_time"]


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
