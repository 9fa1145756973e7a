"""CUDA kernels named after values that C, POSIX, CUDA or C++ already declare.

An exporter named a value ``select`` (the `kernel_named_select` reproducer of
/work/shared/repro/real): its kernel was ``extern "C" __global__ void select``, which
collides with POSIX ``select()`` that the CUDA headers declare, and nvcc refused it.  Every
CUDA kernel symbol now starts with ``k_`` (pir.codegen.cuda.codegen.cuda_symbol), a prefix
no C, POSIX, CUDA or C++ name has.  The model is rebuilt here with onnx.helper (the same
graph as the reproducer), so the test needs nothing outside the repository.
"""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from pir.codegen.cuda.codegen import cuda_symbol

PIPELINE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None,
                                reason="nvcc is not on PATH: CUDA C is not compiled")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None,
                               reason="g++ is not on PATH: the host emulation cannot run")

#: Names the CUDA headers (or g++'s, for the host emulation) declare at global scope: the C
#: library, POSIX, libm, CUDA's device API and C++'s keywords and alternative tokens.
LIBRARY_NAMES = ("select", "read", "write", "open", "close", "time", "signal", "abs", "min",
                 "max", "exp", "log", "sin", "sinf", "printf", "malloc", "free", "memcpy",
                 "xor", "threadIdx", "clock", "rand", "index", "y0", "gamma", "main", "kill",
                 "sleep", "sync", "atomicAdd", "__syncthreads", "dim3", "class", "new")


def _select_model() -> onnx.ModelProto:
    """The reproducer: ``select = Relu(x) * 2`` and ``select`` is the graph's output."""
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Mul", ["r", "two"], ["select"])]
    graph = helper.make_graph(nodes, "select", [helper.make_tensor_value_info("x", 1, [4, 128])],
                              [helper.make_tensor_value_info("select", 1, [4, 128])], [two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _chain_model(names: tuple[str, ...]) -> onnx.ModelProto:
    """A chain of elementwise steps whose results take ``names``, a MatMul between two of
    them (a library call), so that each name heads a kernel of its own; each step adds its
    own constant, so that no two kernels are the same (those would share one symbol)."""
    nodes, inits, prev = [], [], "x"
    for i, name in enumerate(names):
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, [8, 8],
                                        np.eye(8, dtype=np.float32).ravel().tolist()))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Sigmoid", [f"m{i}"], [f"s{i}"]))
        inits.append(helper.make_tensor(f"c{i}", TensorProto.FLOAT, [], [float(i + 1)]))
        nodes.append(helper.make_node("Mul", [f"s{i}", f"m{i}"], [f"p{i}"]))
        nodes.append(helper.make_node("Add", [f"p{i}", f"c{i}"], [name]))
        prev = name
    graph = helper.make_graph(nodes, "names", [helper.make_tensor_value_info("x", 1, [4, 8])],
                              [helper.make_tensor_value_info(prev, 1, [4, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _cuda(model: onnx.ModelProto, generator: str = "native"):
    from pir.codegen.cuda.codegen import codegen_cuda
    from pir.frontends.onnx.importer import import_model
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline

    module = import_model(model, "<test>")
    PassManager(parse_pipeline(PIPELINE)).run(module)
    report = codegen_cuda(module, "sm_90", generator)
    assert report.kernels > 0, report.lines()
    return module


def _sources(module) -> dict[str, str]:
    from pir.ir.dialects.kernel import CudaKernelOp

    return {op.symbol: op.source for op in module.walk() if isinstance(op, CudaKernelOp)}


def _compile(sources: dict[str, str]) -> None:
    from pir.codegen.cuda.nvcc import compile_units, translation_units

    failures = [r for r in compile_units(translation_units(sources), ("sm_90",)) if not r.ok]
    assert not failures, "\n".join(f"unit {r.unit} ({r.arch}):\n{r.log}" for r in failures)


# -- the mangling ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, symbol", [
    ("select", "k_select"), ("gpu_0/data_0", "k_gpu_0_data_0"), ("fc1.mm", "k_fc1_mm"),
    ("0", "k_0"), ("/m/Add_output_0", "k_m_Add_output_0"), ("__x", "k_x"), ("a__b", "k_a_b"),
    ("x_", "k_x"), ("é", "k_kernel"), ("", "k_kernel"), (None, "k_kernel"),
])
def test_cuda_symbol(name, symbol):
    assert cuda_symbol(name) == symbol


@pytest.mark.parametrize("name", LIBRARY_NAMES)
def test_no_symbol_is_a_library_or_keyword_name(name):
    symbol = cuda_symbol(name)
    assert symbol.startswith("k_") and symbol.isidentifier() and "__" not in symbol
    assert symbol == cuda_symbol(name)  # deterministic


def test_symbols_stay_unique():
    """Names that mangle alike (``a.b``, ``a_b``) still get one symbol each."""
    nodes = [helper.make_node("Relu", ["x"], ["a.b"]),
             helper.make_node("MatMul", ["a.b", "w"], ["m"]),
             helper.make_node("Sigmoid", ["m"], ["a_b"])]
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 8], [0.5] * 64)
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [4, 8])],
                              [helper.make_tensor_value_info("a_b", 1, [4, 8])], [w])
    module = _cuda(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert sorted(_sources(module)) == ["k_a_b", "k_a_b_1"]


# -- the kernels compile ----------------------------------------------------------------------

def test_the_select_kernel_is_named_k_select():
    module = _cuda(_select_model())
    (symbol, source), = _sources(module).items()
    assert symbol == "k_select"
    assert 'extern "C" __global__ void __launch_bounds__(256) k_select(' in source


@needs_nvcc
@pytest.mark.parametrize("generator", ["native", "tvm"])
def test_the_select_model_compiles_with_nvcc(generator):
    _compile(_sources(_cuda(_select_model(), generator)))


@needs_nvcc
def test_kernels_named_after_library_functions_compile_with_nvcc():
    sources = _sources(_cuda(_chain_model(LIBRARY_NAMES)))
    assert sorted(sources) == sorted(cuda_symbol(n) for n in LIBRARY_NAMES)
    _compile(sources)


@needs_gxx
def test_the_select_kernel_runs_on_the_host_emulation():
    """g++ sees the same names through <cmath> and <thread>; the emulated kernel must build
    and compute Relu(x) * 2."""
    from pir.codegen.cuda.emulate import EmulatedInterpreter
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module

    module = parse_module(print_module(_cuda(_select_model())), "<test>")
    x = np.random.default_rng(0).standard_normal((4, 128)).astype(np.float32)
    interp = EmulatedInterpreter(module)
    got = interp.run(module.funcs[0], {"x": x})
    assert interp.launches == 1
    np.testing.assert_array_equal(got["select"], np.maximum(x, 0) * 2)


def test_symbols_of_long_names_are_bounded_and_still_distinct():
    """tf2onnx joins scope paths into names: basic-pitch's transcriber made a CUDA kernel
    whose source file name passed the 255 bytes a file system allows."""
    from pir.codegen.symbols import MAX_SYMBOL
    from pir.codegen.tvm.codegen import mangle

    long_a = "model_1/re_lu_3/Relu;" + "model_1/conv2d_4/Conv2D;" * 20 + "a"
    long_b = long_a[:-1] + "b"
    for make in (cuda_symbol, mangle):
        a, b = make(long_a), make(long_b)
        assert len(a) == len(b) == MAX_SYMBOL and a != b
        assert a == make(long_a) and a.startswith(make("model_1/re_lu_3")[:12])
        assert a.isidentifier()
