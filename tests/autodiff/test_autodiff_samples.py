"""The training samples: the PINN's Laplacian, and each sample's pipeline run for a few steps."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from helpers import cli
from pir.cli.link_cmd import _parse, link
from pir.runtimes.reference import run_function

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def _sin_sin_model():
    """u(x, y) = sin(x) · sin(y), points as rows of x and y (float64)."""
    t = TensorProto.DOUBLE
    nodes = [helper.make_node("Sin", ["x"], ["sx"]), helper.make_node("Sin", ["y"], ["sy"]),
             helper.make_node("Mul", ["sx", "sy"], ["u"])]
    graph = helper.make_graph(nodes, "u", [helper.make_tensor_value_info(n, t, ["N", 1])
                                           for n in ("x", "y")],
                              [helper.make_tensor_value_info("u", t, ["N", 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: The result each mode's second derivative is named by: reverse mode returns the gradient of
#: its input, forward mode the tangent of the output.
RESULTS = {"rev": ("grad2_x", "grad2_y"), "fwd": ("tangent2_u", "tangent2_u")}


def _laplacian_pipeline(tmp_path, onnx_model, mode: str = "rev") -> Path:
    """The sample's steps 2-3: import, then ∂²/∂x² and ∂²/∂y² as @u_xx and @u_yy."""
    (tmp_path / "u.onnx").write_bytes(onnx_model.SerializeToString())
    for args in (("import", tmp_path / "u.onnx", "-o", tmp_path / "u.pir"),
                 ("autodiff", tmp_path / "u.pir", "--wrt", "x", "--order", "2", "--seed", "ones",
                  "--mode", mode, "--name", "u_xx", "-o", tmp_path / "u_xx.pir"),
                 ("autodiff", tmp_path / "u_xx.pir", "--wrt", "y", "--order", "2", "--seed",
                  "ones", "--mode", mode, "--name", "u_yy", "-o", tmp_path / "lap.pir")):
        status, _, err = cli(*args)
        assert status == 0, err
    return tmp_path / "lap.pir"


def _laplacian(lap, feeds: dict, mode: str) -> np.ndarray:
    rx, ry = RESULTS[mode]
    return run_function(lap, feeds, func="u_xx")[rx] + run_function(lap, feeds, func="u_yy")[ry]


@pytest.mark.parametrize("mode", sorted(RESULTS))
def test_laplacian_of_sin_sin_is_analytic(tmp_path, mode):
    lap = link([_parse(str(_laplacian_pipeline(tmp_path, _sin_sin_model(), mode)))],
               ["lap.pir"])
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-3, 3, (50, 1)), rng.uniform(-3, 3, (50, 1))
    got = _laplacian(lap, {"x": x, "y": y}, mode)
    want = -2 * np.sin(x) * np.sin(y)
    assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, np.max(np.abs(want)))
    assert np.max(np.abs(got - want)) < 1e-12  # exact up to roundoff, in fact


@pytest.mark.parametrize("mode", sorted(RESULTS))
def test_pinn_laplacian_of_the_network_matches_differences(tmp_path, mode):
    """The sample's own network: u_xx + u_yy against central second differences of u (and
    forward over forward, as bench/autodiff.py times it, against reverse over reverse)."""
    spec = importlib.util.spec_from_file_location("pinn_make_model",
                                                  SAMPLES / "pinn" / "make_model.py")
    pinn = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pinn)
    lap = link([_parse(str(_laplacian_pipeline(tmp_path, pinn.build(8), mode)))], ["lap.pir"])
    data = pinn.data(points=20, hidden=8)
    ws = {k: data[k] for k in ("w1", "b1", "w2", "b2", "w3", "b3")}
    x, y = data["x"], data["y"]
    got = _laplacian(lap, {"x": x, "y": y, **ws}, mode)

    def u(dx, dy):
        return run_function(lap, {"x": x + dx, "y": y + dy, **ws})["u"]

    h = 1e-4
    fd = (u(h, 0) + u(-h, 0) + u(0, h) + u(0, -h) - 4 * u(0, 0)) / h ** 2
    assert np.max(np.abs(got - fd)) < 1e-5 * max(1.0, np.max(np.abs(fd)))


def _make(sample: str, build: Path, **variables) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    args = ["make", "-s", "-C", str(SAMPLES / sample), f"B={build}"]
    args += [f"{k}={v}" for k, v in variables.items()]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return (build / "train.txt").read_text()


def _losses(text: str) -> list[float]:
    return [float(line.split("loss ")[1].split()[0]) for line in text.splitlines()
            if line.startswith("step ")]


def test_pinn_sample_residual_falls(tmp_path):
    text = _make("pinn", tmp_path, STEPS=40, EVERY=10, POINTS=64)
    losses = _losses(text)
    assert len(losses) == 5  # steps 1, 10, 20, 30, 40
    residuals = [float(line.split("residual ")[1]) for line in text.splitlines()]
    assert losses[-1] < 0.5 * losses[0] and residuals[-1] < 0.5 * residuals[0], text
    trained = np.load(tmp_path / "trained.npz")
    assert {"w1", "b3", "m_w1", "step"} <= set(trained.files)


def test_train_mlp_sample_loss_falls(tmp_path):
    text = _make("train-mlp", tmp_path, STEPS=30, EVERY=10, POINTS=50)
    losses = _losses(text)
    assert len(losses) == 4
    assert losses[-1] < 0.8 * losses[0], text
    accuracy = [float(line.split("accuracy ")[1]) for line in text.splitlines()]
    assert accuracy[-1] > accuracy[0]
