"""Training steps on ranks: ``pir run S.pir --func main_train --steps N --ranks R`` (and
``--dist mpi``).  After several steps of a data-parallel step from ``pir autodiff --train``
every rank holds bitwise the same parameters, and they equal the single-process training
within 1e-5; so do the blocks of tensor-parallel parameters on a 2x2 mesh."""

import os

import numpy as np
import onnx
import pytest

from helpers import cli, regression_mlp
from pir.errors import PirError
from pir.ir.parser import parse_file
from pir.passes.shard.driver import shard_module
from pir.runtimes.dist.comm import block_of
from pir.runtimes.dist.train import train_ranks
from pir.runtimes.reference.interpreter import Interpreter
from pir.runtimes.train_loop import train

STEPS = 4
DATA = {"x": ["S(0)"], "t": ["S(0)"]}


@pytest.fixture(scope="module")
def step(tmp_path_factory):
    """The training step (t.pir), its data (in.npz) and the single-process training."""
    d = tmp_path_factory.mktemp("dist_train")
    onnx.save(regression_mlp(), d / "m.onnx")
    assert cli("import", d / "m.onnx", "-o", d / "m.pir")[0] == 0
    code, _, err = cli("autodiff", d / "m.pir", "--train", "sgd", "--lr", "0.01", "--loss", "loss",
                       "-o", d / "t.pir")
    assert code == 0, err
    rng = np.random.default_rng(1)
    feeds = {"x": rng.normal(size=(8, 8)).astype(np.float32),
             "t": rng.normal(size=(8, 4)).astype(np.float32)}
    np.savez(d / "in.npz", **feeds)
    m = parse_file(str(d / "t.pir"))
    fn = m.lookup("main_train")
    losses = []
    want = train(m, fn, feeds, STEPS, Interpreter(m), lambda i, v: losses.append(v["loss"]))
    init = Interpreter(m).run(m.lookup("main_train_init"), {})
    assert losses[-1] < 0.75 * losses[0]  # it learns
    return d, feeds, want, losses, init


def sharded(step, mesh, spec):
    d = step[0]
    m = parse_file(str(d / "t.pir"))
    shard_module(m, mesh, spec, func="main_train")
    return m


def test_data_parallel_ranks_hold_identical_parameters(step):
    _, feeds, want, _, init = step
    done = train_ranks(sharded(step, "dp=2", DATA), feeds, STEPS, 2)
    assert len(done) == 2
    for name, ref in want.items():
        assert not np.allclose(ref, init[name], atol=1e-3)  # trained
        for r, rank in enumerate(done):
            block = rank.local[name]  # the rank's own copy, not an assembled one
            assert block.shape == ref.shape and block.dtype == ref.dtype
            assert np.array_equal(block, done[0].local[name]), f"rank {r} differs on {name}"
        np.testing.assert_array_equal(done[0].final[name], done[0].local[name])
        np.testing.assert_allclose(done[0].final[name], ref, rtol=1e-5, atol=1e-6, err_msg=name)


def test_dp_and_tp_on_a_2x2_mesh(step):
    """fc1 column-parallel and fc2 row-parallel over tp, the batch over dp: each rank holds
    its tp block of each parameter, bitwise the same as the other rank of its dp group."""
    _, feeds, want, _, _ = step
    spec = {"x": ["S(0)", "R"], "t": ["S(0)", "R"], "fc1.w": ["R", "S(1)"],
            "fc2.w": ["R", "S(0)"]}
    m = sharded(step, "dp=2,tp=2", spec)
    types = {a.name: a.type for a in m.lookup("main_train").args}
    done = train_ranks(m, feeds, STEPS, 4)
    for name, ref in want.items():
        for r, rank in enumerate(done):
            coords = (r // 2, r % 2)
            block = rank.local[name]
            assert block.shape[0] * block.shape[1] * 2 == ref.size  # half of it
            np.testing.assert_allclose(block, block_of(ref, types[name], coords), rtol=1e-5,
                                       atol=1e-6)
            assert np.array_equal(block, done[r % 2].local[name])  # dp replicas agree
        np.testing.assert_allclose(done[0].final[name], ref, rtol=1e-5, atol=1e-6)


def test_a_new_layout_is_carried_to_the_next_step(step):
    """new_fc2.w comes out split while fc2.w goes in whole: each rank assembles it."""
    _, feeds, want, _, _ = step
    m = sharded(step, "dp=2", {**DATA, "new_fc2.w": ["S(1)"]})
    fn = m.lookup("main_train")
    assert str(fn.function_type.outputs[2]).endswith("[S(1)]>")
    done = train_ranks(m, feeds, STEPS, 2)
    np.testing.assert_allclose(done[0].final["fc2.w"], want["fc2.w"], rtol=1e-5, atol=1e-6)
    assert np.array_equal(done[0].local["fc2.w"], done[1].local["fc2.w"])


def test_cli_steps_on_ranks(step, tmp_path):
    d, _, want, losses, _ = step
    code, _, err = cli("shard", d / "t.pir", "--func", "main_train", "--mesh", "dp=2",
                       "--place", "x=[S(0)]", "--place", "t=[S(0)]", "-o", tmp_path / "s.pir")
    assert code == 0, err
    code, out, err = cli("run", tmp_path / "s.pir", "--func", "main_train", "--inputs",
                         d / "in.npz", "--steps", STEPS, "--ranks", 2, "-o", tmp_path / "p.npz")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == STEPS and lines[0].startswith(f"step 1/{STEPS}: loss ")
    got = [float(line.split()[-1]) for line in lines]
    np.testing.assert_allclose(got, losses, rtol=1e-5)
    with np.load(tmp_path / "p.npz") as f:
        assert sorted(f.files) == sorted(want)
        for name, ref in want.items():
            np.testing.assert_allclose(f[name], ref, rtol=1e-5, atol=1e-6)
    code, _, err = cli("run", tmp_path / "s.pir", "--func", "main_train", "--inputs",
                       d / "in.npz", "--steps", 2, "--ranks", 4)
    assert code == 1 and "has 2 ranks, but it was asked to run on 4" in err


def test_under_mpiexec(step, tmp_path):
    from test_mpi import HAVE_MPI4PY, MPIEXEC, mpirun

    if MPIEXEC is None or not HAVE_MPI4PY:
        pytest.skip("mpiexec or mpi4py not installed: install the dist extra "
                    "(pip install -e '.[dist]', or make venv)")
    d, _, want, losses, _ = step
    m = sharded(step, "dp=2", DATA)
    from pir.ir.printer import print_module

    (tmp_path / "s.pir").write_text(print_module(m))
    r = mpirun(2, "run", tmp_path / "s.pir", "--func", "main_train", "--inputs", d / "in.npz",
               "--steps", STEPS, "-o", tmp_path / "p.npz")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()  # rank 0 alone prints
    assert len(lines) == STEPS
    np.testing.assert_allclose([float(s.split()[-1]) for s in lines], losses, rtol=1e-5)
    assert os.path.exists(tmp_path / "p.npz")
    with np.load(tmp_path / "p.npz") as f:
        for name, ref in want.items():
            np.testing.assert_allclose(f[name], ref, rtol=1e-5, atol=1e-6)


def test_a_bad_loss_stops_every_rank(step):
    _, feeds, _, _, _ = step
    bad = {**feeds, "x": np.full_like(feeds["x"], np.nan)}
    with pytest.raises(PirError, match=r"^rank \d: step 1: the loss is nan"):
        train_ranks(sharded(step, "dp=2", DATA), bad, STEPS, 2)
