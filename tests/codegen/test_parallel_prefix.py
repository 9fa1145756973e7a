"""An elementwise or injective stage runs in parallel over the fewest leading loops that give
enough iterations (schedule._parallel_prefix: 64, for which the cases below are sized); the
loops after them stay nested, so that a long fused loop does not index every dim by a
division and a remainder."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tvm")

from pir.codegen.tvm import compile_block  # noqa: E402
from pir.ir.core import OPS, Block  # noqa: E402
from pir.ir.dialects import load_dialects  # noqa: E402
from pir.ir.dialects.func import ReturnOp  # noqa: E402
from pir.ir.types import DType, TensorType  # noqa: E402
from pir.runtimes.reference.interpreter import evaluate_op  # noqa: E402


@pytest.mark.parametrize("shape, parallel", [
    (("B", 4, 20, 20, 16), "B * 80"),   # the batch counts as 1: 4 x 20 reach 64
    ((2, 3, 9, 16), "54"),              # 2 x 3 x 9: every outer loop is needed
    ((130, 16), "130"),
])
def test_the_parallel_loop_takes_the_fewest_leading_loops(shape, parallel):
    load_dialects()
    block = Block([TensorType(DType.F32, shape)], ["x"])
    op = block.append(OPS["prim.exp"].build(block.args[0]))
    block.append(ReturnOp.build([op.results[0]]))
    kernel = compile_block(block)
    tir = kernel.mod.script()
    assert re.search(rf"T\.parallel\({re.escape(parallel)}\)", tir), tir
    assert "T.vectorized(16)" in tir
    concrete = tuple(2 if d == "B" else d for d in shape)
    x = np.random.default_rng(0).standard_normal(concrete).astype(np.float32)
    (want,) = evaluate_op(op, [x])
    (got,) = kernel(x)
    np.testing.assert_allclose(got, want, rtol=1e-5)
