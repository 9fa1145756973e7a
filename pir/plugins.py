"""Rule tables are filled by importing every module of a package; this does it once."""

from __future__ import annotations

import functools
import importlib
import pkgutil

__all__ = ["import_submodules"]


@functools.cache
def import_submodules(package: str, prefix: str = "") -> None:
    """Import each module of ``package`` whose name starts with ``prefix`` (once per
    process: later calls are a dictionary lookup, cheap enough for hot paths)."""
    pkg = importlib.import_module(package)
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith(prefix):
            importlib.import_module(f"{package}.{info.name}")
