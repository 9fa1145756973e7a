"""`pir run --profile` (time per kernel symbol / op kind) and `--threads N` on a compiled
program, and the interpreters' ``profile`` dict behind them."""

from __future__ import annotations

import os
import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("tvm")


from pir.codegen.tvm.build import set_threads  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.reference import Interpreter  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from helpers import cli  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


@pytest.fixture(autouse=True)
def threads():
    """Give back the thread count a test changed (the cache comes from conftest.py)."""
    yield
    set_threads(int(os.environ.get("TVM_NUM_THREADS") or len(os.sched_getaffinity(0))))


def _compiled_mlp():
    sys.path.insert(0, str(ROOT / "samples" / "mlp"))
    try:
        import make_model
    finally:
        sys.path.remove(str(ROOT / "samples" / "mlp"))
    module = import_model(make_model.build())
    PassManager(parse_pipeline(FUSE)).run(module)
    codegen_module(module, "llvm")
    return module


def _x(n=3):
    return np.random.default_rng(0).standard_normal((n, 784)).astype(np.float32)



pir = cli


def _table(err: str) -> dict[tuple[str, str], tuple[int, float, float]]:
    lines = err.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("profile:"))
    assert lines[start + 1].split() == ["kind", "name", "calls", "total", "ms", "share"]
    rows = {}
    for ln in lines[start + 2:]:
        if ln.startswith("outside kernels"):  # the summary line after the table
            continue
        kind, name, calls, ms, share = ln.split()
        rows[(kind, name)] = (int(calls), float(ms), float(share.rstrip("%")))
    return rows


def test_interpreter_profile_entries_add_up_to_the_run():
    module = _compiled_mlp()
    symbols = {op.symbol for op in module.walk() if isinstance(op, TvmKernelOp)}
    prof = {}
    TvmInterpreter(module, profile=prof).run(module.funcs[0], {"x": _x()})
    assert symbols and symbols <= {name for kind, name in prof if kind == "kernel"}
    assert all(calls >= 1 and sec >= 0 for calls, sec in prof.values())
    # the reference runtime runs the kernels' regions: one entry per op kind, none nested
    ref = {}
    Interpreter(module, profile=ref).run(module.funcs[0], {"x": _x()})
    assert ("op", "kernel.tvm") in ref and all(kind == "op" for kind, _ in ref)
    assert ("op", "func.call") not in ref
    # off by default: nothing is recorded
    assert TvmInterpreter(module).profile is None


def test_cli_profile_and_threads(tmp_path):
    module = _compiled_mlp()
    symbols = {op.symbol for op in module.walk() if isinstance(op, TvmKernelOp)}
    (tmp_path / "k.pir").write_text(print_module(module))
    np.save(tmp_path / "x.npy", _x())
    x = f"x={tmp_path / 'x.npy'}"

    code, _, err = pir("run", tmp_path / "k.pir", "--input", x, "-o", tmp_path / "a.npz",
                       "--profile", "--repeat", "2")
    assert code == 0, err
    assert "(TvmInterpreter)" in err and "over 2 runs" in err
    assert "outside kernels (reference runtime, numpy):" in err
    rows = _table(err)
    assert symbols <= {name for kind, name in rows if kind == "kernel"}
    assert all(calls % 2 == 0 for calls, _, _ in rows.values())
    assert sum(share for _, _, share in rows.values()) == pytest.approx(100, abs=0.5)
    totals = [ms for _, ms, _ in rows.values()]
    assert totals == sorted(totals, reverse=True)

    code, _, err = pir("run", tmp_path / "k.pir", "--input", x, "-o", tmp_path / "b.npz",
                       "--threads", "1")
    assert code == 0, err
    assert "profile:" not in err
    a, b = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6)

    code, _, err = pir("run", tmp_path / "k.pir", "--input", x, "--runtime", "reference",
                       "--profile", "--threads", "2")
    assert code == 0, err
    rows = _table(err)
    assert ("op", "kernel.tvm") in rows and all(kind == "op" for kind, _ in rows)
    assert sum(share for _, _, share in rows.values()) == pytest.approx(100, abs=0.5)

    code, _, err = pir("run", tmp_path / "k.pir", "--input", x, "--threads", "0")
    assert code == 2
