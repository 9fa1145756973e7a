"""Every saved fuzz finding (tests/fuzz/regressions/<target>/*) runs through its target's
harness (pir.testing.fuzz.harness) and must end in nothing worse than a PirError: no other
exception type, no RecursionError or MemoryError, no round-trip mismatch, no more than
``TIMEOUT`` seconds of CPU time.

The inputs run in one child process (``python -m pir.testing.fuzz replay all``) with
RLIMIT_AS at 4 GiB, so a reproducer that allocates without bound fails its test instead of
taking the test run (or the machine) down with it, and one that kills the process fails
alone.  docs/fuzzing.md says how a finding becomes a file here.
"""

from __future__ import annotations

import functools
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
REGRESSIONS = ROOT / "tests" / "fuzz" / "regressions"
TARGETS = ("pir", "onnx", "inputs")
TIMEOUT = 10.0  # CPU seconds per input, as when fuzzing
MEMORY_MB = 4096

CASES = [(t, p) for t in TARGETS for p in sorted((REGRESSIONS / t).glob("*"))
         if p.is_file() and not p.name.startswith(".")]


@functools.lru_cache(maxsize=None)
def replay() -> dict[str, dict]:
    """The outcome of every regression file, by path, from one child process (per test
    worker) for all targets; a file during which the child died gets a result that says
    so, and the files after it run in a new child."""
    files = [str(p) for _, p in CASES]
    results: dict[str, dict] = {}
    while files:
        cmd = [sys.executable, "-m", "pir.testing.fuzz", "replay", "all", "--json",
               "--timeout", str(TIMEOUT), "--memory-mb", str(MEMORY_MB), *files]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                               timeout=60 + len(files) * (TIMEOUT * 3 + 5))
            out, err, code = p.stdout, p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err, code = "the replay process ran past its time limit", "timeout"
        started, any_started = None, False
        for line in out.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "start" in rec:
                started, any_started = rec["start"], True
            elif "file" in rec:
                results[rec["file"]] = rec
                started = None
        missing = [f for f in files if f not in results]
        died = {"kind": "died", "type": f"process exit {code}", "location": "",
                "message": err.strip()[-2000:], "traceback": ""}
        if missing and not any_started:  # it failed before the first input: all of them
            results.update({f: died for f in missing})
        elif missing:
            results[started if started is not None else missing[0]] = died
        files = [f for f in files if f not in results]
    return results


@pytest.mark.parametrize("target,path", CASES,
                         ids=[f"{t}/{p.name}" for t, p in CASES])
def test_regression(target, path):
    r = replay()[str(path)]
    if r["kind"] in ("ok", "rejected"):
        return
    pytest.fail(f"{target}: {path.name}: {r['type']} at {r.get('location')} "
                f"[{r.get('phase', '')}]: {r.get('message')}\n{r.get('traceback', '')}",
                pytrace=False)


def test_every_target_has_a_folder():
    for t in TARGETS:
        assert (REGRESSIONS / t).is_dir(), f"tests/fuzz/regressions/{t} is missing"
