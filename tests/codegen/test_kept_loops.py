"""A heavy row kernel that streams from memory (softmax over rows far larger than the caches):
its row sum is taken as the exponentials are made, and it is built with its loops kept
(schedule.NO_UNROLL, pir/runtimes/tvm/library.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tvm")

import tvm  # noqa: E402
import tvm_ffi  # noqa: E402
from tvm import tirx  # noqa: E402
from tvm.s_tir.stmt import SBlockRealize  # noqa: E402

from pir.codegen.tvm import schedule  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter, executor, library  # noqa: E402
from rows import D, row_kernel, row_model  # noqa: E402


def _blocks(stmt) -> list:
    found: list = []
    tvm_ffi.structural_walk(stmt, [(SBlockRealize, lambda r: found.append(r.block))])
    return found


def _blocks_per_loop(func) -> list[tuple[int, set[str]]]:
    """(extent, names of the blocks under it) for every static loop of ``func`` inside its
    (parallel) row loop."""
    loops: list = []
    tvm_ffi.structural_walk(func.body, [(tirx.For, loops.append)])
    return [(int(loop.extent), {b.name_hint for b in _blocks(loop.body)})
            for loop in loops if isinstance(loop.extent, tirx.IntImm)
            and loop.kind != tirx.ForKind.PARALLEL]


def _exp_and_sum_blocks(func) -> tuple[str, str]:
    """The names of the block that writes the exponentials (exp's 2**n is a reinterpret) and
    of the partial sums' block that reads them."""
    blocks = [b for b in _blocks(func.body) if b.name_hint != "root"]
    made = [b for b in blocks if "reinterpret" in str(b.body)]
    assert len(made) == 1, made
    row = made[0].writes[0].source.name
    summed = [b for b in blocks if b.name_hint.endswith("_rf")
              and any(r.source.name == row for r in b.reads)]
    assert len(summed) == 1, summed
    return made[0].name_hint, summed[0].name_hint


def test_a_streamed_softmax_sums_each_vector_of_exponentials_as_it_writes_it(streaming):
    kernel = row_kernel("softmax", 80)
    func = kernel.mod[kernel.kernel.name]
    made, summed = _exp_and_sum_blocks(func)
    # one loop of 48 vectors holds both: the sum is not a pass of its own over the row
    assert any(extent == D // 16 and {made, summed} <= names
               for extent, names in _blocks_per_loop(func))
    x = np.random.default_rng(1).standard_normal((80, D)).astype(np.float32) * 4
    (got,) = kernel(x)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-6, atol=1e-9)


def test_rows_the_caches_hold_keep_a_pass_per_sum():
    # four accumulators for a row in L1: the sum stays a pass of its own, unrolled 4 ways
    func = (k := row_kernel("softmax", 80)).mod[k.kernel.name]
    made, summed = _exp_and_sum_blocks(func)
    assert not any({made, summed} <= names for _, names in _blocks_per_loop(func))


@pytest.mark.parametrize("kind, rows, keeps", [("softmax", 80, True), ("softmax", 8, False),
                                               ("rms", 80, False)])
def test_only_a_heavy_streamed_row_kernel_asks_to_keep_its_loops(streaming, kind, rows, keeps):
    # softmax over 80 rows streams (over the patched threshold), over 8 it does not; RMSNorm
    # is light (7 ops per element) and measured as fast unrolled
    func = (k := row_kernel(kind, rows)).mod[k.kernel.name]
    assert bool(func.attrs.get(schedule.NO_UNROLL, False)) == keeps
    assert library.wants_loops(k.mod.script()) == keeps


def _has_avx512() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


def _softmax_program(rows: int):
    module = import_model(row_model("softmax", rows))
    PassManager(parse_pipeline("decompose,canonicalize,fold,cse,dce,shapes,fuse")).run(module)
    codegen_module(module, "llvm")
    return module


def test_a_kernel_that_keeps_its_loops_is_built_rolled_and_computes_the_same(streaming):
    (sym, kept), = executor.kernel_sources(_softmax_program(80)).items()
    assert library.wants_loops(kept)
    unrolled = kept.replace(f'"{schedule.NO_UNROLL}": True, ', "")
    assert not library.wants_loops(unrolled)
    target = executor.host_target()
    builds = {name: library.build_sources({sym: src}, target)
              for name, src in (("kept", kept), ("unrolled", unrolled))}
    # vector loads in the optimised LLVM IR: the max and scale passes unrolled load each of
    # a row's 48 vectors by an instruction of its own (98 loads here), kept they loop (31)
    loads = {name: len(re.findall(r"= load <", lib.inspect_source("ll")))
             for name, lib in builds.items()}
    # (on a CPU without AVX-512 a row is 96 vectors of 8, which LLVM does not unroll in
    # full anyway: there the kept build only must not load more)
    if _has_avx512():
        assert loads["kept"] < loads["unrolled"] / 2
    else:
        assert loads["kept"] <= loads["unrolled"]
    x = np.random.default_rng(2).standard_normal((80, D)).astype(np.float32)
    outs = {}
    for name, lib in builds.items():
        y = tvm.runtime.empty((80, D), "float32", tvm.cpu())
        lib.get_function(sym, query_imports=True)(tvm.runtime.tensor(x), y)
        outs[name] = y.numpy()
    np.testing.assert_array_equal(outs["kept"], outs["unrolled"])


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_program_with_kept_and_unrolled_kernels_builds_one_library(streaming, monkeypatch,
                                                                       cache, jobs):
    # the streamed softmax (loops kept) and a small one (unrolled) in one program: the kept
    # part is built after the others, alone, and linked into the same library
    monkeypatch.setenv("PIR_BUILD_JOBS", jobs)
    big = _softmax_program(80)
    (sym, kept), = executor.kernel_sources(big).items()
    (small_sym, small), = executor.kernel_sources(_softmax_program(8)).items()
    sources = {sym: kept, "small": small.replace(f"def {small_sym}(", "def small(")}
    assert [library.wants_loops(s) for s in sources.values()] == [True, False]
    path = cache / "tvm" / "both.so"
    library.build_library(sources, executor.host_target(), path)
    # one library on disk; in memory, one module that imports the kept kernels' module
    for lib in (tvm.runtime.load_module(str(path)),
                library.build_sources(sources, executor.host_target())):
        for name, rows in ((sym, 80), ("small", 8)):
            x = np.random.default_rng(rows).standard_normal((rows, D)).astype(np.float32)
            y = tvm.runtime.empty((rows, D), "float32", tvm.cpu())
            lib.get_function(name, query_imports=True)(tvm.runtime.tensor(x), y)
            e = np.exp(x - x.max(1, keepdims=True))
            np.testing.assert_allclose(y.numpy(), e / e.sum(1, keepdims=True), rtol=1e-6)
    # and through the runtime, which builds (here: loads) the program's library itself
    got = TvmInterpreter(big).run(big.funcs[0], {"x": np.ones((80, D), np.float32)})["y"]
    np.testing.assert_allclose(got, np.full((80, D), 1 / D, np.float32), rtol=1e-6)
