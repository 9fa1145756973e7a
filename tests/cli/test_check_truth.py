"""`pir run --check` tells the truth (pir/runtimes/ort/check.py).

* The tolerance: |ours - ort| <= max(atol, atol_scale * max|ort|) + rtol * |ort|, defaults
  1e-7, 1e-4, 1e-3: loose enough for float32 through BERT-base (12 layers, hidden 768, seq
  128), strict enough to catch one element off by 1% of the output's scale.
* The first divergence: on the tvm runtime, whose execution plan reuses buffers by liveness,
  the values compared are the ones the program computed (a run with ``keep_values``), not
  what a reused buffer holds at the end; a kernel whose result is perturbed at run time is
  the one named.

The BERT-size models come from bert_base.py (onnx.helper, seeded weights).  In the suite:
BERT-base itself (12 layers) on the reference runtime, and 2 layers of BERT-base's width
compiled (fuse + codegen --target llvm) on the tvm runtime.  The compiled 12-layer case runs
with PIR_BERT_BASE=1 (2 to 2.5 minutes here, on 2 busy cores).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re

import numpy as np
import onnx
import pytest

from bert_base import bert, bert_inputs
from helpers import cli, sample_mlp

from pir.runtimes.ort.check import ATOL, ATOL_SCALE, RTOL, close, effective_atol

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"
DIVERGENCE = re.compile(r"^first divergence at %(\S+), the result of (\S+)(?: '(\w+)')?")


# -- the rule --------------------------------------------------------------------------------

def test_default_tolerances_are_onnx_float32_ones_scaled():
    assert (RTOL, ATOL, ATOL_SCALE) == (1e-3, 1e-7, 1e-4)
    code, out, _ = cli("run", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "|ours - ort| <= max(atol, atol_scale * max|ort|) + rtol * |ort|" in text
    assert "(defaults 1e-7, 1e-4 and 1e-3;" in text
    for opt, default in (("--rtol", "0.001"), ("--atol", "1e-07"), ("--atol-scale", "0.0001")):
        assert re.search(re.escape(opt) + r" \S+ .*?\[default: " + re.escape(default) + r"\]",
                         text), opt


def test_atol_is_relative_to_the_scale_of_the_expected_value():
    want = np.array([5.0, -2.0, 1e-3, 0.0, np.nan, np.inf], np.float32)
    assert effective_atol(want) == pytest.approx(5e-4)  # the finite elements' largest
    assert effective_atol(np.zeros(3, np.float32)) == ATOL  # the floor
    assert effective_atol(np.array([np.nan], np.float32)) == ATOL
    assert effective_atol(want, atol=1e-2) == 1e-2
    assert effective_atol(want, atol_scale=0) == ATOL


def test_near_zero_elements_are_within_the_scaled_atol():
    rng = np.random.default_rng(0)
    want = rng.standard_normal((128, 768)).astype(np.float32) * 2
    got = want.copy()
    got[0, 0] = want[0, 0] = 1e-4
    got[0, 0] += 8.2e-5  # the audit's case: relative error 0.8 on an element near zero
    assert close(got, want)
    assert not close(got, want, rtol=1e-4, atol=1e-5, atol_scale=0)  # the old defaults


@pytest.mark.parametrize("where", ["largest", "zero", "typical"])
def test_one_element_off_by_one_percent_of_the_scale_is_caught(where):
    rng = np.random.default_rng(1)
    want = rng.standard_normal((128, 768)).astype(np.float32)
    want[3, 5] = 0
    scale = float(np.abs(want).max())
    i = {"largest": np.unravel_index(np.abs(want).argmax(), want.shape), "zero": (3, 5),
         "typical": (7, 9)}[where]
    got = want.copy()
    got[i] += np.float32(0.01 * scale)
    assert not close(got, want)
    got[i] = want[i] + np.float32(2e-5 * scale)  # float32 noise of long reductions
    assert close(got, want)


def test_nan_infinities_integers_and_shapes():
    a = np.array([1.0, np.nan, np.inf, -np.inf], np.float32)
    assert close(a, a.copy())
    assert not close(np.array([1.0, 0.0, np.inf, -np.inf], np.float32), a)
    assert not close(np.array([1.0, np.nan, -np.inf, -np.inf], np.float32), a)
    assert close(np.arange(4), np.arange(4))
    assert not close(np.array([0, 1, 2, 4]), np.arange(4))  # integers are exact
    assert not close(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
    c = np.array([1 + 1j, 2], np.complex64)
    assert close(c, c.copy()) and not close(np.conj(c), c)  # the imaginary part counts


# -- helpers ---------------------------------------------------------------------------------

def _save(tmp_path, model: onnx.ModelProto, feeds: dict, name: str):
    onnx.save(model, tmp_path / f"{name}.onnx")
    np.savez(tmp_path / f"{name}.in.npz", **feeds)
    return tmp_path / f"{name}.onnx", tmp_path / f"{name}.in.npz"


def _compile(tmp_path, onnx_path, name: str):
    """import | optimize -p FUSE | codegen --target llvm, as files; the kernels' program."""
    m, f, k = (tmp_path / f"{name}{s}.pir" for s in ("", ".fused", ".kernels"))
    for args in (("import", onnx_path, "-o", m), ("optimize", m, "-p", FUSE, "-o", f),
                 ("codegen", f, "--target", "llvm", "-o", k)):
        code, _, err = cli(*args)
        assert code == 0, err
    return k


