"""Long float32 sums in the TVM lowering (pir.codegen.tvm.long_sums): taken in blocks of f32
partials whose sums are added in f64, exact to within a few ulp however long the row, with
the schedule or without it; sums over other dims accumulate in f64."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tvm")

import pir.ir.dialects.prim  # noqa: E402,F401  (registers the prim ops in OPS)
from pir.codegen.sums import CPU_SUMS, SumBlocks  # noqa: E402
from pir.codegen.tvm import build, lower_block  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.core import OPS, Block  # noqa: E402
from pir.ir.dialects.func import ReturnOp  # noqa: E402
from pir.ir.types import DType, TensorType  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from helpers import node_model  # noqa: E402

BOUND = 1e-6  # max |got - exact| / max |exact|, the bound the compiled kernels are held to


def long_terms(rows: int, n: int) -> np.ndarray:
    """Rows of 1.0 and then n - 1 terms of 3e-8, each under half an ulp of 1.0: one f32
    accumulator that takes them in turn stays at 1.0."""
    x = np.full((rows, n), 3e-8, np.float32)
    x[:, 0] = 1.0
    return x


def _sum_block(shape, axes, dtype=DType.F32):
    block = Block([TensorType(dtype, tuple(shape))], ["x"])
    op = OPS["prim.reduce_sum"].build(block.args[0], axes=axes, keepdims=True)
    block.append(op)
    block.append(ReturnOp.build([op.results[0]]))
    return block


def _error(got, exact) -> float:
    exact = np.asarray(exact, np.float64)
    return float(np.abs(got.astype(np.float64) - exact).max() / np.abs(exact).max())


@pytest.mark.parametrize("schedule", [True, False])
def test_a_row_of_100k_terms_is_exact_scheduled_or_not(schedule):
    x = long_terms(2, 100_000)
    exact = x.astype(np.float64).sum(1, keepdims=True)
    assert _error(np.cumsum(x, 1, dtype=np.float32)[:, -1:], exact) > 1e-3  # sequential
    kernel = lower_block(_sum_block(x.shape, [1]), "rows")
    assert kernel.long_sums  # blocks of f32 partials and their f64 total
    (got,) = build(kernel, schedule=schedule)(x)
    assert _error(got, exact) <= BOUND


def test_the_blocks_vectorise_and_add_in_f64():
    kernel = lower_block(_sum_block((4, 20001), [1]), "rows")
    script = build(kernel).mod.script()
    # the block partials: 64 lanes of 16 terms (CPU_SUMS), a vector of lanes at a time
    assert re.search(r"for \w+ in T\.vectorized\(64\):\s*with T\.sblock\(\"\w+_blocks\"\)",
                     script), script
    assert re.search(r"T\.Cast\(\"float64\", \w+_blocks\[", script)
    # 20001 = 19 blocks of 1024, then 8 vectors of 64 lanes, then 33 more
    assert re.search(r"\w+_blocks = T\.sblock_alloc_buffer\(\(4, 19, 64\)\)", script)
    assert re.search(r"T\.axis\.reduce\(8, ", script)
    assert re.search(r"T\.axis\.reduce\(33, ", script)
    assert CPU_SUMS.size == 1024


def test_a_short_row_keeps_its_f32_accumulators():
    # one block or less: the four 16-lane f32 accumulators of the row schedule, as before
    kernel = lower_block(_sum_block((4, 768), [1]), "rows")
    assert not kernel.long_sums
    assert "float64" not in build(kernel).mod.script()


@pytest.mark.parametrize("axes", [[0], [0, 1]])
def test_long_sums_over_other_dims_accumulate_in_f64(axes):
    x = np.ascontiguousarray(long_terms(3, 100_000).T)  # [100000, 3]: 1.0 first in each column
    exact = x.astype(np.float64).sum(tuple(axes), keepdims=True)
    kernel = lower_block(_sum_block(x.shape, axes), "cols")
    assert not kernel.long_sums
    for schedule in (True, False):
        (got,) = build(kernel, schedule=schedule)(x)
        assert _error(got, exact) <= BOUND


@pytest.mark.parametrize("sums", [CPU_SUMS, SumBlocks(terms=2, lanes=4)])
def test_symbolic_row_lengths_at_every_boundary(sums):
    """A row length known at run time: the whole blocks, the whole vectors of lanes and the
    rest are each empty for some lengths (a reduction over nothing leaves TIR's buffer
    unwritten, so each is selected only when it has terms)."""
    block = _sum_block(("B", "N"), [1])
    kernel = build(lower_block(block, "rows", sums))
    size, lanes = sums.size, sums.lanes
    lengths = sorted({1, lanes - 1, lanes, lanes + 1, size - 1, size, size + 1, 2 * size + lanes,
                      3 * size + lanes + 1, 20001} - {0})
    rng = np.random.default_rng(0)
    for n in lengths:
        x = rng.uniform(0.5, 1.5, (3, n)).astype(np.float32)
        x[:, 0] = 1e4  # a dominant first term
        (got,) = kernel(x)
        assert _error(got, x.astype(np.float64).sum(1, keepdims=True)) <= BOUND, n


@pytest.mark.parametrize("dtype", [DType.F16, DType.BF16])
def test_long_narrow_float_rows_round_once(dtype):
    from pir.runtimes.reference.interpreter import evaluate_op

    block = _sum_block((2, 5000), [1], dtype)
    x = np.full((2, 5000), 0.01, np.float32)
    x[:, 0] = 64.0
    arr = x.astype(dtype.numpy)
    (got,) = build(lower_block(block, "rows"))(arr)
    (want,) = evaluate_op(block.ops[0], [arr])  # f64, rounded to f32 and then to f16 / bf16
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_softmax_over_18710_classes_with_one_confident_class():
    # the long_softmax reproducer's shape: every other exp(x - max) is ~5e-8
    x = np.random.default_rng(1).uniform(-5.2, -4.8, (4, 18710)).astype(np.float32)
    x[:, 7] = 12.0
    model = node_model("Softmax", {"x": x}, ["y"], axis=-1)
    module = import_model(model)
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(module)
    kernel = lower_block(module.funcs[0].entry, "softmax")
    assert kernel.long_sums
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    (got,) = build(kernel)(x)
    assert _error(got, e / e.sum(1, keepdims=True)) <= BOUND
