"""Plans for the blocks of regions (an nn.if's branches) and for the buffers of a plan's
outputs (pir/runtimes/tvm/executor.py, plan.py): a branch runs its kernels through a plan of
its own, the enclosing function's weights it reads are TVM tensors made once, only what an
output may view takes a new buffer each run, and a profile shows the branch's kernels."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"

# a weight and a bias defined by the function, read by both branches (Silero VAD's
# per-sample-rate If holds the whole model this way); %x has a symbolic batch B.  The bias
# has 128 elements: more than fusion copies into the groups that read it, so the branches'
# kernels take it as an operand from the enclosing block
N = 128
_DOT = ("prim.dot_general(LHS, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = "
        "[], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : "
        "(tensor<BxNxf32>, tensor<NxNxf32>) -> tensor<BxNxf32>")
_BRANCHY = f"""
module @m {{
  func.func @main(%x: tensor<BxNxf32>, %c: tensor<i1>) -> (tensor<BxNxf32>) {{
    %w = builtin.constant() {{value = dense<WEIGHTS> : tensor<NxNxf32>}} : () -> tensor<NxNxf32>
    %bias = builtin.constant() {{value = dense<BIAS> : tensor<Nxf32>}} : () -> tensor<Nxf32>
    %r = nn.if(%c) ({{
      %a = {_DOT.replace("LHS", "%x")}
      %bb = prim.broadcast_in_dim(%bias) {{broadcast_dimensions = [1]}} : (tensor<Nxf32>) -> tensor<BxNxf32>
      %ab = prim.add(%a, %bb) : (tensor<BxNxf32>, tensor<BxNxf32>) -> tensor<BxNxf32>
      %t = prim.tanh(%ab) : (tensor<BxNxf32>) -> tensor<BxNxf32>
      %b = {_DOT.replace("LHS", "%t")}
      %e = prim.exp(%b) : (tensor<BxNxf32>) -> tensor<BxNxf32>
      nn.yield(%e) : (tensor<BxNxf32>) -> ()
    }}, {{
      %a2 = {_DOT.replace("LHS", "%x")}
      %bb2 = prim.broadcast_in_dim(%bias) {{broadcast_dimensions = [1]}} : (tensor<Nxf32>) -> tensor<BxNxf32>
      %ab2 = prim.sub(%a2, %bb2) : (tensor<BxNxf32>, tensor<BxNxf32>) -> tensor<BxNxf32>
      %n = prim.neg(%ab2) : (tensor<BxNxf32>) -> tensor<BxNxf32>
      nn.yield(%n) : (tensor<BxNxf32>) -> ()
    }}) : (tensor<i1>) -> tensor<BxNxf32>
    func.return(%r) : (tensor<BxNxf32>) -> ()
  }}
}}
""".replace("xN", f"x{N}").replace("<N", f"<{N}")


def _weights() -> np.ndarray:
    return (np.random.default_rng(3).standard_normal((N, N)) / 16).astype(np.float32)


def _bias() -> np.ndarray:
    return np.linspace(-1, 1, N, dtype=np.float32)


def _dense(a: np.ndarray) -> str:
    if a.ndim == 1:
        return "[" + ", ".join(repr(float(v)) for v in a) + "]"
    return "[" + ", ".join(_dense(row) for row in a) + "]"


def _branchy():
    module = parse_module(_BRANCHY.replace("WEIGHTS", _dense(_weights()))
                          .replace("BIAS", _dense(_bias())))
    PassManager(parse_pipeline(FUSE)).run(module)
    reference = parse_module(print_module(module))
    assert not codegen_module(module, "llvm").kept
    return module, reference


def _region_plans(interp) -> list:
    return [p for p in interp._region_plans.values() if p is not None]


def test_a_branch_runs_its_kernels_through_a_plan_of_its_own():
    module, reference = _branchy()
    fn = module.funcs[0]
    interp = TvmInterpreter(module)
    rng = np.random.default_rng(4)
    runs = []
    for batch, cond in [(2, True), (2, False), (5, True), (2, True), (5, False)]:
        x = rng.standard_normal((batch, N)).astype(np.float32)
        runs.append((x, cond, interp.run(fn, {"x": x, "c": np.array(cond)})["r"]))
    # one plan per branch and binding of B: (then, 2), (else, 2), (then, 5), (else, 5)
    plans = _region_plans(interp)
    assert len(plans) == 4
    for plan in plans:
        kernels = [s for op, s in plan.steps if isinstance(op, TvmKernelOp)]
        assert kernels and all(s.__qualname__.startswith("Plan._kernel_step")
                               for s in kernels)
        # the weight the function defines is a constant of the branch's plan: its TVM
        # tensor is made once, not copied every run (a constant's array is read-only)
        assert any(v.name == "bias" for v in plan.constants)
    w, bias = _weights(), _bias()
    for x, cond, got in runs:  # a branch's result survives the runs after it
        want = np.exp(np.tanh(x @ w + bias) @ w) if cond else -(x @ w - bias)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        ref = run_function(reference, {"x": x, "c": np.array(cond)})["r"]
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_only_the_values_an_output_may_view_take_a_new_buffer_each_run():
    # the then-branch's first product and tanh die before its result is made: they reuse
    # slots; only the yielded value (what the caller keeps) is a new buffer each run.  A
    # slot shared with an output's would make every value in it a new buffer too
    module, _ = _branchy()
    interp = TvmInterpreter(module)
    for _ in range(2):
        interp.run(module.funcs[0], {"x": np.ones((3, N), np.float32), "c": np.array(True)})
    (plan,) = _region_plans(interp)
    fresh = {v for v, s in plan.slot_of.items() if plan.slots[s].fresh}
    term = plan.block.terminator
    assert fresh == {v for v in term.operands if v in plan.slot_of}
    assert len(plan.slot_of) > len(fresh)


def test_a_profile_shows_the_kernels_of_the_branch_that_ran():
    module, _ = _branchy()
    prof: dict = {}
    interp = TvmInterpreter(module, profile=prof)
    for _ in range(2):
        interp.run(module.funcs[0], {"x": np.ones((2, N), np.float32), "c": np.array(False)})
    then, other = (r.block for r in next(op for op in module.funcs[0].entry.ops
                                         if op.name == "nn.if").regions)
    ran = {op.symbol for op in other.ops if isinstance(op, TvmKernelOp)}
    kernels = {name for (what, name) in prof if what == "kernel"}
    assert ran <= kernels
    assert ("op", "nn.if") not in prof  # the branch's ops are the entries, not the if
