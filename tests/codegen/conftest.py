"""Shared by the codegen tests: every test compiles into its own cache directory (never into
~/.cache/pir) and starts with no compiled program loaded in the process; ``streaming``
makes small row kernels count as streamed from memory."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    from pir.runtimes.tvm import executor

    d = tmp_path / "cache"
    monkeypatch.setenv("PIR_CACHE_DIR", str(d))
    monkeypatch.setattr(executor, "_LOADED", {})
    return d


@pytest.fixture
def streaming(monkeypatch):
    """Rows of 64 x 768 floats count as streamed from memory (as 2 x 32 MiB would)."""
    from pir.codegen.tvm import schedule

    monkeypatch.setattr(schedule, "STREAMING_BYTES", 64 * 768 * 4)
