"""Long float32 sums in the generated CUDA C, run by the host emulation (see
test_cuda_emulated): a thread's f32 partial takes at most 16 terms (pir.codegen.sums) before
it is added into its f64 total, and the row's totals are combined in f64, so sums whose
sequential f32 result is visibly wrong come out within 1e-6 of the exact one.  The
reference runtime, which the emulated kernels are compared with, accumulates in f64."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_helpers import emulate_and_compare, needs_gxx
from helpers import node_model

from pir.frontends.onnx.importer import import_model

pytestmark = needs_gxx

BOUND = 1e-6  # relative to the exact result (the reference runtime, exact here)


def _sources(module) -> list[str]:
    from pir.ir.dialects.kernel import CudaKernelOp

    return [op.source for op in module.walk() if isinstance(op, CudaKernelOp)]


def _reduce_sum(x, axis: int, shapes=None):
    return node_model("ReduceSum", {"x": x}, ["y"], opset=18, keepdims=1, shapes=shapes,
                      initializers={"axes": np.array([axis], np.int64)})


def long_terms(rows: int, n: int) -> np.ndarray:
    """Rows of 1.0 and then n - 1 terms of 3e-8 (a sequential f32 sum stays at 1.0)."""
    x = np.full((rows, n), 3e-8, np.float32)
    x[:, 0] = 1.0
    return x


@pytest.mark.parametrize("n", [20001, 100_000])
def test_a_long_row_sum_by_a_block_per_row(n):
    x = long_terms(2, n)
    m, _ = emulate_and_compare(import_model(_reduce_sum(x, 1)), {"x": x}, rtol=BOUND, atol=0)
    (source,) = _sources(m)
    assert "a block of 1024 per row" in source.splitlines()[0]
    assert "double tot" in source and "__shfl_xor_sync(0xffffffffu, tot" in source


@pytest.mark.parametrize("n", [37, 5000, 20001])
def test_a_row_sum_of_run_time_length(n):
    # the thread's share is not known when the kernel is compiled: a counter flushes it
    x = long_terms(3, n)
    m, _ = emulate_and_compare(import_model(_reduce_sum(x, 1, shapes={"x": ["B", "N"]})),
                               {"x": x}, rtol=BOUND, atol=0)
    assert "int cnt" in _sources(m)[0]


def test_a_long_sum_over_a_leading_axis_is_a_blocked_serial_loop():
    x = np.ascontiguousarray(long_terms(3, 100_000).T)  # [100000, 3]: a sum down each column
    m, _ = emulate_and_compare(import_model(_reduce_sum(x, 0)), {"x": x}, rtol=BOUND, atol=0)
    (source,) = _sources(m)
    assert "pointwise" in source.splitlines()[0]
    assert "double tot" in source


def test_a_short_row_keeps_its_f32_accumulator():
    # a warp per row of 768: 24 terms a thread; one flush, the shuffles in f64
    x = np.random.default_rng(0).uniform(0.5, 1.5, (4, 768)).astype(np.float32)
    m, _ = emulate_and_compare(import_model(_reduce_sum(x, 1)), {"x": x}, rtol=BOUND, atol=0)
    assert "a warp per row" in _sources(m)[0].splitlines()[0]
    # rows of 512 or less: at most 16 terms a thread, the kernel of before (f32 only)
    x = x[:, :512].copy()
    m, _ = emulate_and_compare(import_model(_reduce_sum(x, 1)), {"x": x}, rtol=BOUND, atol=0)
    assert "double" not in _sources(m)[0]


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
def test_softmax_over_18710_classes_with_one_confident_class(op_type):
    # the long_softmax reproducer's shape and data: every other exp(x - max) is ~5e-8
    x = np.random.default_rng(1).uniform(-5.2, -4.8, (4, 18710)).astype(np.float32)
    x[:, 7] = 12.0
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(1, keepdims=True)
    lse = np.log(np.exp(shifted).sum(1, keepdims=True))
    want = np.exp(shifted - lse) if op_type == "Softmax" else shifted - lse
    model = node_model(op_type, {"x": x}, ["y"], axis=-1)
    emulate_and_compare(import_model(model), {"x": x}, rtol=0,
                        atol=BOUND * float(np.abs(want).max()))


def test_tvm_generated_kernels_accumulate_long_sums_in_f64():
    # --kernels tvm: DLight makes several kernels of the blocked form, so TVM's CUDA gets
    # one f64 accumulation (pir.codegen.sums.TVM_CUDA_SUMS), which it makes one kernel of
    x = long_terms(2, 20001)
    m, _ = emulate_and_compare(import_model(_reduce_sum(x, 1)), {"x": x}, kernels="tvm",
                               rtol=BOUND, atol=0)
    assert "double" in _sources(m)[0]
