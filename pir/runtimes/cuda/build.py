"""Compile kernel.cuda sources with NVRTC (through cupy), cached by content.

Each distinct source is compiled once for the device's architecture to a cubin under the
cache root of the other runtimes (``$PIR_CACHE_DIR`` or ``~/.cache/pir``):
``cuda/<sha256 of the arch, the NVRTC version, the options and the source>.cubin``; a later
run loads it.  NVRTC needs the toolkit's headers for ``cuda_fp16.h`` / ``cuda_bf16.h`` (and
TVM's kernels for ``cuda/std/...``): the include directories of the CUDA toolkit cupy found,
and those of the ``nvidia-*`` PyPI packages, are passed when they exist.  Without NVRTC,
``nvcc -cubin`` on PATH does the same.
"""

from __future__ import annotations

import glob
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from pir.cache import private_dir, read_verified, write_verified
from pir.errors import PirError

__all__ = ["cache_dir", "compile_cubin", "include_dirs", "stats"]

stats = {"compiled": 0, "cache_hits": 0}
OPTIONS = ("-std=c++17",)  # no fast math: results must match the reference runtime


def cache_dir() -> pathlib.Path:
    """``<cache root>/cuda``, private to the user (pir.cache)."""
    return private_dir("cuda")


def include_dirs(cp=None) -> list[str]:
    """Where cuda_fp16.h and friends are: the toolkit cupy uses, then the PyPI packages."""
    found = []
    if cp is not None:
        try:
            root = cp.cuda.get_cuda_path()
            if root:
                found += [os.path.join(root, "include"), os.path.join(root, "include", "cccl")]
        except Exception:  # noqa: BLE001 - no toolkit: the PyPI headers may do
            pass
    for site in sys.path:
        found += glob.glob(os.path.join(site, "nvidia", "*", "include"))
        found += glob.glob(os.path.join(site, "nvidia", "cu*", "include", "cccl"))
    if cp is not None:  # the CCCL headers cupy ships for its own kernels (cuda/std/...)
        root = os.path.dirname(cp.__file__)
        found += glob.glob(os.path.join(root, "_core", "include", "cupy", "_cccl", "*",
                                        "include"))
    return [d for d in dict.fromkeys(found) if os.path.isdir(d)]


def _nvrtc_version(cp) -> str:
    try:
        return ".".join(map(str, cp.cuda.nvrtc.getVersion()))
    except Exception:  # noqa: BLE001
        return "?"


def compile_cubin(cp, source: str, name: str, arch: str) -> bytes:
    """The cubin of ``source`` for ``arch`` (``sm_90``), from the cache or compiled."""
    incs = include_dirs(cp)
    opts = OPTIONS + tuple(f"-I{d}" for d in incs)
    key = hashlib.sha256("\0".join((arch, _nvrtc_version(cp), *OPTIONS, source)).encode())
    path = cache_dir() / f"{key.hexdigest()}.cubin"
    if read_verified(path):  # a cubin cut short or altered is compiled again
        stats["cache_hits"] += 1
        return path.read_bytes()
    try:
        binary = _nvrtc(source, name, arch, opts)
    except _NoNvrtc:
        binary = _nvcc(source, arch, incs)
    stats["compiled"] += 1
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(binary)
        os.replace(tmp, path)
        write_verified(path)
    except OSError:
        pass  # a read-only cache only costs the compile next time
    return binary


class _NoNvrtc(Exception):
    pass


def _nvrtc(source: str, name: str, arch: str, opts) -> bytes:
    try:
        from cupy_backends.cuda.libs import nvrtc
    except ImportError as e:
        raise _NoNvrtc(str(e)) from None
    cubin = hasattr(nvrtc, "getCUBIN")  # else PTX, which the driver compiles on load
    target = arch if cubin else arch.replace("sm_", "compute_")
    prog = nvrtc.createProgram(source, f"{name}.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, [*opts, f"-arch={target}"])
        except Exception:  # noqa: BLE001 - NVRTCError: the log says why
            log = nvrtc.getProgramLog(prog)
            raise PirError(f"kernel {name}: NVRTC could not compile it:\n{log[-3000:]}") from None
        if cubin:
            return bytes(nvrtc.getCUBIN(prog))
        ptx = nvrtc.getPTX(prog)
        return (ptx.encode() if isinstance(ptx, str) else bytes(ptx)) + b"\0"
    finally:
        nvrtc.destroyProgram(prog)


def _nvcc(source: str, arch: str, incs) -> bytes:
    if shutil.which("nvcc") is None:
        raise PirError("neither NVRTC (cupy) nor nvcc is available to compile the kernels")
    with tempfile.TemporaryDirectory(prefix="pir-cubin-") as tmp:
        src, out = os.path.join(tmp, "k.cu"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(source)
        res = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-std=c++17",
                              *(f"-I{d}" for d in incs), src, "-o", out],
                             capture_output=True, text=True)
        if res.returncode:
            raise PirError(f"nvcc could not compile a kernel:\n{res.stderr[-3000:]}")
        with open(out, "rb") as f:
            return f.read()
