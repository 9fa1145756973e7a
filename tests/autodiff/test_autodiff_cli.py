"""`pir autodiff` on files: the sample MLP, signatures, pipes, and its error messages."""

from __future__ import annotations

import functools

import os
import pathlib
import re

import numpy as np
import onnx
import pytest

from pir.ir.parser import parse_file
from pir.runtimes.reference import run_function
from helpers import cli, sample_mlp  # noqa: E402




pir = functools.partial(cli, binary=True)  # stdout as bytes


@pytest.fixture
def mlp(tmp_path):
    onnx.save(sample_mlp(), tmp_path / "mlp.onnx")
    os.chdir(tmp_path)
    assert pir("import", "mlp.onnx", "-o", "mlp.pir")[0] == 0
    return tmp_path / "mlp.pir"


def _main_text(path) -> str:
    text = pathlib.Path(path).read_text()
    return text[text.index("func.func @main("):text.index("\n  }\n") + 4]


def test_help_has_an_example():
    code, out, _ = pir("autodiff", "--help")
    assert code == 0 and b"Examples:" in out and b"--wrt" in out


def test_gradient_of_the_sample_mlp(mlp):
    code, _, err = pir("autodiff", "mlp.pir", "--wrt", "x,fc1.weight", "-o", "g.pir")
    assert code == 0, err
    assert re.fullmatch(r"autodiff: @main_grad\(x, cot_probs\) -> \(grad_x, grad_fc1\.weight\): "
                        r"\d+ ops\n", err), err
    assert _main_text("g.pir") == _main_text("mlp.pir")  # the forward function is untouched
    module = parse_file("g.pir")
    fn = module.lookup("main_grad")
    assert not [op.name for op in fn.walk() if op.name.startswith("nn.")]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 784)).astype(np.float32)
    cot = rng.standard_normal((2, 10)).astype(np.float32)
    got = run_function(module, {"x": x, "cot_probs": cot}, func="main_grad")
    assert got["grad_x"].shape == (2, 784) and got["grad_fc1.weight"].shape == (784, 256)
    want_x, want_w1 = _mlp_backprop(x.astype(np.float64), cot.astype(np.float64))
    np.testing.assert_allclose(got["grad_x"], want_x, rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(got["grad_fc1.weight"], want_w1, rtol=1e-3, atol=1e-6)


def _mlp_backprop(x, cot):
    """The sample MLP's gradients by hand, in float64 numpy."""
    w = {t.name: onnx.numpy_helper.to_array(t).astype(np.float64)
         for t in sample_mlp().graph.initializer}
    h1 = x @ w["fc1.weight"] + w["fc1.bias"]
    a1 = np.maximum(h1, 0)
    a2 = np.tanh(a1 @ w["fc2.weight"] + w["fc2.bias"])
    logits = a2 @ w["fc3.weight"] + w["fc3.bias"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    g_logits = p * (cot - np.sum(cot * p, axis=1, keepdims=True))
    g_h2 = (g_logits @ w["fc3.weight"].T) * (1 - a2 ** 2)
    g_h1 = (g_h2 @ w["fc2.weight"].T) * (h1 > 0)
    return g_h1 @ w["fc1.weight"].T, x.T @ g_h1


def test_output_is_deterministic_and_pipes(mlp):
    pir("autodiff", "mlp.pir", "--wrt", "x", "-o", "a.pir")
    code, out, err = pir("autodiff", "-", "--wrt", "x", "-o", "-",
                         input=pathlib.Path("mlp.pir").read_bytes())
    assert code == 0, err
    assert out == pathlib.Path("a.pir").read_bytes()


@pytest.mark.parametrize("args, signature", [
    (["--order", "2", "--seed", "ones"], "@main_grad(%x: tensor<Bx784xf32>) -> "
                                         "(tensor<Bx784xf32>)"),
    (["--mode", "fwd", "--keep-primal", "--name", "jvp"],
     "@jvp(%x: tensor<Bx784xf32>, %tangent_x: tensor<Bx784xf32>) -> "
     "(tensor<Bx10xf32>, tensor<Bx10xf32>)"),
])
def test_options_shape_the_signature(mlp, args, signature):
    code, out, err = pir("autodiff", "mlp.pir", "--wrt", "x", *args, "-o", "-")
    assert code == 0, err
    assert signature in out.decode()


def test_ops_requires_every_prim_op_in_both_tables():
    code, out, err = pir("ops", "--dialect", "prim", "--require", "vjp", "--require", "jvp")
    assert code == 0, err
    assert re.search(r"^vjp\s+75/75 prim ops\s+52\s+19 nondiff, 4 zero\s+0$", out.decode(),
                     re.M), out
    line = next(ln for ln in out.decode().splitlines() if ln.split()[:1] == ["prim.lt"])
    assert line.split().count("nondiff") == 2  # in the vjp and the jvp column


# -- errors ----------------------------------------------------------------------------------

def test_unknown_wrt_name(mlp):
    code, _, err = pir("autodiff", "mlp.pir", "--wrt", "foo", "-o", "g.pir")
    assert code == 1
    assert err == ("pir: error: --wrt: @main has no input or constant named 'foo' (inputs: x; "
                   "constants: fc1.bias, fc1.weight, fc2.bias, fc2.weight, fc3.bias, "
                   "fc3.weight)\n")
    assert not pathlib.Path("g.pir").exists()


INT_INPUT = """module {
  func.func @main(%x: tensor<4xf32>, %i: tensor<2xi64>) -> (tensor<2xf32>) {
    %y = prim.gather(%x, %i) {axis = 0} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
    func.return(%y) : (tensor<2xf32>) -> ()
  }
}
"""

DET = """module {
  func.func @main(%x: tensor<3x3xf32>) -> (tensor<f32>) {
    %y = nn.det(%x) : (tensor<3x3xf32>) -> tensor<f32> loc("/det")
    func.return(%y) : (tensor<f32>) -> ()
  }
}
"""


def test_a_non_float_wrt(tmp_path):
    (tmp_path / "m.pir").write_text(INT_INPUT)
    code, _, err = pir("autodiff", str(tmp_path / "m.pir"), "--wrt", "i", "-o", "-")
    assert code == 1
    assert err == ("pir: error: --wrt: 'i' is tensor<2xi64>, not a float tensor: only float "
                   "values have derivatives\n")


def test_a_missing_rule(tmp_path):
    os.chdir(tmp_path)
    pathlib.Path("det.pir").write_text(DET)
    code, _, err = pir("autodiff", "det.pir", "--wrt", "x", "-o", "g.pir")
    assert code == 1
    assert err.startswith('pir: error: det.pir:3:10: nn.det "/det": no vjp rule for nn.det '
                          "(the 'vjp' table of pir/passes/autodiff has none; it is an nn op "
                          "that decompose keeps: a determinant needs")
    assert "Traceback" not in err
    assert not pathlib.Path("g.pir").exists()
