"""The small passes: fold (size limit, names, resources, ops that would fail), cse (what
counts as the same op, scopes, names, idempotence) and dce (chains, side effects,
resources), each checked on the values the reference runtime computes."""

import pathlib

import numpy as np
import pytest

from pir.ir.dialects.builtin import ConstantOp
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.passes.dce import erase_dead_ops
from pir.passes.manager import PassManager, count_ops
from pir.passes.pipeline import parse_pipeline
from pir.runtimes.reference import run_function

from helpers import check_pipeline, op_names


def run(text_or_module, pipeline: str):
    m = parse_module(text_or_module) if isinstance(text_or_module, str) else text_or_module
    PassManager(parse_pipeline(pipeline)).run(m)
    return m


# -- fold ------------------------------------------------------------------------------------

IOTA = """module {{
  func.func @main(%x: tensor<{n}xi64>) -> (tensor<{n}xi64>) {{
    %a = prim.iota() {{dimension = 0}} : () -> tensor<{n}xi64>
    %b = prim.mul(%a, %a) : (tensor<{n}xi64>, tensor<{n}xi64>) -> tensor<{n}xi64>
    %y = prim.add(%x, %b) : (tensor<{n}xi64>, tensor<{n}xi64>) -> tensor<{n}xi64>
    func.return(%y) : (tensor<{n}xi64>) -> ()
  }}
}}
"""


@pytest.mark.parametrize("limit, folded", [(5, True), (4, False)])
def test_fold_size_limit_is_inclusive(limit, folded):
    m = parse_module(IOTA.format(n=5))
    feeds = {"x": np.arange(5, dtype=np.int64)}
    out = check_pipeline(m, feeds, f"fold{{size-limit={limit}}}")
    assert op_names(out) == (["builtin.constant", "prim.add", "func.return"] if folded else
                             ["prim.iota", "prim.mul", "prim.add", "func.return"])


def test_a_folded_value_keeps_its_name_and_a_big_one_becomes_a_resource():
    m = run(IOTA.format(n=40), "fold")
    (const,) = [op for op in m.funcs[0].walk() if isinstance(op, ConstantOp)]
    assert const.results[0].name == "b"
    assert list(m.resources) == ["b"]
    np.testing.assert_array_equal(m.resources["b"], np.arange(40) ** 2)
    assert 'value = resource<"b">' in print_module(m)


BROADCAST = """module {{
  func.func @main(%x: tensor<{n}x1xf32>) -> (tensor<{n}x1xf32>) {{
    %c = builtin.constant() {{value = dense<768.0> : tensor<f32>}} : () -> tensor<f32>
    %b = prim.broadcast_in_dim(%c) {{broadcast_dimensions = []}} : (tensor<f32>) -> tensor<{n}x1xf32>
    %y = prim.div(%x, %b) : (tensor<{n}x1xf32>, tensor<{n}x1xf32>) -> tensor<{n}x1xf32>
    func.return(%y) : (tensor<{n}x1xf32>) -> ()
  }}
}}
"""


@pytest.mark.parametrize("n, folded", [(1024, True), (1025, False)])
def test_fold_keeps_a_broadcast_that_would_expand_a_constant(n, folded):
    m = parse_module(BROADCAST.format(n=n))
    out = check_pipeline(m, {"x": np.arange(n, dtype=np.float32).reshape(n, 1)}, "fold")
    assert ("prim.broadcast_in_dim" not in op_names(out)) == folded


