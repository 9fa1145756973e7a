"""Runs of a plan's kernel steps called in one native call (pir.runtimes.tvm.native_plan):
which steps a run takes, what it reads afresh each call (inputs, values other steps make,
the pooled buffers of outputs), and the paths that keep their per-op steps."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from pir.runtimes.tvm.ffi_abi import native_loops  # noqa: E402

pytestmark = pytest.mark.skipif(native_loops() is None, reason="native_loop.c does not build")

# three kernels (fusion is off): exp, tanh of it, and a product with an input; then a host
# op (nn.relu: not decomposed, so the reference rule runs it), then two kernels reading it
CHAIN = """
module @m {
  func.func @main(%x: tensor<Nx16xf32>, %y: tensor<Nx16xf32>)
      -> (tensor<Nx16xf32>, tensor<Nx16xf32>) {
    %e = prim.exp(%x) : (tensor<Nx16xf32>) -> tensor<Nx16xf32>
    %t = prim.tanh(%e) : (tensor<Nx16xf32>) -> tensor<Nx16xf32>
    %p = prim.mul(%t, %y) : (tensor<Nx16xf32>, tensor<Nx16xf32>) -> tensor<Nx16xf32>
    %r = nn.relu(%p) : (tensor<Nx16xf32>) -> tensor<Nx16xf32>
    %n = prim.neg(%r) : (tensor<Nx16xf32>) -> tensor<Nx16xf32>
    %s = prim.add(%n, %x) : (tensor<Nx16xf32>, tensor<Nx16xf32>) -> tensor<Nx16xf32>
    func.return(%p, %s) : (tensor<Nx16xf32>, tensor<Nx16xf32>) -> ()
  }
}
"""


def _compiled():
    module = parse_module(CHAIN)
    PassManager(parse_pipeline("fuse{max-group-ops=1 disable=horizontal}")).run(module)
    codegen_module(module, "llvm")
    return module, TvmInterpreter(module)


def _want(x, y):
    p = np.tanh(np.exp(x)) * y
    return p, -np.maximum(p, 0) + x


def _feeds(n: int, seed: int):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((n, 16)).astype(np.float32),
            "y": rng.standard_normal((n, 16)).astype(np.float32)}


def test_consecutive_kernels_run_in_one_call_around_a_host_op():
    module, interp = _compiled()
    fn = module.funcs[0]
    feeds = _feeds(8, 0)
    got = interp.run(fn, feeds)
    (plan,) = interp._plans.values()
    # exp, tanh, mul in one run; relu on the host; neg, add in a second run
    assert [len(r.ops) for r in plan.kernel_runs] == [3, 2]
    assert len(plan.fast) == 3
    for name, want in zip(("p", "s"), _want(**feeds)):
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)
    assert [r.calls for r in plan.kernel_runs] == [1, 1]


def test_each_call_reads_this_run_s_inputs_and_returns_arrays_of_its_own():
    module, interp = _compiled()
    fn = module.funcs[0]
    first_feeds, second_feeds = _feeds(8, 1), _feeds(8, 2)
    first = interp.run(fn, first_feeds)
    second = interp.run(fn, second_feeds)
    # the outputs of the first run are not overwritten by the second (pooled, not reused
    # while the caller holds them), and the second read its own inputs
    for got, feeds in ((first, first_feeds), (second, second_feeds)):
        for name, want in zip(("p", "s"), _want(**feeds)):
            np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)
    assert not np.shares_memory(first["p"], second["p"])
    (plan,) = interp._plans.values()
    assert [r.calls for r in plan.kernel_runs] == [2, 2]


def test_a_new_size_plans_new_runs():
    module, interp = _compiled()
    fn = module.funcs[0]
    for n in (8, 3, 8):
        feeds = _feeds(n, n)
        got = interp.run(fn, feeds)
        for name, want in zip(("p", "s"), _want(**feeds)):
            np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)
    assert len(interp._plans) == 2
    for plan in interp._plans.values():
        assert [len(r.ops) for r in plan.kernel_runs] == [3, 2]


@pytest.mark.parametrize("mode", ["profile", "keep_values"])
def test_profiles_and_kept_values_take_the_per_op_steps(mode):
    module, interp = _compiled()
    fn = module.funcs[0]
    feeds = _feeds(8, 3)
    interp.run(fn, feeds)
    (plan,) = interp._plans.values()
    if mode == "profile":
        interp.profile = {}
    else:
        interp.keep_values = True
    got = interp.run(fn, feeds)
    for name, want in zip(("p", "s"), _want(**feeds)):
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)
    assert [r.calls for r in plan.kernel_runs] == [1, 1]  # the first run only
    if mode == "profile":
        kernels = [k for k in interp.profile if k[0] == "kernel"]
        assert len(kernels) == 5  # an entry per kernel, not per run
    else:  # every value as its step made it: e, t, p, r, n, s
        np.testing.assert_allclose(interp.values[fn.entry.ops[0].results[0]],
                                   np.exp(feeds["x"]), rtol=1e-6)


def test_kernels_built_with_bounds_checks_keep_their_own_steps():
    # a failed bounds assertion names the kernel and the index through the per-op step
    module = parse_module(CHAIN)
    PassManager(parse_pipeline("fuse{max-group-ops=1 disable=horizontal}")).run(module)
    codegen_module(module, "llvm")
    interp = TvmInterpreter(module, check_bounds=True)
    feeds = _feeds(4, 5)
    got = interp.run(module.funcs[0], feeds)
    np.testing.assert_allclose(got["s"], _want(**feeds)[1], rtol=1e-6, atol=1e-6)
    (plan,) = interp._plans.values()
    assert plan.kernel_runs == [] and len(plan.fast) == len(plan.steps)