def _report(out: str) -> dict[str, tuple[float, float, str]]:
    """The output rows of a --check report: name -> (max abs err, max rel err, verdict)."""
    rows = {}
    for line in out.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 4 and parts[3] in ("ok", "MISMATCH"):
            rows[parts[0]] = (float(parts[1]), float(parts[2]), parts[3])
    return rows


def _divergence(out: str):
    lines = [ln for ln in out.splitlines() if ln.startswith("first divergence")]
    assert len(lines) == 1, out
    return DIVERGENCE.match(lines[0]).groups()


def _perturb_kernel(monkeypatch, value: str, change=lambda a: a + 1) -> list:
    """Make the kernel.tvm op that computes %value replace that result by ``change`` of it
    (default: add 1.0), at run time, planned or interpreted (the op's compiled function,
    wrapped); the ops it hit."""
    from pir.runtimes.tvm import executor

    hit = []
    original = executor.CompiledProgram.kernel

    def kernel(self, op):
        k = original(self, op)
        names = [r.name for r in op.results]
        if value not in names:
            return k
        fn = k.fn
        index = len(names) - names.index(value)  # results are the last arguments

        def perturbed(*args):
            fn(*args)
            out = args[-index]
            a = out.numpy()
            out.copyfrom(change(a).astype(a.dtype))

        if op not in hit:
            hit.append(op)
        return dataclasses.replace(k, fn=perturbed)

    monkeypatch.setattr(executor.CompiledProgram, "kernel", kernel)
    return hit


@pytest.fixture(scope="module")
def tvm_cache(tmp_path_factory):
    """One private kernel cache for this module's compiled programs."""
    pytest.importorskip("tvm")
    from pir.runtimes.tvm import executor

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PIR_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        mp.setattr(executor, "_LOADED", {})
        yield


# -- the first divergence, on the tvm runtime's plan -----------------------------------------

@pytest.fixture(scope="module")
def mlp_kernels(tvm_cache, tmp_path_factory):
    """The demo's MLP compiled: kernels act1 [B, 256] -> act2 [B, 128] -> (fc3.mm) -> logits
    [B, 10] -> probs; the plan gives logits the buffer of act2."""
    d = tmp_path_factory.mktemp("mlp")
    model = sample_mlp()
    onnx.save(model, d / "mlp.onnx")
    return _compile(d, d / "mlp.onnx", "mlp"), d / "mlp.onnx"


def test_the_plan_reuses_buffers_and_keep_values_keeps_what_each_step_made(mlp_kernels):
    """What made the old report lie: after a planned run, values of reused buffers hold a
    later value; with keep_values every value is the one its step made (as interpreted)."""
    from pir.ir.parser import parse_module
    from pir.runtimes.inputs import random_inputs
    from pir.runtimes.tvm import TvmInterpreter

    module = parse_module(mlp_kernels[0].read_text())
    fn = module.lookup("main")
    feeds = random_inputs(fn, 0, {"B": 4})
    truth = TvmInterpreter(module, planned=False)
    truth.run(fn, feeds)
    planned = TvmInterpreter(module)
    planned.run(fn, feeds)
    # (a planned matmul is np.matmul, an interpreted one the reference rule: not bitwise)
    same = functools.partial(np.allclose, rtol=1e-5, atol=1e-6)
    stale = [v.name for v in truth.values
             if v in planned.values and not same(planned.values[v], truth.values[v])]
    assert stale, "the plan reused no buffer: this test no longer tests anything"
    assert "act2" in stale
    kept = TvmInterpreter(module, keep_values=True)
    for _ in range(2):  # a second run of the same plan too
        outs = kept.run(fn, feeds)
        bad = [v.name for v, want in truth.values.items() if not same(kept.values[v], want)]
        assert not bad
    np.testing.assert_allclose(outs["probs"], truth.values[fn.return_op.operands[0]],
                               rtol=1e-6)


@pytest.mark.parametrize("value", ["act1", "act2", "probs"])
def test_a_perturbed_kernel_is_the_first_divergence(mlp_kernels, monkeypatch, value):
    kernels, model = mlp_kernels
    hit = _perturb_kernel(monkeypatch, value)
    code, out, err = cli("run", kernels, "--check", model, "--dim", "B=4")
    assert hit and code == 1, out + err
    assert _report(out)["probs"][2] == "MISMATCH"
    # (before the fix, perturbing probs named %act2: logits had overwritten its buffer)
    assert _divergence(out) == (value, "kernel.tvm", value)
    assert err.startswith("pir: error: outputs differ from ONNX Runtime beyond")
    assert len(err.strip().splitlines()) == 1