OUTER = """module {{
  func.func @main(%x: tensor<40x50xf32>) -> (tensor<40x50xf32>) {{
    %t = builtin.constant() {{value = dense<{t}> : tensor<{tshape}xf32>}} : () -> tensor<{tshape}xf32>
    %i = builtin.constant() {{value = dense<{i}> : tensor<{ishape}xf32>}} : () -> tensor<{ishape}xf32>
    %bt = prim.broadcast_in_dim(%t) {{broadcast_dimensions = [{tdims}]}} : (tensor<{tshape}xf32>) -> tensor<40x50xf32>
    %bi = prim.broadcast_in_dim(%i) {{broadcast_dimensions = [{idims}]}} : (tensor<{ishape}xf32>) -> tensor<40x50xf32>
    %s = prim.add(%bt, %bi) : (tensor<40x50xf32>, tensor<40x50xf32>) -> tensor<40x50xf32>
    %w = prim.sin(%s) : (tensor<40x50xf32>) -> tensor<40x50xf32>
    %y = prim.mul(%x, %w) : (tensor<40x50xf32>, tensor<40x50xf32>) -> tensor<40x50xf32>
    func.return(%y) : (tensor<40x50xf32>) -> ()
  }}
}}
"""


def _dense(shape, scale):
    vals = (np.arange(int(np.prod(shape)), dtype=np.float32) * scale).reshape(shape)
    return str(vals.tolist())


@pytest.mark.parametrize("case, folded", [
    # t[40, 1] + idx[50] varies along both dims: a dense filter, folded through the sin
    ({"t": _dense((40, 1), 0.5), "tshape": "40x1", "tdims": "0, 1",
      "i": _dense((50,), 0.25), "ishape": "50", "idims": "1"}, True),
    # both along dim 1 only: the sum is itself a broadcast, and folding would expand it
    ({"t": _dense((50,), 0.5), "tshape": "50", "tdims": "1",
      "i": _dense((50,), 0.25), "ishape": "50", "idims": "1"}, False),
], ids=["outer-sum", "same-axis"])
def test_fold_goes_through_broadcasts_whose_result_is_dense_anyway(case, folded):
    # an elementwise op on broadcasts of constants is folded when its result varies along
    # every dim (a resampler's windowed-sinc filter computed from two index vectors)
    m = parse_module(OUTER.format(**case))
    x = np.random.default_rng(3).standard_normal((40, 50)).astype(np.float32)
    out = check_pipeline(m, {"x": x}, "fold,dce")
    names = op_names(out)
    assert ("prim.sin" not in names) == folded
    assert ("prim.broadcast_in_dim" not in names) == folded
    assert "prim.mul" in names  # x is an input: its product stays


def test_an_op_that_would_fail_is_left_to_fail_at_run_time():
    text = """module {
  func.func @main() -> (tensor<2xf32>) {
    %t = builtin.constant() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %i = builtin.constant() {value = dense<[0, 7]> : tensor<2xi64>} : () -> tensor<2xi64>
    %g = prim.gather(%t, %i) {axis = 0} : (tensor<3xf32>, tensor<2xi64>) -> tensor<2xf32>
    func.return(%g) : (tensor<2xf32>) -> ()
  }
}
"""
    m = run(text, "fold")
    assert "prim.gather" in op_names(m)
    with pytest.raises(Exception, match="prim.gather"):
        run_function(m, {})


def test_fold_reaches_into_regions_and_drops_unused_resources():
    text = """module {
  func.func @main(%c: tensor<i1>) -> (tensor<20xi64>) {
    %z = nn.if(%c) ({
      %a = prim.iota() {dimension = 0} : () -> tensor<20xi64>
      nn.yield(%a) : (tensor<20xi64>) -> ()
    }, {
      %b = prim.iota() {dimension = 0} : () -> tensor<20xi64>
      %n = prim.neg(%b) : (tensor<20xi64>) -> tensor<20xi64>
      nn.yield(%n) : (tensor<20xi64>) -> ()
    }) : (tensor<i1>) -> tensor<20xi64>
    func.return(%z) : (tensor<20xi64>) -> ()
  }
}
"""
    m = parse_module(text)
    for c in (True, False):
        before = run_function(m, {"c": np.array(c)})
        after = run_function(run(print_module(m), "fold"), {"c": np.array(c)})
        np.testing.assert_array_equal(after["z"], before["z"])
    out = run(text, "fold")
    assert op_names(out) == ["nn.if", "builtin.constant", "nn.yield", "builtin.constant",
                             "nn.yield", "func.return"]
    assert sorted(out.resources) == ["a", "n"]  # b was folded into n, then dropped


