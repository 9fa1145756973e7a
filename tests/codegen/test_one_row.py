"""A matmul by constant weights whose row count is symbolic also gets a kernel of one-row
tiles (pir.codegen.tvm.gemm_schedule.ROWS1), which a planned run takes when the rows are fewer than
the target's small_rows (a recurrent step's batch of one: a full tile would be 7 rows of
padding in 8); a static row count below the tile is its own tile."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

import tvm  # noqa: E402

from helpers import AVX2, AVX512  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.codegen.tvm.gemm_schedule import ROWS1  # noqa: E402
from pir.codegen.tvm.target import parse_target  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from pir.runtimes.tvm.executor import compile_program  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"
K, N = 64, 128


def _weights() -> np.ndarray:
    return (np.random.default_rng(5).standard_normal((K, N)) / 8).astype(np.float32)


def _module(rows: str, target: str = "llvm"):
    dense = "[" + ", ".join("[" + ", ".join(repr(float(v)) for v in row) + "]"
                            for row in _weights()) + "]"
    module = parse_module(f"""module {{
  func.func @main(%x: tensor<{rows}x{K}xf32>) -> (tensor<{rows}x{N}xf32>) {{
    %w = builtin.constant() {{value = dense<{dense}> : tensor<{K}x{N}xf32>}} : () -> tensor<{K}x{N}xf32>
    %y = nn.matmul(%x, %w) : (tensor<{rows}x{K}xf32>, tensor<{K}x{N}xf32>) -> tensor<{rows}x{N}xf32>
    %t = nn.tanh(%y) : (tensor<{rows}x{N}xf32>) -> tensor<{rows}x{N}xf32>
    func.return(%t) : (tensor<{rows}x{N}xf32>) -> ()
  }}
}}""")
    PassManager(parse_pipeline(FUSE)).run(module)
    assert not codegen_module(module, target).kept
    (op,) = [o for o in module.walk() if isinstance(o, TvmKernelOp)]
    return module, op


@pytest.mark.parametrize("target", [AVX512, AVX2])
def test_a_symbolic_row_count_gets_a_one_row_kernel_and_a_static_one_does_not(target):
    _, op = _module("B", target)
    assert f"def {op.symbol}{ROWS1}(" in op.source
    _, static = _module("24", target)
    assert ROWS1 not in static.source
    assert parse_target(target).small_rows == parse_target(target).gemm_rows // 2


def test_both_kernels_compute_the_product_at_every_row_count():
    module, op = _module("B")
    k = compile_program(module).kernel(op)
    assert k.one_row is not None and k.rows == "B"
    w = _weights()
    for rows in (1, 2, 3, 9):
        x = np.random.default_rng(rows).standard_normal((rows, K)).astype(np.float32)
        for fn in (k.fn, k.one_row):
            out = tvm.runtime.tensor(np.zeros((rows, N), np.float32))
            fn(tvm.runtime.tensor(x), *k.params, out)
            np.testing.assert_allclose(out.numpy(), np.tanh(x @ w), rtol=1e-5, atol=1e-6)


def test_a_planned_run_takes_the_kernel_its_row_count_calls_for():
    module, op = _module("B")
    interp = TvmInterpreter(module)
    w = _weights()
    k = interp.program.kernel(op)
    for rows in (1, 20, 1, 3):
        x = np.random.default_rng(rows).standard_normal((rows, K)).astype(np.float32)
        got = interp.run(module.funcs[0], {"x": x})["t"]
        np.testing.assert_allclose(got, np.tanh(x @ w), rtol=1e-5, atol=1e-6)
    # one plan per batch size; the steps of those below small_rows call the one-row kernel
    for (fn, symbols), plan in interp._plans.items():
        (step,) = [s for o, s in plan.steps if o is op]
        chosen = dict(zip(step.__code__.co_freevars,
                          (c.cell_contents for c in step.__closure__)))["fn"]
        want = k.one_row if dict(symbols)["B"] < k.small_rows else k.fn
        assert chosen is want


@pytest.mark.parametrize("k,n,small", [(16, 32, True), (512, 256, False)])
def test_a_step_that_reads_large_weights_is_not_small(k, n, small):
    # a recurrent step's product of one row by a large weight streams the weight: it gets
    # the whole pool although its operand and result are a few hundred floats
    from helpers import node_model

    from pir.frontends.onnx.importer import import_model

    w = (np.random.default_rng(1).standard_normal((k, n)) / 16).astype(np.float32)
    x = np.ones((1, k), np.float32)
    module = import_model(node_model("MatMul", {"x": x}, ["y"], initializers={"w": w},
                                     shapes={"x": ["B", k]}))
    PassManager(parse_pipeline(FUSE)).run(module)
    assert not codegen_module(module, "llvm").kept
    interp = TvmInterpreter(module)
    for _ in range(2):
        np.testing.assert_allclose(interp.run(module.funcs[0], {"x": x})["y"], x @ w,
                                   rtol=1e-5, atol=1e-5)
    (plan,) = interp._plans.values()
    kernels = [s for (op, _), s in zip(plan.steps, plan.small) if isinstance(op, TvmKernelOp)]
    assert kernels == [small]
