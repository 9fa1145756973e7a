"""Training steps (`pir autodiff --train`) and their loop (`pir run --steps`)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import cli
from nets import loss_grads, tanh_mlp, weights
from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.passes.autodiff.memory import kept
from pir.passes.autodiff.train import Optimizer, build_train_step
from pir.runtimes.reference.interpreter import Interpreter, output_names
from pir.runtimes.train_loop import train

RNG = np.random.default_rng(9)
X, T = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 1))
ORDER = ["w1", "b1", "w2", "b2", "w3", "b3"]


def numpy_steps(kind: str, lr: float, steps: int, b1=0.9, b2=0.999, eps=1e-8):
    ws = weights(tanh_mlp())
    m = {k: np.zeros_like(v) for k, v in ws.items()}
    v = {k: np.zeros_like(w) for k, w in ws.items()}
    losses = []
    for t in range(1, steps + 1):
        loss, g = loss_grads(ws, X, T)
        losses.append(loss)
        for k in ws:
            if kind == "sgd":
                ws[k] = ws[k] - lr * g[k]
            else:
                m[k] = b1 * m[k] + (1 - b1) * g[k]
                v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
                mhat, vhat = m[k] / (1 - b1 ** t), v[k] / (1 - b2 ** t)
                ws[k] = ws[k] - lr * mhat / (np.sqrt(vhat) + eps)
    return ws, losses, m, v


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_two_steps_equal_numpy(kind):
    module = import_model(tanh_mlp())
    step = build_train_step(module, "loss", Optimizer(kind, lr=0.05))
    state = [n for p in ORDER for n in ([f"m_{p}", f"v_{p}"] if kind == "adam" else [])]
    assert [a.name for a in step.args] == ORDER + state + (["step"] if kind == "adam" else []) \
        + ["x", "t"]
    assert output_names(step) == ["loss"] + [f"new_{n}" for n in ORDER + state] + \
        (["new_step"] if kind == "adam" else [])
    losses = []
    final = train(module, step, {"x": X, "t": T}, 2, Interpreter(module),
                  lambda i, values: losses.append(values["loss"]))
    ws, want_losses, m, v = numpy_steps(kind, 0.05, 2)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-12)
    for k in ORDER:
        np.testing.assert_allclose(final[k], ws[k], rtol=1e-10, atol=1e-12, err_msg=k)
        if kind == "adam":
            np.testing.assert_allclose(final[f"m_{k}"], m[k], rtol=1e-10, atol=1e-14)
            np.testing.assert_allclose(final[f"v_{k}"], v[k], rtol=1e-10, atol=1e-16)
    if kind == "adam":
        assert float(final["step"]) == 2.0


def test_only_the_named_weights_train():
    module = import_model(tanh_mlp())
    step = build_train_step(module, "loss", Optimizer("sgd", 0.1), wrt=["w3", "b3"])
    assert [a.name for a in step.args] == ["w3", "b3", "x", "t"]
    final = train(module, step, {"x": X, "t": T}, 1, Interpreter(module))
    ws = weights(tanh_mlp())
    _, g = loss_grads(ws, X, T)
    np.testing.assert_allclose(final["w3"], ws["w3"] - 0.1 * g["w3"], rtol=1e-12)
    assert kept(step).count > 0  # the step has a backward part, and show reports it


def test_loss_falls_through_the_command_line(tmp_path):
    onnx_path, pir_path, step_path = (tmp_path / n for n in ("m.onnx", "m.pir", "t.pir"))
    onnx_path.write_bytes(tanh_mlp(dtype=np.float32).SerializeToString())
    np.savez(tmp_path / "data.npz", x=X.astype(np.float32), t=T.astype(np.float32))
    assert cli("import", onnx_path, "-o", pir_path)[0] == 0
    status, _, err = cli("autodiff", pir_path, "--train", "adam", "--lr", "0.02", "--loss",
                         "loss", "-o", step_path)
    assert status == 0, err
    status, out, err = cli("run", step_path, "--func", "main_train", "--steps", "40",
                           "--inputs", tmp_path / "data.npz", "-o", tmp_path / "w.npz")
    assert status == 0, err
    losses = [float(line.split("loss ")[1]) for line in out.splitlines()]
    assert len(losses) == 40 and out.splitlines()[0].startswith("step  1/40: loss ")
    assert losses[-1] < 0.5 * losses[0]
    trained = np.load(tmp_path / "w.npz")
    assert set(ORDER) <= set(trained.files) and "step" in trained.files
    assert trained["w1"].dtype == np.float32


def test_errors_name_the_problem():
    module = import_model(tanh_mlp())
    with pytest.raises(PirError, match="the loss must be a float tensor of one element"):
        build_train_step(module, "pred")
    with pytest.raises(PirError, match="no output named 'nope'"):
        build_train_step(module, "nope")
    with pytest.raises(PirError, match="unknown optimizer 'sgdm'"):
        Optimizer("sgdm")
    status, _, err = cli("run", "-", "--steps", "2", input="module {\n  func.func @main(%x: "
                         "tensor<f32>) -> (tensor<f32>) {\n    func.return(%x) : (tensor<f32>) "
                         "-> ()\n  }\n}\n")
    assert status == 1 and "is not a training step" in err


def test_train_usage_errors(tmp_path):
    (tmp_path / "m.onnx").write_bytes(tanh_mlp().SerializeToString())
    assert cli("import", tmp_path / "m.onnx", "-o", tmp_path / "m.pir")[0] == 0
    status, _, err = cli("autodiff", tmp_path / "m.pir", "--train", "sgd", "-o", tmp_path / "t")
    assert status == 2 and "--train and --loss go together" in err
    status, _, err = cli("autodiff", tmp_path / "m.pir", "--train", "sgd", "--loss", "loss",
                         "--order", "2", "-o", tmp_path / "t")
    assert status == 2 and "reverse-mode step of first order" in err
    status, _, err = cli("autodiff", tmp_path / "m.pir", "-o", tmp_path / "t")
    assert status == 2 and "--wrt is required" in err
    status, _, err = cli("autodiff", tmp_path / "m.pir", "--wrt", "x", "--mode", "fwd",
                         "--remat", "-o", tmp_path / "t")
    assert status == 2 and "--remat applies to reverse mode" in err
    assert not (tmp_path / "t").exists()