# -- cse -------------------------------------------------------------------------------------

def test_cse_numerics_names_and_idempotence():
    text = """module {
  func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>) {
    %a = nn.mul(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b = nn.mul(%y, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %c = nn.div(%a, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %d = nn.div(%b, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %e = nn.div(%y, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %s = nn.add(%c, %d) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t = nn.add(%s, %e) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return(%t) : (tensor<4xf32>) -> ()
  }
}
"""
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal(4).astype(np.float32),
             "y": rng.uniform(1, 2, 4).astype(np.float32)}
    out = check_pipeline(parse_module(text), feeds, "cse")
    # b is a; d is then c (div is not commutative, so e stays); s adds c to itself.
    assert [line.split(" : ")[0].strip() for line in print_module(out).splitlines()[2:-2]] == [
        "%a = nn.mul(%x, %y)", "%c = nn.div(%a, %y)", "%e = nn.div(%y, %a)",
        "%s = nn.add(%c, %c)", "%t = nn.add(%s, %e)", "func.return(%t)"]
    again = print_module(out)
    assert print_module(run(out, "cse")) == again


def test_cse_does_not_merge_across_sibling_regions_or_outward():
    text = """module {
  func.func @main(%c: tensor<i1>, %x: tensor<2xf32>) -> (tensor<2xf32>) {
    %z = nn.if(%c) ({
      %t = nn.exp(%x) : (tensor<2xf32>) -> tensor<2xf32>
      nn.yield(%t) : (tensor<2xf32>) -> ()
    }, {
      %u = nn.exp(%x) : (tensor<2xf32>) -> tensor<2xf32>
      %v = nn.neg(%u) : (tensor<2xf32>) -> tensor<2xf32>
      nn.yield(%v) : (tensor<2xf32>) -> ()
    }) : (tensor<i1>) -> tensor<2xf32>
    %w = nn.exp(%x) : (tensor<2xf32>) -> tensor<2xf32>
    %r = nn.add(%z, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return(%r) : (tensor<2xf32>) -> ()
  }
}
"""
    m = parse_module(text)
    out = run(text, "cse")
    assert op_names(out) == op_names(m)  # nothing dominates anything else here
    for c in (True, False):
        feeds = {"c": np.array(c), "x": np.array([0.5, -1.0], np.float32)}
        np.testing.assert_array_equal(run_function(out, feeds)["r"], run_function(m, feeds)["r"])


# -- dce -------------------------------------------------------------------------------------

def test_dce_removes_a_long_dead_chain_in_one_sweep():
    ops = ["%n0 = nn.neg(%x) : (tensor<3xf32>) -> tensor<3xf32>"]
    ops += [f"%n{i} = nn.exp(%n{i - 1}) : (tensor<3xf32>) -> tensor<3xf32>" for i in range(1, 50)]
    text = ("module {\n  func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>) {\n    "
            + "\n    ".join(ops) + "\n    func.return(%x) : (tensor<3xf32>) -> ()\n  }\n}\n")
    m = parse_module(text)
    assert erase_dead_ops(m.funcs[0].entry) == 50
    assert count_ops(m) == 1


def test_dce_keeps_draws_and_used_resources():
    path = pathlib.Path(__file__).parent / "filecheck" / "dce_basic.pir"
    m = parse_module(path.read_text(), path.name)
    assert sorted(m.resources) == ["w_dead", "w_used"]
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal((4, 5)).astype(np.float32), "c": np.array(False)}
    out = check_pipeline(m, feeds, "dce")
    assert sorted(out.resources) == ["w_used"]
    assert "prim.random_normal" in op_names(out)
    assert count_ops(out) == count_ops(m) - 5  # w_dead, a, b, d and the branch's dead exp
