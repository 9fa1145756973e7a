"""Runs the FileCheck-style IR tests: each ``tests/**/filecheck/*.pir`` file has ``// RUN:``
lines (``%s`` is the file; ``not CMD`` expects CMD to fail) and ``// CHECK`` lines."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "tests").glob("**/filecheck/*.pir"))
BIN = pathlib.Path(sys.executable).parent


def run_lines(path: pathlib.Path) -> list[str]:
    lines, current = [], ""
    for line in path.read_text().splitlines():
        if "// RUN:" in line:
            part = line.split("// RUN:", 1)[1].strip()
            current += part
            if current.endswith("\\"):
                current = current[:-1] + " "
                continue
            lines.append(current)
            current = ""
    return lines


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT / "tests")) for p in FILES])
def test_filecheck(path, tmp_path):
    runs = run_lines(path)
    assert runs, f"{path} has no RUN line"
    # an empty kernel cache: a cached kernel source keeps the value names of the group that
    # made it (the cache key is what the group computes), which need not be this file's
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", NO_COLOR="1",
               PIR_CACHE_DIR=str(tmp_path / "cache"))
    assert shutil.which("filecheck", path=env["PATH"]), "filecheck is not installed"
    prelude = 'set -o pipefail; not() { if "$@"; then return 1; else return 0; fi; }; '
    for run in runs:
        cmd = run.replace("%s", f"'{path}'")
        proc = subprocess.run(["bash", "-c", prelude + cmd], capture_output=True, text=True,
                              env=env, cwd=path.parent)
        assert proc.returncode == 0, f"RUN: {run}\n{proc.stdout}\n{proc.stderr}"