def test_without_the_perturbation_the_compiled_mlp_is_ok(mlp_kernels):
    kernels, model = mlp_kernels
    code, out, err = cli("run", kernels, "--check", model, "--dim", "B=4")
    assert code == 0, out + err
    assert _report(out)["probs"][2] == "ok" and "divergence" not in out


# -- BERT-base size --------------------------------------------------------------------------

def _check_ok(program, model, inputs, *extra):
    code, out, err = cli("run", program, "--check", model, "--inputs", inputs, *extra)
    assert code == 0, out + err
    rows = _report(out)
    assert set(rows) == {"y", "pooled"} and all(r[2] == "ok" for r in rows.values()), out
    return rows


@pytest.mark.slow
def test_bert_base_passes_on_the_reference_runtime(tmp_path):
    model = bert()  # 12 layers, hidden 768, 12 heads, ffn 3072, seq 128, batch 1
    onnx_path, inputs = _save(tmp_path, model, bert_inputs(model), "bert")
    assert cli("import", onnx_path, "-o", tmp_path / "bert.pir")[0] == 0
    rows = _check_ok(tmp_path / "bert.pir", onnx_path, inputs)
    # float32 noise (3.5e-6 and 2.1e-6 here), far inside the tolerance (3.4e-4 at y's scale)
    assert rows["y"][0] < 5e-5 and rows["pooled"][0] < 5e-5


@pytest.fixture(scope="module")
def bert2(tvm_cache, tmp_path_factory):
    """Two BERT-base layers (hidden 768, 12 heads, ffn 3072, seq 128), compiled."""
    d = tmp_path_factory.mktemp("bert2")
    model = bert(layers=2)
    onnx_path, inputs = _save(d, model, bert_inputs(model), "bert2")
    return _compile(d, onnx_path, "bert2"), onnx_path, inputs


@pytest.mark.slow
def test_bert_layers_compiled_pass_on_the_tvm_runtime(bert2):
    kernels, model, inputs = bert2
    rows = _check_ok(kernels, model, inputs)
    assert rows["y"][0] < 1e-4 and rows["pooled"][0] < 1e-4


@pytest.mark.slow
def test_bert_layers_compiled_name_the_perturbed_kernel(bert2, monkeypatch):
    """%l1.gelu's kernel is also %l0.gelu's (one symbol): only the op of l1 is perturbed, so
    the report must pass over l0.gelu and name l1.gelu."""
    kernels, model, inputs = bert2
    hit = _perturb_kernel(monkeypatch, "l1.gelu")
    code, out, err = cli("run", kernels, "--check", model, "--inputs", inputs)
    assert [op.results[0].name for op in hit] == ["l1.gelu"] and code == 1, out + err
    assert _report(out)["y"][2] == "MISMATCH"
    assert _divergence(out) == ("l1.gelu", "kernel.tvm", hit[0].symbol)
    assert hit[0].symbol == "l0_gelu"


@pytest.mark.slow
def test_one_element_of_an_output_off_by_one_percent_is_caught(bert2, monkeypatch):
    """On the real output (y of two BERT layers, compiled): one element moved by 1% of
    max|y| is a MISMATCH, and the first divergence is y itself."""
    kernels, model, inputs = bert2

    def nudge(a):
        a.reshape(-1)[1000] += 0.01 * np.abs(a).max()  # (position 1: not the pooled one)
        return a

    hit = _perturb_kernel(monkeypatch, "y", nudge)
    code, out, _ = cli("run", kernels, "--check", model, "--inputs", inputs)
    assert hit and code == 1 and _report(out)["y"][2] == "MISMATCH", out
    assert _report(out)["pooled"][2] == "ok"
    assert _divergence(out)[0] == "y"


@pytest.mark.skipif(not os.environ.get("PIR_BERT_BASE"),
                    reason="the compiled 12-layer BERT-base: set PIR_BERT_BASE=1")
def test_bert_base_compiled_passes_on_the_tvm_runtime(tvm_cache, tmp_path, monkeypatch):
    model = bert()
    onnx_path, inputs = _save(tmp_path, model, bert_inputs(model), "bert")
    kernels = _compile(tmp_path, onnx_path, "bert")
    rows = _check_ok(kernels, onnx_path, inputs)
    assert rows["y"][0] < 1e-4 and rows["pooled"][0] < 1e-4
    hit = _perturb_kernel(monkeypatch, "l7.gelu")
    code, out, _ = cli("run", kernels, "--check", onnx_path, "--inputs", inputs)
    assert code == 1 and _divergence(out) == ("l7.gelu", "kernel.tvm", hit[0].symbol), out
