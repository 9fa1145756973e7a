"""Build the kernel sources of a program: into memory, or into one shared library, in parallel.

The build of a program is TVM's TIR pipeline and LLVM's code generation, one kernel after the
other: ResNet-50's 31 distinct convolution kernels took 10 s, most of it LLVM.  Both release
the GIL, so the kernels are split into one part per CPU (``jobs``), each part is built and
written to an object file in its own thread, and the objects are linked into one shared
library, as ``export_library`` links its one object (a build system compiling translation
units side by side).  Parts are balanced by source length, a fair proxy for LLVM's time.
Kernels whose source asks LLVM to keep their loops (``pir.no_unroll``) are one part of their
own, built after the others with LLVM's unroll thresholds at 0; those that ask for
non-temporal stores (``pir.nontemporal``) are one part of their own too, its LLVM IR
rewritten before code generation (``nontemporal.py``).
"""

from __future__ import annotations

import os
import pathlib
import tempfile
from concurrent.futures import ThreadPoolExecutor

import tvm
from tvm.support import cc

from pir.errors import PirError
from pir.runtimes.tvm.nontemporal import with_nontemporal_stores

__all__ = ["build_sources", "build_library", "build_module", "flags_of", "jobs"]


def jobs() -> int:
    """Parts to build side by side: the CPUs this process may use (``PIR_BUILD_JOBS``
    overrides)."""
    env = os.environ.get("PIR_BUILD_JOBS")
    return max(1, int(env)) if env else len(os.sched_getaffinity(0))


#: LLVM's unroll thresholds at 0, for the kernels whose source asks for its loops as written
#: (``pir.codegen.tvm.schedule.NO_UNROLL``).  TVM has no per-loop unroll hint for LLVM, and
#: sets a target's LLVM options process-wide while it builds (and puts them back after), so
#: these kernels are built on their own, with no other build running.
_NO_UNROLL_OPTIONS = ["-unroll-threshold-aggressive:uint=0", "-unroll-threshold-default:uint=0"]


def wants_loops(source: str) -> bool:
    """Whether a kernel's printed source carries the NO_UNROLL attribute (TVMScript prints a
    function's attributes as one ``T.func_attr`` dict)."""
    from pir.codegen.tvm.schedule import NO_UNROLL

    return f'"{NO_UNROLL}": True' in source


def wants_nontemporal(source: str) -> bool:
    """Whether a kernel's printed source carries the NONTEMPORAL attribute."""
    from pir.codegen.tvm.schedule import NONTEMPORAL

    return f'"{NONTEMPORAL}": True' in source


#: How a group of kernels is built: (loops kept, non-temporal stores).
Flags = tuple[bool, bool]
_PLAIN: Flags = (False, False)


def _no_unroll(target) -> tvm.target.Target:
    config = dict(target.export())
    config["cl-opt"] = [*config.get("cl-opt", []), *_NO_UNROLL_OPTIONS]
    return tvm.target.Target(config)


def _groups(sources: dict[str, str]) -> dict[Flags, dict[str, str]]:
    """The kernels of ``sources`` by how they are built, plain ones first."""
    groups: dict[Flags, dict[str, str]] = {}
    for sym, src in sources.items():
        groups.setdefault((wants_loops(src), wants_nontemporal(src)), {})[sym] = src
    return dict(sorted(groups.items()))


def build_sources(sources: dict[str, str], target,
                  check_bounds: bool = False) -> tvm.runtime.Module | None:
    """One in-memory TVM module with every kernel of ``sources`` (symbol -> TIR source);
    None when there are none.  Kernels built another way (loops kept, non-temporal stores)
    are in modules of their own, which the first imports (look functions up with
    ``query_imports``).  ``check_bounds``: with bounds assertions (pir.codegen.tvm.bounds)."""
    modules = [_build(group, target, flags, check_bounds)
               for flags, group in _groups(sources).items()]
    if not modules:
        return None  # no kernels: nothing to build, every op runs on the reference rules
    for other in modules[1:]:
        modules[0].import_module(other)
    return modules[0]


def _build(sources: dict[str, str], target, flags: Flags = _PLAIN,
           check_bounds: bool = False) -> tvm.runtime.Module:
    from pir.codegen.tvm.gemm_schedule import ROWS1
    from pir.codegen.tvm.source_cache import made_funcs

    merged = tvm.IRModule({})
    for sym, src in sources.items():
        made = made_funcs(src, sym)  # codegen made it in this process: no need to parse
        if made is not None:
            for name, func in made.items():
                merged[name] = func
            continue
        # (a source that pir did not generate reaches this point only with --trust-kernels:
        # pir.codegen.provenance)
        try:
            mod = tvm.script.from_source(src)
        except Exception as e:  # noqa: BLE001 - TVM's parser raises many kinds
            raise PirError(f"kernel {sym}: cannot parse its TIR source: "
                           f"{_parse_error(e)}") from None
        funcs = {gv.name_hint: f for gv, f in mod.functions.items()}
        if sym not in funcs or not set(funcs) <= {sym, sym + ROWS1}:
            raise PirError(f"kernel {sym}: the source must hold one function named {sym} "
                           f"(and maybe its one-row variant {sym}{ROWS1})")
        for name, func in funcs.items():
            merged[name] = func
    return build_module(merged, target, flags, check_bounds)


