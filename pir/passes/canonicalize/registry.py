"""Where canonicalization patterns are collected: every ``patterns_*.py`` module next to
this file defines ``PATTERNS``, a list of rewrite patterns (mostly declarative, see
:mod:`pir.passes.drr`) with unique kebab-case names."""

from __future__ import annotations

import importlib
import pkgutil

from pir.passes.rewriter import RewritePattern

__all__ = ["all_patterns"]


def all_patterns() -> list[RewritePattern]:
    from pir.passes import canonicalize

    patterns: list[RewritePattern] = []
    for info in sorted(pkgutil.iter_modules(canonicalize.__path__), key=lambda i: i.name):
        if info.name.startswith("patterns_"):
            mod = importlib.import_module(f"pir.passes.canonicalize.{info.name}")
            patterns.extend(mod.PATTERNS)
    names = [p.name for p in patterns]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"canonicalization patterns named twice: {sorted(dup)}")
    return patterns
