"""Delta debugging: the smallest input (found greedily) that still gives the same finding.

"The same" means the same exception type raised at the same place in pir
(:meth:`Outcome.key`), which is stricter than libFuzzer's ``-minimize_crash`` (any crash):
a minimised reproducer cannot drift into a different bug.  Text is reduced by lines first,
then by bytes; each pass is Zeller's ddmin over the complements of ever smaller chunks.
"""

from __future__ import annotations

import time
from typing import Callable

__all__ = ["ddmin", "minimize"]


def ddmin(units: list[bytes], test: Callable[[list[bytes]], bool], deadline: float) -> list[bytes]:
    """Remove chunks of ``units`` while ``test`` still holds, until no single unit can go
    (1-minimal) or ``deadline`` (time.monotonic) passes."""
    n = 2
    while len(units) >= 2 and time.monotonic() < deadline:
        chunk = -(-len(units) // n)
        reduced = False
        for start in range(0, len(units), chunk):
            if time.monotonic() >= deadline:
                return units
            candidate = units[:start] + units[start + chunk:]
            if candidate and test(candidate):
                units = candidate
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if n >= len(units):
                break
            n = min(n * 2, len(units))
    return units


def minimize(data: bytes, still_fails: Callable[[bytes], bool], seconds: float = 60.0) -> bytes:
    """A smaller ``data`` for which ``still_fails`` holds (``data`` itself if nothing can
    go, or ``still_fails(data)`` is false)."""
    deadline = time.monotonic() + seconds
    cache: dict[bytes, bool] = {}

    def check(candidate: bytes) -> bool:
        hit = cache.get(candidate)
        if hit is None:
            hit = cache[candidate] = still_fails(candidate)
        return hit

    if not check(data):
        return data
    if data.count(b"\n") > 1:
        lines = data.splitlines(keepends=True)
        data = b"".join(ddmin(lines, lambda u: check(b"".join(u)), deadline))
    units = [data[i:i + 1] for i in range(len(data))]
    data = b"".join(ddmin(units, lambda u: check(b"".join(u)), deadline))
    # a last pass over lines again: byte removal may have made whole lines removable
    if data.count(b"\n") > 1 and time.monotonic() < deadline:
        lines = data.splitlines(keepends=True)
        data = b"".join(ddmin(lines, lambda u: check(b"".join(u)), deadline))
    return data
