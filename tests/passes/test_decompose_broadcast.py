"""Broadcasting between different dim expressions (pir.ir.typerules.broadcast_dims, the
decompose builder's ``_agree_with``): a dim that can never be 1 is the result's, and an
operand dim that may be 1 is read clamped, so that both of its possible run-time values
(1, stretched; or equal) are right."""

from __future__ import annotations

import numpy as np
import pytest

from pir.ir import dimexpr
from pir.ir.parser import parse_module
from pir.ir.typerules import broadcast_dims
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline
from pir.runtimes.reference import run_function

from helpers import op_names

UP = "(2*((H + 31) floordiv 32))"  # an upsampled pyramid level: even, never 1
LEVEL = "((H + 15) floordiv 16)"  # the level it is added to: 1 for H <= 16


def test_a_dim_that_is_never_one_is_the_broadcast_result():
    up, level = dimexpr.parse_dim_expr(UP[1:-1]), dimexpr.parse_dim_expr(LEVEL[1:-1])
    assert broadcast_dims(up, level) == up and broadcast_dims(level, up) == up
    assert broadcast_dims("H", "W") is None  # either may be 1: unknown
    assert broadcast_dims("H", 3) == 3


def test_a_maybe_one_operand_is_read_clamped_and_is_right_at_both_of_its_values():
    text = f"""module {{
  func.func @main(%image: tensor<Hxf32>, %t: tensor<2x{LEVEL}x5xf32>, %s: tensor<2x{UP}x5xf32>) -> (tensor<2x{UP}x5xf32>) {{
    %y = nn.add(%t, %s) : (tensor<2x{LEVEL}x5xf32>, tensor<2x{UP}x5xf32>) -> tensor<2x{UP}x5xf32>
    func.return(%y) : (tensor<2x{UP}x5xf32>) -> ()
  }}
}}
"""
    m = parse_module(text)
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(m)
    names = op_names(m)
    assert "nn.add" not in names and "prim.gather" in names
    assert "prim.reshape" not in names  # no linearized index between the two expressions
    rng = np.random.default_rng(2)
    for h, level, up in [(16, 1, 2), (32, 2, 2), (64, 4, 4)]:  # stretched, then equal
        t = rng.standard_normal((2, level, 5)).astype(np.float32)
        s = rng.standard_normal((2, up, 5)).astype(np.float32)
        got = run_function(m, {"image": np.zeros(h, np.float32), "t": t, "s": s})["y"]
        np.testing.assert_array_equal(got, t + s)


@pytest.mark.parametrize("declared", [LEVEL, UP])
def test_the_declared_result_names_the_dim(declared):
    # a file that declares the result as the maybe-one expression gets the never-one
    # operand renamed to it (a gather of its first positions); one that declares the
    # never-one expression gets the clamped read of the other
    text = f"""module {{
  func.func @main(%image: tensor<Hxf32>, %t: tensor<{LEVEL}xf32>, %s: tensor<{UP}xf32>) -> (tensor<{declared}xf32>) {{
    %y = nn.add(%t, %s) : (tensor<{LEVEL}xf32>, tensor<{UP}xf32>) -> tensor<{declared}xf32>
    func.return(%y) : (tensor<{declared}xf32>) -> ()
  }}
}}
"""
    m = parse_module(text)
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(m)
    assert ("prim.reduce_max" in op_names(m)) == (declared == UP)
    x = np.arange(2, dtype=np.float32)
    feeds = {"image": np.zeros(32, np.float32), "t": x, "s": 10 * x}  # H = 32: both are 2
    np.testing.assert_array_equal(run_function(m, feeds)["y"], 11 * x)
