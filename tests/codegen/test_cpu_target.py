"""The CPU target kernels are scheduled for (pir/codegen/tvm/target.py): parsed from TVM's
target text, its vector width LLVM's for the named CPU, its tiles in the packed weights and
the TIR, a named target's output the same whatever machine makes it, the target recorded in
each kernel op and used again when ``pir run`` checks the kernel's source."""

from __future__ import annotations

import numpy as np
import onnx.helper as oh
import pytest

pytest.importorskip("tvm")

from pir.codegen.tvm import target as target_mod  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.codegen.tvm.target import DEFAULT_CORES, parse_target  # noqa: E402
from pir.errors import PirError  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from helpers import AVX2, AVX512, cli, graph_model, run_ort  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _weights(*shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 0.2).astype(np.float32)


def _compiled(model, target):
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    codegen_module(module, target)
    return module


def _kernels(module):
    return [op for op in module.walk() if isinstance(op, TvmKernelOp)]


def _runs_like_ort(model, module, x):
    want = run_ort(model, {"x": x})["y"]
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _mlp(n=96, k=64):
    nodes = [oh.make_node("MatMul", ["x", "w"], ["mm"]), oh.make_node("Add", ["mm", "b"], ["h"]),
             oh.make_node("Relu", ["h"], ["y"])]
    return graph_model(nodes, {"x": ["N", k]}, ["y"], {"w": _weights(k, n),
                                                        "b": _weights(n, seed=1)})


def _symbolic_conv(o=64, c=16):
    nodes = [oh.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                          strides=[2, 2]),
             oh.make_node("Relu", ["c"], ["y"])]
    return graph_model(nodes, {"x": ["N", c, "H", "W"]}, ["y"],
                       {"w": _weights(o, c, 3, 3), "b": _weights(o, seed=1)})


@pytest.mark.parametrize("mcpu,bits", [("skylake-avx512", 512), ("znver4", 512),
                                       ("znver3", 256), ("haswell", 256), ("x86-64", 128)])
def test_the_vector_width_is_llvms_for_the_named_cpu(mcpu, bits):
    cpu = parse_target(f"llvm -mcpu={mcpu}")
    assert (cpu.mcpu, cpu.vector_bits, cpu.cores) == (mcpu, bits, DEFAULT_CORES)
    # two vectors a panel; 16 accumulators of 32 registers, or 12 of 16
    assert cpu.panel_width == 2 * bits // 32
    assert cpu.gemm_rows == (8 if bits == 512 else 6)
    assert str(cpu) == f"llvm -mcpu={mcpu} -num-cores={DEFAULT_CORES}"
    assert parse_target(str(cpu)) == cpu  # the text a kernel op records reads back


def test_llvm_alone_is_this_machine():
    import os

    cpu = parse_target("llvm")
    assert cpu.mcpu == target_mod.host_cpu()
    assert cpu.cores == len(os.sched_getaffinity(0))
    assert parse_target("llvm -num-cores=3").cores == 3


@pytest.mark.parametrize("text,message", [
    ("llvm -mcpu=notacpu", "LLVM does not know the CPU 'notacpu'"),
    ("cuda", "a CPU target starts with 'llvm'"),
    ("llvm -mattr=+avx2", "unknown option '-mattr=+avx2'"),
    ("llvm -mcpu=znver3 -mcpu=haswell", "-mcpu given twice"),
    ("llvm -num-cores=two", "-num-cores must be a whole number"),
    ("llvm -num-cores=0", "-num-cores must be at least 1"),
])
def test_a_bad_target_is_a_clear_error(text, message):
    with pytest.raises(PirError) as e:
        parse_target(text)
    assert message in str(e.value)


def test_gemm_tiles_follow_the_target():
    model = _mlp()
    packed = {}
    for name, target in (("avx512", AVX512), ("avx2", AVX2)):
        module = _compiled(model, target)
        (kernel,) = _kernels(module)
        assert kernel.target == target
        packed[name] = kernel.body.block.ops[0].results[0].type.shape
        # columns in two vectors a row, rows unrolled: 8 x 32 with AVX-512, 6 x 16 with AVX2
        width, rows = (32, 8) if name == "avx512" else (16, 6)
        assert f"T.vectorized({width})" in kernel.source and f"T.unroll({rows})" in kernel.source
        x = np.random.default_rng(3).standard_normal((13, 64)).astype(np.float32)
        _runs_like_ort(model, module, x)
    assert packed == {"avx512": (3, 64, 32), "avx2": (6, 64, 16)}  # [N / BN, K, BN]


@pytest.mark.parametrize("o,avx2_rows", [(64, 4), (96, 6)])
def test_direct_conv_tiles_follow_the_target(o, avx2_rows):
    # a symbolic H x W: the direct form, its weights packed in tiles of output channels
    # (on AVX2 six of them where 6 divides the channels, else four)
    model = _symbolic_conv(o)
    for target, rows in ((AVX512, 16), (AVX2, avx2_rows)):
        module = _compiled(model, target)
        (kernel,) = _kernels(module)
        packed = kernel.body.block.ops[0].results[0].type.shape
        assert packed[0] * packed[-1] == o and packed[-1] == rows
        assert f"T.unroll({rows})" in kernel.source
        for shape in ((1, 16, 21, 30), (2, 16, 9, 14)):
            x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
            _runs_like_ort(model, module, x)


