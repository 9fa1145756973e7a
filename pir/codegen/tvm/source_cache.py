"""A content-addressed cache of generated kernel sources (scheduled TIR script).

Lowering a group to TE, scheduling it and printing the TIR costs milliseconds to tens of
milliseconds a group (TVM's ``compute_inline`` dominates), and a program is code-generated again
every time its pipeline reruns.  The source only depends on what the group computes
(:func:`pir.codegen.tvm.codegen.group_key`), the kernel's symbol and the code generator
itself, so it is kept under the cache root of the compiled modules
(``$PIR_CACHE_DIR`` or ``~/.cache/pir``, private to the user: see :mod:`pir.cache`):
``tir/<sha256 of version, symbol and group key>.py``.

The version covers every source file of this package (the lowering rules and the schedule)
and TVM's version, so editing either, or upgrading TVM, never serves a stale kernel.  An entry
starts with a line holding the sha256 of the rest; an entry that does not match (cut short,
edited, unreadable) is ignored and rewritten.  Entries are written atomically (temporary file,
then rename).  The cache is an optimisation: a cache directory that cannot be written only
costs the time it would have saved.

No TVM import happens here: a fully cached codegen does not need TVM.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import tempfile
from typing import Callable

from pir.cache import private_dir

__all__ = ["cached_source", "made_func", "made_funcs", "source_dir", "entry_path", "version",
           "stats"]

#: Bump to drop every entry written in an older layout.
FORMAT = "pir-tir-1"

#: Counters, for tests and reports: sources read from the cache, and made (then written).
stats = {"hits": 0, "misses": 0}

_HEADER = "# pir-tir sha256="


def source_dir() -> pathlib.Path:
    """``<cache root>/tir``: next to ``<cache root>/tvm`` of the compiled modules, private to
    the user (pir.cache: a source read from here is built and run unchecked)."""
    return private_dir("tir")


@functools.lru_cache(maxsize=1)
def version() -> str:
    """What a source depends on besides the group: this package's code (and the parameters
    of long sums it reads, pir/codegen/sums.py) and TVM's version."""
    h = hashlib.sha256(FORMAT.encode())
    here = pathlib.Path(__file__).parent
    for path in [*sorted(here.glob("*.py")), here.parent / "sums.py"]:
        h.update(b"\0" + path.name.encode() + b"\0" + path.read_bytes())
    h.update(b"\0tvm " + _tvm_version().encode())
    return h.hexdigest()


def _tvm_version() -> str:
    from importlib import metadata

    for dist in ("apache-tvm", "tvm"):
        try:
            return f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    import tvm  # a source build without package metadata

    return f"tvm {tvm.__version__}"


def entry_path(key: str, symbol: str) -> pathlib.Path:
    """Where the source of the group with ``group_key`` ``key`` named ``symbol`` is kept."""
    h = hashlib.sha256(f"{version()}\0{symbol}\0{key}".encode()).hexdigest()
    return source_dir() / f"{h}.py"


def _read(path: pathlib.Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, sep, body = data.partition(b"\n")
    if not sep or head.decode("ascii", "replace") != _HEADER + hashlib.sha256(body).hexdigest():
        return None  # cut short or altered: not to be trusted
    return body.decode("utf-8")


def _write(path: pathlib.Path, source: str) -> None:
    body = source.encode("utf-8")
    data = (_HEADER + hashlib.sha256(body).hexdigest() + "\n").encode("ascii") + body
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem[:16]}.", suffix=".tmp", dir=path.parent)
    except OSError:
        return  # a read-only or missing cache: codegen works, only slower
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        if os.path.exists(tmp):
            os.unlink(tmp)


def cached_source(key: str, symbol: str, make: Callable[[], object]) -> str:
    """The source of a group: from the cache, else made by ``make()``, which returns the
    scheduled IRModule holding the PrimFunc ``symbol`` (and maybe its variants, named
    ``symbol`` and a suffix); its script is kept on disk, and the functions themselves in
    this process (see :func:`made_funcs`).  ``make`` raising (a group that
    cannot be lowered) caches nothing."""
    path = entry_path(key, symbol)
    source = _read(path)
    if source is not None:
        stats["hits"] += 1
        return source
    mod = make()
    source = mod.script()
    stats["misses"] += 1
    _remember(source, symbol, {gv.name_hint: f for gv, f in mod.functions.items()})
    _write(path, source)
    return source


# The PrimFuncs codegen made in this process, by their printed source: building a program
# right after its codegen (one process: a library user, bench/compile.py) then skips TVM's
# script parser, which costs more than LLVM itself (tens of ms per kernel).  A printed source
# parses back to a structurally equal function (tests/codegen/test_source_cache.py checks
# it), so either one builds the same kernel.  Bounded: oldest first out.
_MADE: dict[str, tuple[str, object]] = {}
_MADE_MAX = 1024


def _remember(source: str, symbol: str, funcs: dict) -> None:
    _MADE.pop(source, None)
    _MADE[source] = (symbol, funcs)
    while len(_MADE) > _MADE_MAX:
        del _MADE[next(iter(_MADE))]


def made_funcs(source: str, symbol: str) -> dict | None:
    """The PrimFuncs, by name, of the kernel ``symbol`` that printed as ``source`` in this
    process, or None (then the caller parses the source)."""
    hit = _MADE.get(source)
    return hit[1] if hit is not None and hit[0] == symbol else None


def made_func(source: str, symbol: str):
    """The PrimFunc named ``symbol`` that printed as ``source`` in this process, or None."""
    funcs = made_funcs(source, symbol)
    return None if funcs is None else funcs.get(symbol)
