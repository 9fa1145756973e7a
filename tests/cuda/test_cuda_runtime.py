"""The cuda runtime (pir.runtimes.cuda): without a GPU it fails with a clear error; with
cupy replaced by a host stand-in (fake_cupy: kernels run on the host emulation) the whole
runtime runs: compile-and-load, the liveness-planned arena, launches through the calling
convention, cuBLAS calls, host ops between kernels, outputs back, --check."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from cuda_helpers import fused, needs_gxx
from helpers import cli

import fake_cupy

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def llama_cuda(tmp_path_factory):
    """tests/models/llama.onnx, fused and code-generated for CUDA (native), as a file."""
    from pir.codegen.cuda.codegen import codegen_cuda
    from pir.frontends.onnx.importer import import_model
    from pir.ir.printer import print_module

    module = fused(import_model(str(ROOT / "tests" / "models" / "llama.onnx")))
    codegen_cuda(module)
    path = tmp_path_factory.mktemp("cuda") / "llama.cuda.pir"
    path.write_text(print_module(module))
    return path


def test_without_a_gpu_run_fails_clearly(llama_cuda, monkeypatch):
    import sys

    from pir.runtimes.cuda import device

    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    device._probe.cache_clear()
    try:
        code, out, err = cli("run", llama_cuda, "--inputs", ROOT / "tests/models/llama.inputs.npz",
                             "--runtime", "cuda")
    finally:
        device._probe.cache_clear()
    assert code == 1
    assert "pir: error: the cuda runtime needs a CUDA GPU: cupy cannot be imported" in err
    assert "Traceback" not in err + out


def test_default_runtime_of_cuda_kernels_is_cuda(llama_cuda):
    from pir.ir.parser import parse_file_bytes
    from pir.runtimes.select import default_runtime

    module = parse_file_bytes(llama_cuda.read_bytes(), str(llama_cuda))
    assert default_runtime(module) == "cuda"


@needs_gxx
def test_runtime_on_the_emulated_device(llama_cuda, monkeypatch):
    from pir.ir.parser import parse_file_bytes
    from pir.runtimes.reference import run_function
    from pir.runtimes.select import make_interpreter

    fake_cupy.install(monkeypatch)
    module = parse_file_bytes(llama_cuda.read_bytes(), str(llama_cuda))
    feeds = dict(np.load(ROOT / "tests/models/llama.inputs.npz"))
    want = run_function(module, feeds)
    interp = make_interpreter(module, "cuda")
    got = interp.run(module.funcs[0], feeds)
    assert fake_cupy.stats["launches"] >= 20  # every kernel.cuda of both layers
    assert type(got["logits"]) is np.ndarray
    np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-5, atol=1e-5)
    # one arena for the run, smaller than every planned value side by side
    (plan,) = interp._plans.values()
    total = sum(int(np.prod(s)) * 4 for s in plan.shape.values())
    assert 0 < plan.size < total
    # a second run with another batch size plans again and still agrees
    feeds3 = {k: np.concatenate([v, v[:1]]) for k, v in feeds.items()}
    got3 = interp.run(module.funcs[0], feeds3)
    np.testing.assert_allclose(got3["logits"], run_function(module, feeds3)["logits"],
                               rtol=1e-5, atol=1e-5)
    assert len(interp._plans) == 2


@needs_gxx
def test_check_against_onnx_on_the_emulated_device(llama_cuda, monkeypatch):
    fake_cupy.install(monkeypatch)
    code, out, err = cli("run", llama_cuda, "--runtime", "cuda", "--check",
                         ROOT / "tests/models/llama.onnx")
    assert code == 0, err
    assert "logits" in out and "ok" in out


_FULL = __import__("os").environ.get("PIR_CUDA_FULL") == "1"


@needs_gxx
@pytest.mark.skipif(not _FULL, reason="every test model on the runtime: make cuda-check")
@pytest.mark.parametrize("name", ["gpt2", "bert", "t5", "whisper", "vit", "resnet",
                                  "mobilenet"])
def test_models_on_the_emulated_device(name, monkeypatch):
    from pir.codegen.cuda.codegen import codegen_cuda
    from pir.frontends.onnx.importer import import_model
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module
    from pir.runtimes.reference import run_function
    from pir.runtimes.select import make_interpreter

    fake_cupy.install(monkeypatch)
    module = fused(import_model(str(ROOT / "tests" / "models" / f"{name}.onnx")))
    feeds = dict(np.load(ROOT / "tests" / "models" / f"{name}.inputs.npz"))
    want = run_function(module, feeds)
    codegen_cuda(module)
    module = parse_module(print_module(module), name)
    got = make_interpreter(module, "cuda").run(module.funcs[0], feeds)
    for k, w in want.items():
        np.testing.assert_allclose(got[k], w, rtol=1e-4, atol=1e-5 * float(np.abs(w).max()))
