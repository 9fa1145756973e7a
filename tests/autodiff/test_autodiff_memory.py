"""What a reverse-mode derivative keeps between its forward and backward parts, and --remat."""

from __future__ import annotations

import numpy as np

from helpers import cli
from nets import tanh_mlp
from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.passes.autodiff import differentiate
from pir.passes.autodiff.memory import has_backward, is_backward, kept
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline
from pir.runtimes.reference import run_function

RNG = np.random.default_rng(5)
X, T = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 1))
WEIGHTS = ["w1", "b1", "w2", "b2", "w3", "b3"]


def test_first_order_keeps_the_activations_the_backward_part_reads():
    m = import_model(tanh_mlp())
    fn = differentiate(m, WEIGHTS, of=["loss"], seed="ones")
    k = kept(fn)
    # dW2 = a1ᵀ g, dW3 = a2ᵀ g, tanh' = 1 - a², the loss' = 2 d / n: nothing else is kept
    assert sorted(v.name for v in k.values) == ["a1", "a2", "d"]
    assert k.nbytes == 8 * (6 * 8 + 6 * 8 + 6 * 1)
    assert not k.unsized
    # every backward op is after every forward op that it reads
    order = {op: i for i, op in enumerate(fn.entry.ops)}
    for v in k.values:
        assert not is_backward(v.owner)
        assert all(order[u] > order[v.owner] for u in v.users)


def test_forward_mode_has_no_backward_part():
    m = import_model(tanh_mlp())
    fn = differentiate(m, ["x"], mode="fwd", of=["pred"])
    assert not has_backward(fn)


def _hessian_rows(remat: bool):
    m = import_model(tanh_mlp())
    fn = differentiate(m, ["x"], of=["pred"], order=2, seed="ones", remat=remat)
    got = run_function(m, {"x": X, "t": T}, func="main_grad")["grad2_x"]
    return m, fn, got


def test_remat_lowers_the_kept_bytes_and_keeps_the_derivative():
    """The second derivative of a tanh MLP (what a PINN trains on) keeps tanh's derivative
    chain (a, a·a, 1 - a·a, ...) from its first-order part; --remat recomputes it."""
    _, plain, want = _hessian_rows(False)
    m, fn, got = _hessian_rows(True)
    before, after = kept(plain), kept(fn)
    assert after.nbytes < before.nbytes, (before.nbytes, after.nbytes)
    np.testing.assert_array_equal(got, want)
    remats = [op for op in fn.entry.ops if any((r.name or "").endswith(".remat")
                                               for r in op.results)]
    assert remats and all(is_backward(op) for op in remats)
    # the marks survive the text format and keep cse from merging the recomputed ops back
    again = parse_module(print_module(m))
    PassManager(parse_pipeline("canonicalize,fold,cse,dce")).run(again)
    assert kept(again.lookup("main_grad")).nbytes == after.nbytes


def test_first_order_remat_never_keeps_more():
    m = import_model(tanh_mlp())
    plain = kept(differentiate(m, WEIGHTS, of=["loss"], seed="ones")).nbytes
    remat = kept(differentiate(m, WEIGHTS, of=["loss"], seed="ones", remat=True,
                               name="g2")).nbytes
    assert remat <= plain


def test_show_reports_the_kept_values(tmp_path):
    onnx_path = tmp_path / "m.onnx"
    onnx_path.write_bytes(tanh_mlp().SerializeToString())
    assert cli("import", str(onnx_path), "-o", str(tmp_path / "m.pir"))[0] == 0
    for f, extra in (("h", []), ("r", ["--remat"])):
        status, _, err = cli("autodiff", str(tmp_path / "m.pir"), "--wrt", "x", "--of", "pred",
                             "--order", "2", "--seed", "ones", *extra, "-o",
                             str(tmp_path / f"{f}.pir"))
        assert status == 0, err
    lines = {}
    for f in ("h", "r"):
        status, out, _ = cli("show", str(tmp_path / f"{f}.pir"))
        assert status == 0
        kept_lines = [ln for ln in out.splitlines() if ln.startswith("kept between")]
        assert len(kept_lines) == 1, out  # only @main_grad has a backward part
        lines[f] = int(kept_lines[0].split(", ")[1].split()[0])
    assert lines["r"] < lines["h"]
