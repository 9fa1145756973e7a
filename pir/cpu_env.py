"""Process set-up that must happen before numpy is imported.

OpenBLAS (numpy's BLAS) picks its kernels from the CPU it detects.  The build numpy ships
does not know AMD Zen 4/5 and falls back to its AVX2 (Haswell) kernels, though these CPUs
run its AVX-512 (SkylakeX) kernels correctly and about 1.6x faster: a [128, 768] x
[768, 3072] float32 matmul took 4.97 ms with the detected kernels and 3.2 ms with SkylakeX
on this project's Zen 5 machine, and bench/autodiff.py's PINN went from 0.96 to 0.78 ms.
So, unless the user chose (``OPENBLAS_CORETYPE`` set), an AMD CPU with the AVX-512 subsets
those kernels use gets them.  Nothing changes on other CPUs.
"""

from __future__ import annotations

import os
import sys

__all__ = ["choose_openblas_kernels", "one_blas_thread"]

_SKYLAKEX_FLAGS = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"}


def choose_openblas_kernels() -> str | None:
    """Set ``OPENBLAS_CORETYPE=SkylakeX`` where it applies (see the module docstring); the
    value set, or None.  Too late once numpy is imported, so it does nothing then."""
    if "OPENBLAS_CORETYPE" in os.environ or "numpy" in sys.modules:
        return None
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read(1 << 16)
    except OSError:
        return None
    vendor = flags = ""
    for line in info.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "vendor_id" and not vendor:
            vendor = value.strip()
        elif key == "flags" and not flags:
            flags = value
        if vendor and flags:
            break
    if vendor != "AuthenticAMD" or not _SKYLAKEX_FLAGS <= set(flags.split()):
        return None
    os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    return "SkylakeX"


def one_blas_thread() -> bool:
    """Set ``OPENBLAS_NUM_THREADS=1`` for a run of compiled kernels, unless the user chose
    (``OPENBLAS_NUM_THREADS`` or ``OMP_NUM_THREADS`` set); whether it did.

    TVM's thread pool and OpenBLAS's both spin while they wait for work, and on the same
    cores they starve each other: a GPT-style model on 2 threads took 19 ms with one BLAS
    thread and 36-212 ms with two (the numpy products of a plan are attention's small
    batched ones; the large products run in TVM kernels).  Too late once numpy is
    imported, so it does nothing then."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ \
            or "OMP_NUM_THREADS" in os.environ:
        return False
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    return True
