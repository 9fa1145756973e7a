"""Build the kernel sources of a program: into memory, or into one shared library, in parallel.

The build of a program is TVM's TIR pipeline and LLVM's code generation, one kernel after the
other: ResNet-50's 31 distinct convolution kernels took 10 s, most of it LLVM.  Both release
the GIL, so the kernels are split into one part per CPU (``jobs``), each part is built and
written to an object file in its own thread, and the objects are linked into one shared
library, as ``export_library`` links its one object (a build system compiling translation
units side by side).  Parts are balanced by source length, a fair proxy for LLVM's time.
"""

from __future__ import annotations

import os
import pathlib
import tempfile
from concurrent.futures import ThreadPoolExecutor

import tvm
from tvm.support import cc

from pir.errors import PirError

__all__ = ["build_sources", "build_library", "jobs"]


def jobs() -> int:
    """Parts to build side by side: the CPUs this process may use (``PIR_BUILD_JOBS``
    overrides)."""
    env = os.environ.get("PIR_BUILD_JOBS")
    return max(1, int(env)) if env else len(os.sched_getaffinity(0))


def build_sources(sources: dict[str, str], target) -> tvm.runtime.Module | None:
    """One in-memory TVM module with every kernel of ``sources`` (symbol -> TIR source);
    None when there are none."""
    from pir.codegen.tvm.source_cache import made_func

    if not sources:
        return None  # no kernels: nothing to build, every op runs on the reference rules
    merged = tvm.IRModule({})
    for sym, src in sources.items():
        made = made_func(src, sym)  # codegen made it in this process: no need to parse
        if made is not None:
            merged[sym] = made
            continue
        try:
            mod = tvm.script.from_source(src)
        except Exception as e:  # noqa: BLE001 - TVM's parser raises many kinds
            raise PirError(f"kernel {sym}: cannot parse its TIR source: "
                           f"{str(e).strip().splitlines()[-1] if str(e).strip() else e}") from None
        funcs = list(mod.functions.items())
        if len(funcs) != 1 or funcs[0][0].name_hint != sym:
            raise PirError(f"kernel {sym}: the source must hold one function named {sym}")
        merged[sym] = funcs[0][1]
    # Without TVM's per-call argument checks: the runtime makes every argument from the
    # op's types, and pir.runtimes.tvm.signature checks each op against its kernel's
    # signature once (the checks were a quarter of the build time)
    with tvm.transform.PassContext(config={"tirx.disable_assert": True}):
        return tvm.tirx.build(merged, target=target)


def build_library(sources: dict[str, str], target, path: pathlib.Path) -> None:
    """Build every kernel of ``sources`` into the shared library ``path``, written under a
    temporary name and renamed into place, so that a concurrent run never loads half a
    file."""
    parts = _partition(sources, min(jobs(), len(sources)))
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pir-build-") as work:
        objects = [os.path.join(work, f"part{i}.o") for i in range(len(parts))]

        def build_part(i: int) -> None:
            build_sources(parts[i], target).write_to_file(objects[i])

        if len(parts) == 1:
            build_part(0)
        else:
            with ThreadPoolExecutor(len(parts)) as pool:
                list(pool.map(build_part, range(len(parts))))  # re-raises a part's error
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".so", dir=path.parent)
        os.close(fd)
        try:
            cc.create_shared(tmp, objects)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _partition(sources: dict[str, str], n: int) -> list[dict[str, str]]:
    """``n`` parts of about equal total source length: longest first, each into the part
    that is shortest so far."""
    parts: list[dict[str, str]] = [{} for _ in range(max(1, n))]
    size = [0] * len(parts)
    for sym, src in sorted(sources.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        i = size.index(min(size))
        parts[i][sym] = src
        size[i] += len(src)
    return [p for p in parts if p]
