"""``mpiexec -n N pir run S.pir --dist mpi``: one process per rank, collectives through
mpi4py.  Each test starts one MPI job (process start-up dominates), so they are few: an MLP
on 2 ranks, a transformer block on a 2x2 mesh with per-rank weight files, the GPT-2 test
model data-parallel, and a job of the wrong size."""

import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from dist_models import BLOCK_TP, MLP_TP, gpt2_program, mlp, prim_program, shard, transformer_block

from pir.ir.printer import print_module
from pir.passes.shard.localize import localize
from pir.runtimes.reference import run_function

BIN = os.path.dirname(sys.executable)
MPIEXEC = shutil.which("mpiexec", path=BIN) or shutil.which("mpiexec")

try:
    import mpi4py  # noqa: F401
    HAVE_MPI4PY = True
except ImportError:
    HAVE_MPI4PY = False

pytestmark = [
    pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found: install the dist extra "
                                               "(pip install -e '.[dist]', or make venv)"),
    pytest.mark.skipif(not HAVE_MPI4PY, reason="mpi4py not installed: install the dist extra "
                                               "(pip install -e '.[dist]', or make venv)"),
]


def mpirun(n: int, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    """``mpiexec -n N pir ARGS --dist mpi`` (as root, Open MPI needs to be told it may)."""
    flags = ["--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--allow-run-as-root")
    pir = [sys.executable, "-c", "from pir.cli.main import main; main()"]
    env = {**os.environ, "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([MPIEXEC, *flags, "-n", str(n), *pir, *map(str, args), "--dist", "mpi"],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_mlp_tp2(tmp_path):
    onnx.save(mlp(), tmp_path / "mlp.onnx")
    (tmp_path / "s.pir").write_text(print_module(shard(prim_program(mlp()), "tp=2", MLP_TP)))
    r = mpirun(2, "run", tmp_path / "s.pir", "--check", tmp_path / "mlp.onnx")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(" ok") == 1  # rank 0 alone reports


def test_block_dp2_tp2_split_weights(tmp_path):
    spec = {"x": ["S(0)", "R"], **{k: ["R"] + v for k, v in BLOCK_TP.items()}}
    m = localize(shard(prim_program(transformer_block()), "dp=2,tp=2", spec),
                 split_weights=tmp_path / "w", weights_ref="w")
    (tmp_path / "s.pir").write_text(print_module(m))
    x = np.random.default_rng(5).standard_normal((2, 8, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = mpirun(4, "run", tmp_path / "s.pir", "--input", f"x={tmp_path / 'x.npy'}",
               "-o", tmp_path / "y.npz")
    assert r.returncode == 0, r.stderr
    want = run_function(prim_program(transformer_block()), {"x": x})["y"]
    with np.load(tmp_path / "y.npz") as f:
        np.testing.assert_allclose(f["y"], want, rtol=1e-5, atol=1e-5)


def test_gpt2_dp2(tmp_path):
    module, model, feeds = gpt2_program()
    shard(module, "dp=2", {"input_ids": ["S(0)"], "attention_mask": ["S(0)"]})
    (tmp_path / "s.pir").write_text(print_module(module))
    onnx.save(model, tmp_path / "gpt2.onnx")
    np.savez(tmp_path / "in.npz", **feeds)
    r = mpirun(2, "run", tmp_path / "s.pir", "--inputs", tmp_path / "in.npz", "--check",
               tmp_path / "gpt2.onnx")
    assert r.returncode == 0, r.stderr
    assert "logits" in r.stdout and r.stdout.rstrip().endswith("ok")


def test_wrong_number_of_processes(tmp_path):
    (tmp_path / "s.pir").write_text(print_module(shard(prim_program(mlp()), "tp=2", MLP_TP)))
    np.save(tmp_path / "x.npy", np.zeros((8, 16), np.float32))
    r = mpirun(4, "run", tmp_path / "s.pir", "--input", f"x={tmp_path / 'x.npy'}")
    assert r.returncode != 0
    assert ("pir: error: the program's mesh mesh<tp=2> has 2 ranks, but mpiexec started 4 "
            "processes (mpiexec -n 2 ...)") in r.stderr
