"""Shared by the codegen tests: every test compiles into its own cache directory (never into
~/.cache/pir) and starts with no compiled program loaded in the process."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    from pir.runtimes.tvm import executor

    d = tmp_path / "cache"
    monkeypatch.setenv("PIR_CACHE_DIR", str(d))
    monkeypatch.setattr(executor, "_LOADED", {})
    return d
