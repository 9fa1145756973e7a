"""`pir codegen --target llvm` and the tvm runtime: models through import | optimize (the
default cleanups + fuse) | codegen | run on the tvm runtime, against ONNX Runtime; the .pir
round trip with kernel ops; the compiled-module cache; symbol mangling."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import onnx
import pytest

pytest.importorskip("tvm")


from pir.codegen.tvm.codegen import codegen_module, mangle  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.fusion import GroupOp  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.ir.verifier import verify_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.ort import run_onnxruntime  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter, executor, stats  # noqa: E402
from helpers import cli  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "models"
FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _mlp() -> onnx.ModelProto:
    sys.path.insert(0, str(ROOT / "samples" / "mlp"))
    try:
        import make_model
    finally:
        sys.path.remove(str(ROOT / "samples" / "mlp"))
    return make_model.build()


def _model(name: str):
    if name == "mlp":
        model = _mlp()
        feeds = {"x": np.random.default_rng(0).standard_normal((4, 784)).astype(np.float32)}
    else:
        model = onnx.load(str(MODELS / f"{name}.onnx"))
        feeds = dict(np.load(MODELS / f"{name}.inputs.npz"))
    return model, feeds


def _compiled(model):
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    report = codegen_module(module, "llvm")
    verify_module(module)
    return module, report


@pytest.mark.parametrize("name", ["mlp", "resnet", "gpt2", "bert"])
def test_model_on_tvm_runtime_matches_onnxruntime(name):
    model, feeds = _model(name)
    module, report = _compiled(model)
    kernels = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    assert kernels and report.kernels == len(kernels)
    # the file round-trips, kernels included, and what is read back is what runs
    text = print_module(module)
    module = parse_module(text)
    assert print_module(module) == text
    interp = TvmInterpreter(module)
    assert interp.program.module is not None
    ours = interp.run(module.funcs[0], feeds)
    theirs = run_onnxruntime(model, feeds)
    assert set(ours) == set(theirs)
    for out, want in theirs.items():
        got = ours[out]
        assert got.shape == want.shape and got.dtype == want.dtype, out
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale, err_msg=f"{name}:{out}")


def test_identical_groups_share_one_kernel_and_every_group_compiles():
    module, report = _compiled(onnx.load(str(MODELS / "gpt2.onnx")))
    kernels = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    by_symbol = {}
    for k in kernels:
        assert by_symbol.setdefault(k.symbol, k.source) == k.source
        assert f"def {k.symbol}(" in k.source
    assert len(by_symbol) == report.sources < len(kernels)  # the two layers share kernels
    # the batch dims reshapes bring back are the function's own, and a flatten's rows are
    # the expression batch*seq (no opaque unk__N): the kernels take the symbols as
    # parameters, and no group stays uncompiled (test_lower_semantics has one that must)
    assert not report.kept and not [op for op in module.walk() if isinstance(op, GroupOp)]
    assert [k for k in kernels if "batch: T.int32" in k.source]
    assert not [k for k in kernels if "unk__" in k.source.split("):")[0]]


def test_second_run_loads_the_cache_instead_of_compiling(cache, monkeypatch):
    module, _ = _compiled(_mlp())
    x = np.random.default_rng(1).standard_normal((3, 784)).astype(np.float32)
    before = dict(stats)
    first = TvmInterpreter(module).run(module.funcs[0], {"x": x})
    assert stats["compiled"] == before["compiled"] + 1
    files = sorted((cache / "tvm").glob("*.so"))
    assert len(files) == 1
    monkeypatch.setattr(executor, "_LOADED", {})  # as a new process would
    second = TvmInterpreter(module).run(module.funcs[0], {"x": x})
    assert stats["compiled"] == before["compiled"] + 1
    assert stats["cache_hits"] == before["cache_hits"] + 1
    assert sorted((cache / "tvm").glob("*.so")) == files
    np.testing.assert_array_equal(first["probs"], second["probs"])
    # and the reference runtime still understands kernel.tvm: it runs the region
    ref = run_function(module, {"x": x})
    np.testing.assert_allclose(first["probs"], ref["probs"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, symbol", [
    ("gpu_0/data_0", "gpu_0_data_0"), ("fc1.mm", "fc1_mm"), ("0", "k_0"), ("exp", "exp_k"),
    ("/m/Add_output_0", "_m_Add_output_0"), ("__x", "k__x"), (None, "kernel"),
])
def test_symbol_mangling(name, symbol):
    assert mangle(name) == symbol


def test_symbols_are_unique_and_keep_the_original_name():
    text = (pathlib.Path(__file__).parent / "filecheck" / "codegen_softmax.pir").read_text()
    module = parse_module(text)
    codegen_module(module)
    (k,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    assert k.symbol == "gpu_0_softmax_1" and k.attributes["pir.name"] == "gpu_0/softmax_1"



pir = cli


def test_cli_codegen_then_run(tmp_path):
    model = _mlp()
    onnx.save(model, tmp_path / "mlp.onnx")
    assert pir("import", tmp_path / "mlp.onnx", "-o", tmp_path / "m.pir")[0] == 0
    code, _, err = pir("codegen", tmp_path / "m.pir", "-o", tmp_path / "k.pir")
    assert code == 1 and "run `pir optimize -p decompose," in err
    assert pir("optimize", tmp_path / "m.pir", "-p", FUSE, "-o", tmp_path / "f.pir")[0] == 0
    code, _, err = pir("codegen", tmp_path / "f.pir", "--target", "llvm", "-o",
                       tmp_path / "k.pir", "--explain")
    assert code == 0 and "4 fusion groups -> kernel.tvm" in err
    for runtime in ("tvm", "reference"):
        code, out, err = pir("run", tmp_path / "k.pir", "--check", tmp_path / "mlp.onnx",
                             "--dim", "B=3", "--runtime", runtime, "--repeat", "2")
        assert code == 0, err
        assert "ok" in out
    x = np.ones((2, 784), np.float32)
    np.save(tmp_path / "x.npy", x)
    code, out, err = pir("run", tmp_path / "k.pir", "--input", f"x={tmp_path / 'x.npy'}",
                         "--repeat", "3")
    assert code == 0 and "latency: median" in err and "(TvmInterpreter)" in err
    code, out, _ = pir("codegen", "--help")
    assert code == 0 and "Example" in out
