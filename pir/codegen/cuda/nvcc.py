"""Compile generated CUDA C with nvcc, without a GPU: ``nvcc -arch=sm_XX --ptx``.

Used by the tests (every kernel of every test model, both generators) and by
``bench/gpu.py --dry-run``.  Kernels are batched into few translation units, so nvcc runs a
few times per program rather than once per kernel: pir's own kernels share one unit (their
headers are include-guarded); TVM's each start with the same long prelude, so they are
grouped by prelude and the prelude is written once per unit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

__all__ = ["have_nvcc", "translation_units", "compile_units", "NvccResult"]

_MARK = 'extern "C"'


def have_nvcc() -> bool:
    return shutil.which("nvcc") is not None


def translation_units(sources: dict[str, str]) -> list[str]:
    """The sources (symbol -> CUDA C) as few translation units."""
    preludes: dict[str, list[str]] = {}
    for sym in sorted(sources):
        src = sources[sym]
        at = src.find(_MARK)
        prelude, body = (src[:at], src[at:]) if at >= 0 else ("", src)
        if prelude.lstrip().startswith("// pir kernel"):  # pir's: a comment and includes
            body, prelude = src, ""
        preludes.setdefault(prelude, []).append(body)
    includes = sorted({line for p in preludes if not p for body in preludes[p]
                       for line in body.splitlines() if line.startswith("#include")})
    units = []
    for prelude, bodies in preludes.items():
        head = prelude or "\n".join(includes) + "\n"
        units.append(head + "\n".join(bodies))
    return units


@dataclass
class NvccResult:
    unit: int
    arch: str
    ok: bool
    log: str


def compile_units(units: list[str], archs=("sm_90",), jobs: int = 2,
                  extra: tuple[str, ...] = ()) -> list[NvccResult]:
    """``nvcc -arch=A --ptx`` each unit for each arch, ``jobs`` at a time."""
    tmp = tempfile.mkdtemp(prefix="pir-nvcc-")
    paths = []
    for i, text in enumerate(units):
        path = os.path.join(tmp, f"unit{i}.cu")
        with open(path, "w") as f:
            f.write(text)
        paths.append(path)

    def one(job):
        i, arch = job
        out = os.path.join(tmp, f"unit{i}.{arch}.ptx")
        cmd = ["nvcc", f"-arch={arch}", "--ptx", "-std=c++17", "-diag-suppress", "177,550",
               *extra, paths[i], "-o", out]
        res = subprocess.run(cmd, capture_output=True, text=True)
        return NvccResult(i, arch, res.returncode == 0, (res.stderr or res.stdout)[-4000:])

    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return list(pool.map(one, [(i, a) for i in range(len(units)) for a in archs]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
