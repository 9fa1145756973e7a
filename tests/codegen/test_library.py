"""The build of a program's kernels into one shared library, a part per CPU side by side
(pir/runtimes/tvm/library.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.errors import PirError  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter, executor, library  # noqa: E402

# three groups of different structure (three distinct kernels): exp, a row sum, a scale
TEXT = """
module @m {
  func.func @main(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x1xf32>, tensor<8x32xf32>) {
    %e = prim.exp(%x) : (tensor<8x32xf32>) -> tensor<8x32xf32>
    %s = prim.reduce_sum(%e) {axes = [1], keepdims = true} : (tensor<8x32xf32>) -> tensor<8x1xf32>
    %t = prim.tanh(%e) : (tensor<8x32xf32>) -> tensor<8x32xf32>
    %u = prim.mul(%t, %x) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
    func.return(%e, %s, %u) : (tensor<8x32xf32>, tensor<8x1xf32>, tensor<8x32xf32>) -> ()
  }
}
"""


def test_partition_balances_source_length_and_keeps_every_kernel():
    sources = {f"k{i}": "x" * n for i, n in enumerate([900, 100, 500, 450, 50, 400])}
    parts = library._partition(sources, 2)
    assert sorted(k for p in parts for k in p) == sorted(sources)
    sizes = sorted(sum(len(s) for s in p.values()) for p in parts)
    assert sizes == [1100, 1300]  # longest first into the lighter part: 900+400 | 500+450+...
    assert len(library._partition(sources, 10)) == len(sources)  # no empty parts


@pytest.mark.parametrize("jobs", ["1", "2", "3"])
def test_parts_built_side_by_side_link_into_one_library(jobs, monkeypatch):
    monkeypatch.setenv("PIR_BUILD_JOBS", jobs)
    module = parse_module(TEXT)
    PassManager(parse_pipeline("fuse{max-group-ops=1}")).run(module)
    report = codegen_module(module, "llvm")
    assert report.sources >= 3
    x = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})
    e = np.exp(x)
    np.testing.assert_allclose(got["e"], e, rtol=1e-6)
    np.testing.assert_allclose(got["s"], e.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(got["u"], np.tanh(e) * x, rtol=1e-5, atol=1e-6)


def test_a_bad_source_in_one_part_fails_the_build_and_leaves_no_library(cache, monkeypatch):
    monkeypatch.setenv("PIR_BUILD_JOBS", "2")
    module = parse_module(TEXT)
    PassManager(parse_pipeline("fuse{max-group-ops=1}")).run(module)
    codegen_module(module, "llvm")
    sources = executor.kernel_sources(module)
    sym = sorted(sources)[-1]
    sources[sym] = sources[sym].replace("T.prim_func", "T.prim_fnuc")
    with pytest.raises(PirError, match=f"kernel {sym}: cannot parse"):
        library.build_library(sources, executor.host_target(), cache / "tvm" / "x.so")
    assert not list((cache / "tvm").glob("*.so"))
