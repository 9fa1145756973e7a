"""The GPU, through cupy: found once, or a clear error that says why not.

cupy is the ``cuda`` extra (``pip install 'pir[cuda]'``: cupy-cuda13x with the CUDA 13
libraries from PyPI).  Nothing here is imported by a program that does not use the cuda
runtime, so pir works without cupy and without a GPU.
"""

from __future__ import annotations

import functools

from pir.errors import PirError

__all__ = ["require_gpu", "arch_of_device"]


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[object | None, str | None]:
    try:
        import cupy
    except ImportError as e:
        return None, (f"cupy cannot be imported ({e}); install the cuda extra: "
                      "pip install 'pir[cuda]'")
    except Exception as e:  # noqa: BLE001 - a broken CUDA install raises anything on import
        return None, f"cupy failed to load: {str(e).strip().splitlines()[0]}"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - cudaErrorNoDevice, an old driver ...
        return None, f"no usable CUDA device: {str(e).strip().splitlines()[0]}"
    if n < 1:
        return None, "no CUDA device is visible"
    return cupy, None


def require_gpu():
    """cupy, with a CUDA device present; else PirError naming what is missing."""
    cp, why = _probe()
    if cp is None:
        raise PirError(f"the cuda runtime needs a CUDA GPU: {why}")
    return cp


def arch_of_device() -> str:
    """``sm_90`` for an H100 / H200: what NVRTC compiles for."""
    cp = require_gpu()
    return f"sm_{cp.cuda.Device().compute_capability}"  # cupy spells it "90"
