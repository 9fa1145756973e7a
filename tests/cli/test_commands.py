"""The commands on real files: import/verify round trips, show, run, --check, pipes."""

import functools
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import pytest

from helpers import cli, sample_mlp  # noqa: E402

MODELS = pathlib.Path(__file__).resolve().parents[1] / "models"
PIR = [sys.executable, "-m", "pir.cli.main"]



pir = functools.partial(cli, binary=True)  # stdout as bytes


@pytest.fixture
def mlp(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(sample_mlp(), path)
    os.chdir(tmp_path)
    return path


def test_every_command_has_help_with_an_example():
    for cmd in ("import", "run", "show", "verify"):
        code, out, _ = pir(cmd, "--help")
        assert code == 0
        assert b"Example" in out, cmd


def test_import_verify_round_trip_is_byte_identical(mlp):
    assert pir("import", "mlp.onnx", "-o", "a.pir")[0] == 0
    code, _, err = pir("verify", "a.pir", "-o", "b.pir")
    assert code == 0, err
    assert "a.pir: ok (15 ops, 5 resources)" in err
    assert pathlib.Path("a.pir").read_bytes() == pathlib.Path("b.pir").read_bytes()


def test_import_is_deterministic(mlp):
    pir("import", "mlp.onnx", "-o", "a.pir")
    pir("import", "mlp.onnx", "-o", "b.pir")
    assert pathlib.Path("a.pir").read_bytes() == pathlib.Path("b.pir").read_bytes()


def test_show_summarises_ops_parameters_and_symbols(mlp):
    pir("import", "mlp.onnx", "-o", "a.pir")
    code, out, _ = pir("show", "a.pir")
    text = out.decode()
    assert code == 0
    assert "@main: 15 ops, 6 parameters (235,146 elements, 918.5 KiB; 5 in resources)" in text
    assert "symbolic dims: B" in text
    assert "tensor<Bx784xf32>" in text
    assert [line.split() for line in text.splitlines() if "nn.matmul" in line] == [["nn.matmul", "2"]]


def test_run_writes_named_outputs_that_match_onnxruntime(mlp):
    pir("import", "mlp.onnx", "-o", "a.pir")
    x = np.random.default_rng(1).standard_normal((3, 784)).astype(np.float32)
    np.savez("in.npz", x=x)
    code, _, err = pir("run", "a.pir", "--inputs", "in.npz", "-o", "out.npz")
    assert code == 0, err
    import onnxruntime as ort

    want = ort.InferenceSession("mlp.onnx").run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load("out.npz")["probs"], want, rtol=1e-5, atol=1e-6)


def test_run_without_output_prints_a_summary(mlp):
    pir("import", "mlp.onnx", "-o", "a.pir")
    np.save("x.npy", np.zeros((2, 784), np.float32))
    code, out, _ = pir("run", "a.pir", "--input", "x=x.npy")
    assert code == 0
    assert out.decode().startswith("probs: float32[2, 10]  min ")


def test_check_passes_on_a_faithful_import(mlp):
    pir("import", "mlp.onnx", "-o", "a.pir")
    code, out, _ = pir("run", "a.pir", "--check", "mlp.onnx", "--dim", "B=3")
    assert code == 0
    lines = out.decode().splitlines()
    assert lines[0].split() == ["output", "max", "abs", "err", "max", "rel", "err", "result"]
    assert lines[1].split()[0] == "probs" and lines[1].split()[-1] == "ok"


def test_check_names_the_first_diverging_value(mlp):
    pir("import", "mlp.onnx", "-o", "a.pir")
    text = pathlib.Path("a.pir").read_text()
    # Make the second activation wrong: tanh becomes sigmoid.
    tampered = text.replace("nn.tanh(%fc2)", "nn.sigmoid(%fc2)")
    assert tampered != text
    pathlib.Path("bad.pir").write_text(tampered)
    code, out, err = pir("run", "bad.pir", "--check", "mlp.onnx")
    assert code == 1
    report = out.decode()
    assert "MISMATCH" in report
    assert 'first divergence at %act2, the result of nn.sigmoid (ONNX node "/act2/Tanh")' in report
    assert err.startswith("pir: error: outputs differ from ONNX Runtime")


def test_stages_chain_through_pipes(mlp):
    imp = subprocess.run(PIR + ["import", "-"], input=pathlib.Path("mlp.onnx").read_bytes(),
                         capture_output=True, check=True)
    ver = subprocess.run(PIR + ["verify", "-", "-o", "-"], input=imp.stdout,
                         capture_output=True, check=True)
    assert ver.stdout == imp.stdout
    show = subprocess.run(PIR + ["show", "-"], input=ver.stdout, capture_output=True, check=True)
    assert b"@main: 15 ops" in show.stdout


@pytest.mark.parametrize("name", ["gpt2", "resnet"])
def test_models_check_against_onnxruntime_from_the_command_line(tmp_path, name):
    os.chdir(tmp_path)
    model = MODELS / f"{name}.onnx"
    assert pir("import", str(model), "-o", "m.pir")[0] == 0
    code, out, err = pir("run", "m.pir", "--check", str(model),
                         "--inputs", str(MODELS / f"{name}.inputs.npz"))
    assert code == 0, out.decode() + err
    assert "MISMATCH" not in out.decode()
