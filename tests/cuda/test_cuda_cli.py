"""`pir codegen --target cuda`, the kernel.cuda / kernel.cublas ops, launch expressions, and
bench/gpu.py's dry run."""

from __future__ import annotations

import pathlib
import re
import shutil

import pytest
from cuda_helpers import PIPELINE
from helpers import cli

from pir.errors import PirError

ROOT = pathlib.Path(__file__).resolve().parents[2]
C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@pytest.fixture(scope="module")
def llama_fused(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    code, _, err = cli("import", ROOT / "tests/models/llama.onnx", "-o", d / "m.pir")
    assert code == 0, err
    code, _, err = cli("optimize", d / "m.pir", "-p", PIPELINE, "-o", d / "f.pir")
    assert code == 0, err
    return d / "f.pir"


def test_codegen_cuda_writes_kernels_sources_and_explains(llama_fused, tmp_path):
    out, src = tmp_path / "k.pir", tmp_path / "cu"
    code, _, err = cli("codegen", llama_fused, "--target", "cuda", "--arch", "sm_90",
                       "--emit-sources", src, "--explain", "-o", out)
    assert code == 0, err
    assert "-> kernel.cuda" in err and "-> kernel.cublas" in err
    assert "not compiled:" in err  # what stays on the host, and why (every group emits now)
    text = out.read_text()
    assert "kernel.cuda(" in text and "kernel.cublas(" in text
    files = sorted(src.glob("*.cu"))
    assert files
    from pir.ir.dialects.kernel import CudaKernelOp
    from pir.ir.parser import parse_file_bytes

    module = parse_file_bytes(out.read_bytes(), str(out))
    symbols = {op.symbol for op in module.walk() if isinstance(op, CudaKernelOp)}
    for f in files:
        assert C_IDENT.match(f.stem), f.stem  # ONNX names like /m/model/... made legal
        assert f"__launch_bounds__(256) {f.stem}(" in f.read_text() or \
            f"__launch_bounds__(128) {f.stem}(" in f.read_text()
    assert {f.stem for f in files} == symbols
    code, _, err = cli("verify", out)
    assert code == 0, err
    # the program still runs on the reference runtime (the kernels keep their regions)
    code, stdout, err = cli("run", out, "--inputs", ROOT / "tests/models/llama.inputs.npz",
                            "--runtime", "reference")
    assert code == 0 and "logits" in stdout, err


def test_codegen_cuda_with_tvm_kernels(llama_fused, tmp_path):
    out = tmp_path / "t.pir"
    code, _, err = cli("codegen", llama_fused, "--target", "cuda", "--kernels", "tvm",
                       "--explain", "-o", out)
    assert code == 0, err
    assert "codegen (cuda, tvm)" in err
    assert 'generator = "tvm"' in out.read_text()


def test_emit_sources_needs_cuda(llama_fused, tmp_path):
    code, _, err = cli("codegen", llama_fused, "--emit-sources", tmp_path / "x", "-o",
                       tmp_path / "k.pir")
    assert code == 1 and "--emit-sources writes CUDA kernels" in err


_KERNEL = """module @m {
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>) {
    %y = kernel.cuda(%x) ({
    ^bb0(%x_1: tensor<4xf32>):
      %y_1 = prim.neg(%x_1) : (tensor<4xf32>) -> tensor<4xf32>
      fusion.yield(%y_1) : (tensor<4xf32>) -> ()
    }) {symbol = "SYM", source = "extern \\"C\\" __global__ void SYM(const float* a, float* b) {}", arch = "sm_90", generator = "native", grid = "1", block = [BLOCK, 1, 1], args = [ARGS]} : (tensor<4xf32>) -> tensor<4xf32>
    func.return(%y) : (tensor<4xf32>) -> ()
  }
}
"""


@pytest.mark.parametrize("sym,block,args,message", [
    ("k", 32, '"in:0", "out:0"', None),
    ("1k", 32, '"in:0", "out:0"', "is not a C identifier"),
    ("k", 2048, '"in:0", "out:0"', "at most 1024 threads"),
    ("k", 32, '"in:0", "result:0"', "args entry 'result:0'"),
])
def test_kernel_cuda_verifier(tmp_path, sym, block, args, message):
    path = tmp_path / "k.pir"
    path.write_text(_KERNEL.replace("SYM", sym).replace("BLOCK", str(block))
                    .replace("ARGS", args))
    code, _, err = cli("verify", path)
    if message is None:
        assert code == 0, err
    else:
        assert code == 1 and message in err


def test_launch_expressions():
    from pir.codegen.cuda.launch import evaluate, evaluate_grid

    assert evaluate("min(cdiv({batch} * {seq} * 64, 1024), 8192)",
                    {"batch": 3, "seq": 100}) == 19
    assert evaluate("cdiv({unk__3}, 4)", {"unk__3": 9}) == 3
    assert evaluate_grid("{N}, 2", {"N": 5}) == (5, 2, 1)
    with pytest.raises(PirError, match="size of dim 'seq' is unknown"):
        evaluate("{seq}", {})
    with pytest.raises(PirError, match="unsupported form"):
        evaluate("__import__('os')", {})


def test_matmuls_become_cublas_calls():
    from cuda_helpers import parse

    from pir.codegen.cuda.codegen import codegen_cuda, matmul_form

    m = parse("""module @m {
  func.func @main(%x: tensor<Bx8x16xf32>, %w: tensor<16x4xf32>, %v: tensor<Bx16x4xf32>) -> (tensor<Bx8x4xf32>, tensor<Bx8x4xf32>) {
    %y = prim.dot_general(%x, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]} : (tensor<Bx8x16xf32>, tensor<16x4xf32>) -> tensor<Bx8x4xf32>
    %z = prim.dot_general(%x, %v) {lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]} : (tensor<Bx8x16xf32>, tensor<Bx16x4xf32>) -> tensor<Bx8x4xf32>
    func.return(%y, %z) : (tensor<Bx8x4xf32>, tensor<Bx8x4xf32>) -> ()
  }
}
""")
    assert all(matmul_form(op) for op in m.funcs[0].entry.ops[:2])
    report = codegen_cuda(m)
    assert report.cublas == 2
    assert [op.name for op in m.funcs[0].entry.ops] == ["kernel.cublas", "kernel.cublas",
                                                        "func.return"]


def test_gpu_bench_dry_run(capsys):
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import gpu
    finally:
        sys.path.pop(0)
    assert gpu.main(["--dry-run", "--models", "vit", "--ops", "gelu,rms", "--dtypes",
                     "f32,bf16", "--kernels", "native"]) == 0
    out = capsys.readouterr().out
    assert "gelu bf16 [native]" in out and "8-wide vector loads" in out
    assert "rms f32 [native]" in out and "input read once" in out
    assert "model vit [native]" in out
    if shutil.which("nvcc"):
        assert "nvcc sm_90 ok" in out and "FAILED" not in out
    with pytest.raises(SystemExit):
        gpu.main(["--dry-run", "--ops", "matmul"])


def test_gpu_bench_on_the_emulated_device(capsys, monkeypatch):
    """bench/gpu.py's GPU path, with cupy replaced by the host emulation (fake_cupy): the
    kernels are built, launched and "timed" and the table printed (the times mean nothing)."""
    import sys

    import fake_cupy

    if shutil.which("g++") is None:
        pytest.skip("g++ is not on PATH: the host emulation cannot run")
    fake_cupy.install(monkeypatch)
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import gpu
    finally:
        sys.path.pop(0)
    # (the models stage runs the cuda runtime, which test_cuda_runtime.py covers)
    assert gpu.main(["--n", "4", "--d", "256", "--ops", "rms,softmax", "--dtypes", "f32,bf16",
                     "--kernels", "native", "--models", "", "--repeat", "2",
                     "--no-torch"]) == 0
    out = capsys.readouterr().out
    assert "== fused kernels on [4, 256]" in out
    assert "rms        f32" in out and "softmax    bf16" in out
    assert "softmax bf16 [native]" in out and "ok" in out and "MISMATCH" not in out
