"""``pir run --ranks N``: the command line of the in-process run on ranks."""

import numpy as np
import onnx
import pytest
from dist_models import BLOCK_TP, MLP_TP, mlp, prim_program, shard, transformer_block

from helpers import cli
from pir.ir.printer import print_module
from pir.passes.shard.localize import localize
from pir.runtimes.reference import run_function


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("dist_cli")
    onnx.save(mlp(), d / "mlp.onnx")
    onnx.save(transformer_block(), d / "block.onnx")
    (d / "mlp.tp2.pir").write_text(print_module(shard(prim_program(mlp()), "tp=2", MLP_TP)))
    spec = {"x": ["S(0)", "R"], **{k: ["R"] + v for k, v in BLOCK_TP.items()}}
    block = localize(shard(prim_program(transformer_block()), "dp=2,tp=2", spec),
                     split_weights=d / "w", weights_ref="w")
    (d / "block.local.pir").write_text(print_module(block))
    (d / "mlp.pir").write_text(print_module(prim_program(mlp())))
    return d


def test_check_against_onnx(files):
    code, out, err = cli("run", files / "mlp.tp2.pir", "--ranks", "2", "--check",
                         files / "mlp.onnx")
    assert code == 0, err
    assert out.splitlines()[1].split()[0] == "y" and out.splitlines()[1].endswith("ok")
    # a per-rank program with per-rank weight files, on a 2x2 mesh
    code, out, err = cli("run", files / "block.local.pir", "--ranks", "4", "--check",
                         files / "block.onnx")
    assert code == 0, err
    assert out.splitlines()[1].endswith("ok")
    # a per-rank program runs on its mesh's ranks by default
    code, out2, err = cli("run", files / "block.local.pir", "--check", files / "block.onnx")
    assert code == 0, err
    assert out2 == out


def test_outputs_are_assembled(files, tmp_path):
    x = np.random.default_rng(3).standard_normal((2, 8, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code, _, err = cli("run", files / "block.local.pir", "--ranks", "4", "--input",
                       f"x={tmp_path / 'x.npy'}", "-o", tmp_path / "y.npz", "--repeat", "2")
    assert code == 0, err
    assert "latency: median" in err and "(4 ranks in one process)" in err
    want = run_function(prim_program(transformer_block()), {"x": x})["y"]
    with np.load(tmp_path / "y.npz") as f:
        np.testing.assert_allclose(f["y"], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("args,message", [
    (["mlp.tp2.pir", "--ranks", "4"],
     "pir: error: the program's mesh mesh<tp=2> has 2 ranks, but it was asked to run on 4"),
    (["mlp.pir", "--ranks", "2"], "pir: error: the program is not sharded"),
])
def test_errors(files, args, message):
    code, _, err = cli("run", files / args[0], *args[1:], "--check", files / "mlp.onnx")
    assert code == 1
    assert err.startswith(message)
    assert "Traceback" not in err