def flags_of(mod: tvm.IRModule) -> Flags:
    """How the scheduled functions of ``mod`` ask to be built (any of them)."""
    from pir.codegen.tvm.schedule import NO_UNROLL, NONTEMPORAL

    funcs = [f for _, f in mod.functions.items() if f.attrs is not None]
    return (any(bool(f.attrs.get(NO_UNROLL, False)) for f in funcs),
            any(bool(f.attrs.get(NONTEMPORAL, False)) for f in funcs))


def _for_cpu(mod: tvm.IRModule, target) -> tvm.IRModule:
    """``mod`` with its VNNI instructions spelled out when ``target``'s CPU lacks them (a
    kernel scheduled for another CPU: pir.codegen.tvm.dot4)."""
    from pir.codegen.tvm.dot4 import USES_VNNI, without_vnni
    from pir.codegen.tvm.target import has_vnni

    funcs = dict(mod.functions.items())
    if not any(f.attrs is not None and f.attrs.get(USES_VNNI, False) for f in funcs.values()):
        return mod
    if has_vnni(tvm.target.Target(target) if isinstance(target, (str, dict)) else target):
        return mod
    return tvm.IRModule({gv: without_vnni(f) if f.attrs is not None
                         and f.attrs.get(USES_VNNI, False) else f for gv, f in funcs.items()})


def build_module(mod: tvm.IRModule, target, flags: Flags = _PLAIN,
                 check_bounds: bool = False) -> tvm.runtime.Module:
    """Build the scheduled TIR ``mod`` for ``target`` the way ``flags`` asks.  One that keeps
    its loops must not overlap another build (see _NO_UNROLL_OPTIONS).  ``check_bounds``:
    a debug build that asserts every access in bounds (pir.codegen.tvm.bounds)."""
    keep_loops, nontemporal = flags
    mod = _for_cpu(mod, target)
    if check_bounds:
        from pir.codegen.tvm.bounds import with_bound_checks

        return tvm.tirx.build(with_bound_checks(mod), target=target)  # asserts kept
    # Without TVM's per-call argument checks: the runtime makes every argument from the
    # op's types, and pir.runtimes.tvm.signature checks each op against its kernel's
    # signature once (the checks were a quarter of the build time)
    with tvm.transform.PassContext(config={"tirx.disable_assert": True}):
        lib = tvm.tirx.build(mod, target=_no_unroll(target) if keep_loops else target)
    return with_nontemporal_stores(lib) if nontemporal else lib


def build_library(sources: dict[str, str], target, path: pathlib.Path,
                  check_bounds: bool = False) -> None:
    """Build every kernel of ``sources`` into the shared library ``path``, written under a
    temporary name and renamed into place, so that a concurrent run never loads half a
    file."""
    groups = _groups(sources)
    plain = groups.pop(_PLAIN, {})
    parts = [(p, _PLAIN) for p in _partition(plain, min(jobs(), len(plain)))] if plain else []
    parts += [(group, flags) for flags, group in groups.items()]
    # those that keep their loops last, one at a time: their LLVM options are process-wide
    # while they build
    parts.sort(key=lambda part: part[1][0])
    side_by_side = sum(1 for _, (keep_loops, _) in parts if not keep_loops)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pir-build-") as work:
        objects = [os.path.join(work, f"part{i}.o") for i in range(len(parts))]

        def build_part(i: int) -> None:
            _build(parts[i][0], target, parts[i][1], check_bounds).write_to_file(objects[i])

        if side_by_side > 1:
            with ThreadPoolExecutor(side_by_side) as pool:
                list(pool.map(build_part, range(side_by_side)))  # re-raises a part's error
        elif side_by_side == 1:
            build_part(0)
        for i in range(side_by_side, len(parts)):
            build_part(i)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".so", dir=path.parent)
        os.close(fd)
        try:
            cc.create_shared(tmp, objects)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _parse_error(e: Exception) -> str:
    """TVM's parser error as one line: its message and where in the source, not the row of
    carets it ends with."""
    lines = [line.strip() for line in str(e).strip().splitlines()]
    lines = [line for line in lines if line and set(line) - set("^~ ")]
    where = next((line for line in lines if line.startswith("-->")), "")
    message = next((line for line in lines if line.startswith("error:")), lines[-1] if lines
                   else type(e).__name__)
    return f"{message.removeprefix('error:').strip()}" + (f" (at {where[3:].strip()})"
                                                          if where else "")


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