def test_winograd_panels_follow_the_target():
    # three static 3x3 convolutions: the middle one reads and writes channel blocks, and
    # is Winograd's, its U packed in panels of two of the target's vectors
    rng = np.random.default_rng(7)
    nodes, inits, prev = [], {}, "x"
    for i in range(3):
        inits[f"w{i}"] = (rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32)
        nodes.append(oh.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], kernel_shape=[3, 3],
                                  pads=[1, 1, 1, 1]))
        nodes.append(oh.make_node("Relu", [f"c{i}"], ["y" if i == 2 else f"r{i}"]))
        prev = f"r{i}"
    model = graph_model(nodes, {"x": [1, 32, 16, 16]}, ["y"], inits)
    x = rng.standard_normal((1, 32, 16, 16)).astype(np.float32)
    for target, panel in ((AVX512, 32), (AVX2, 16)):
        module = _compiled(model, target)
        (u,) = [op for k in _kernels(module) for op in k.body.block.ops
                if op.results and op.results[0].name and op.results[0].name.endswith(".winograd")]
        assert u.results[0].type.shape == (4, 4, 32 // panel, 32, panel)
        _runs_like_ort(model, module, x)


def test_a_named_target_makes_the_same_bytes_on_any_machine(monkeypatch, tmp_path):
    model = _mlp(n=512, k=256)
    first = print_module(_compiled(model, AVX2))
    # another machine: another CPU and core count, and no cached sources
    monkeypatch.setenv("PIR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(target_mod, "host_cpu", lambda: "skylake-avx512")
    monkeypatch.setattr(target_mod.os, "sched_getaffinity", lambda pid: set(range(64)))
    target_mod.cpu_target.cache_clear()
    try:
        assert parse_target("llvm").mcpu == "skylake-avx512"  # what `llvm` alone means there
        assert print_module(_compiled(model, AVX2)) == first
    finally:
        target_mod.cpu_target.cache_clear()


def test_targets_that_differ_in_cores_split_the_work_differently_and_agree():
    # 16 panels of 32 columns: at least 4 chunks of them for 4 cores, 16 for 16
    model = _mlp(n=512, k=256)
    few, many = (_compiled(model, f"llvm -mcpu=skylake-avx512 -num-cores={n}") for n in (4, 16))
    assert _kernels(few)[0].source != _kernels(many)[0].source
    x = np.random.default_rng(5).standard_normal((40, 256)).astype(np.float32)
    for module in (few, many):
        _runs_like_ort(model, module, x)


def test_run_checks_a_kernel_against_the_target_it_records(tmp_path):
    import onnx

    onnx.save(_mlp(), tmp_path / "m.onnx")
    assert cli("import", tmp_path / "m.onnx", "-o", tmp_path / "m.pir")[0] == 0
    assert cli("optimize", tmp_path / "m.pir", "-p", FUSE, "-o", tmp_path / "f.pir")[0] == 0
    code, _, err = cli("codegen", tmp_path / "f.pir", "--target", AVX512, "-o", tmp_path / "k.pir",
                       "--explain")
    assert code == 0, err
    assert f"scheduled for {AVX512} (512-bit vectors, GEMM tiles 8 x 32)" in err
    x = np.random.default_rng(6).standard_normal((5, 64)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    code, _, err = cli("run", tmp_path / "k.pir", "--inputs", tmp_path / "in.npz", "-o",
                       tmp_path / "out.npz")
    assert code == 0, err  # regenerated for skylake-avx512, whatever this machine is
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"],
                               run_ort(_mlp(), {"x": x})["y"], rtol=1e-4, atol=1e-4)
    # the AVX-512 source under another target is not what pir makes for that target
    text = (tmp_path / "k.pir").read_text().replace(AVX512, AVX2)
    (tmp_path / "edited.pir").write_text(text)
    code, _, err = cli("run", tmp_path / "edited.pir", "--inputs", tmp_path / "in.npz", "-o",
                       tmp_path / "out2.npz")
    assert code == 1 and "was not generated by this pir" in err


@pytest.mark.parametrize("target,code,message", [
    ("llvm -mcpu=notacpu", 1, "LLVM does not know the CPU 'notacpu'"),
    ("arm", 2, "is not 'llvm'"),
])
def test_codegen_refuses_a_bad_target(tmp_path, target, code, message):
    import onnx

    onnx.save(_mlp(), tmp_path / "m.onnx")
    assert cli("import", tmp_path / "m.onnx", "-o", tmp_path / "m.pir")[0] == 0
    assert cli("optimize", tmp_path / "m.pir", "-p", FUSE, "-o", tmp_path / "f.pir")[0] == 0
    got, _, err = cli("codegen", tmp_path / "f.pir", "--target", target, "-o", tmp_path / "k.pir")
    assert got == code and message in err and "Traceback" not in err
    assert not (tmp_path / "k.pir").exists()
