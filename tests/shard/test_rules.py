"""The SPMD rules, family by family: the decision each gives, and that running the op on
ranks as decided gives the single-device result (``simulate``)."""

import re

import pytest
from click.testing import CliRunner

from pir.cli.main import main
from pir.coverage import all_ops
from pir.errors import PirError
from pir.ir.dialects.dist import Mesh
from pir.ir.types import DType
from pir.passes.shard import REPLICATED, SPMD, Sharding, backward, forward, infer, rule_for
from pir.passes.shard.registry import ops_without_rule, replicate_all
from pir.passes.shard.rules_shape import reshape_groups
from rules_harness import MESH, S, T, make, simulate

R2 = S(None, None)


def matmul(m=4, k=8, n=6):
    return make("prim.dot_general", T(m, k), T(k, n), lhs_contracting_dimensions=[1],
                rhs_contracting_dimensions=[0])


# (op, operand shardings, expected decision)
FORWARD = {
    # elementwise: one rule, partials carried by linearity
    "add-split": (lambda: make("prim.add", T(4, 6), T(4, 6)), [S("dp", None), None],
                  "[dp, _], [dp, _] -> [dp, _]"),
    "add-conflict": (lambda: make("prim.add", T(4, 6), T(4, 6)), [S("dp", "tp"), S("tp", None)],
                     "[dp, tp], [dp, tp] -> [dp, tp]"),
    "add-partial": (lambda: make("prim.add", T(4, 6), T(4, 6)), [S(None, None, tp="sum"), R2],
                    "[_, _] partial{tp=sum}, [_, _] partial{tp=sum} -> [_, _] partial{tp=sum}"),
    "add-mixed-kinds": (lambda: make("prim.add", T(4, 6), T(4, 6)),
                        [S(None, None, tp="sum"), S(None, None, tp="max")], "[_, _], [_, _] -> [_, _]"),
    "mul-one-partial": (lambda: make("prim.mul", T(4, 6), T(4, 6)),
                        [S("dp", None, tp="avg"), S(None, None, tp="avg")],
                        "[dp, _] partial{tp=avg}, [dp, _] -> [dp, _] partial{tp=avg}"),
    "div-divisor-reduced": (lambda: make("prim.div", T(4, 6), T(4, 6)), [R2, S(None, None, tp="sum")],
                            "[_, _], [_, _] -> [_, _]"),
    "exp-sum-reduced": (lambda: make("prim.exp", T(4, 6)), [S(None, "tp", dp="sum")],
                        "[_, tp] -> [_, tp]"),
    "exp-max-carried": (lambda: make("prim.exp", T(4, 6)), [S(None, "tp", dp="max")],
                        "[_, tp] partial{dp=max} -> [_, tp] partial{dp=max}"),
    "max-max": (lambda: make("prim.max", T(4, 6), T(4, 6)), [S(None, None, dp="max"), R2],
                "[_, _] partial{dp=max}, [_, _] partial{dp=max} -> [_, _] partial{dp=max}"),
    "select": (lambda: make("prim.select", T(4, 6, dtype="i1"), T(4, 6), T(4, 6)),
               [S("dp", None), S(None, None, tp="sum"), None],
               "[dp, _], [dp, _] partial{tp=sum}, [dp, _] partial{tp=sum} -> [dp, _] partial{tp=sum}"),
    "cast-to-bool": (lambda: make("prim.cast", T(4, 6), dtype=DType.BOOL), [S(None, None, tp="max")],
                     "[_, _] -> [_, _]"),
    "cast-widen": (lambda: make("prim.cast", T(4, 6, dtype="f32"), dtype=DType.F64),
                   [S("tp", None, dp="min")], "[tp, _] partial{dp=min} -> [tp, _] partial{dp=min}"),
    "compare": (lambda: make("prim.lt", T(4, 6), T(4, 6)), [None, S(None, "tp")],
                "[_, tp], [_, tp] -> [_, tp]"),
    "indivisible": (lambda: make("prim.neg", T(3, 6)), [S("dp", "tp")], "[_, tp] -> [_, tp]"),
    # shape ops
    "broadcast": (lambda: make("prim.broadcast_in_dim", T(1, 6), result_types=[T(4, 3, 6)],
                               broadcast_dimensions=[1, 2]), [S(None, "tp", dp="sum")],
                  "[_, tp] partial{dp=sum} -> [_, _, tp] partial{dp=sum}"),
    "reshape-merge": (lambda: make("prim.reshape", T(4, 2, 6), result_types=[T(8, 6)]),
                      [S("dp", "tp", None)], "[dp, _, _] -> [dp, _]"),
    "reshape-split": (lambda: make("prim.reshape", T(8, 6), result_types=[T(4, 2, 3, 2)]),
                      [S(("dp", "tp"), None)], "[(dp,tp), _] -> [(dp,tp), _, _, _]"),
    "reshape-split-indivisible": (lambda: make("prim.reshape", T(8, 6), result_types=[T(2, 4, 6)]),
                                  [S(("dp", "tp"), None)],
                                  "[dp, _] -> [dp, _, _]"),
    "reshape-symbols": (lambda: make("prim.reshape", T("B", 12), result_types=[T("B", 3, 4)]),
                        [S("dp", "tp")], "[dp, _] -> [dp, _, _]"),
    "transpose": (lambda: make("prim.transpose", T(4, 6, 2), permutation=[2, 0, 1]),
                  [S("dp", "tp", None)],
                  "[dp, tp, _] -> [_, dp, tp]"),
    "slice": (lambda: make("prim.slice", T(4, 6), start_indices=[1, 0], limit_indices=[3, 6]),
              [S("dp", "tp")], "[_, tp] -> [_, tp]"),
    "pad": (lambda: make("prim.pad", T(4, 6), T(), edge_padding_low=[0, 1],
                         edge_padding_high=[0, 0]), [S("dp", "tp"), None],
            "[dp, _], [] -> [dp, _]"),
    "pad-partial": (lambda: make("prim.pad", T(4, 6), T(), edge_padding_low=[1, 0],
                                 edge_padding_high=[1, 0]), [S(None, "tp", dp="sum"), None],
                    "[_, tp] partial{dp=sum}, [] partial{dp=sum} -> [_, tp] partial{dp=sum}"),
    "concat": (lambda: make("prim.concat", T(4, 6), T(2, 6), variadic=True, dimension=0),
               [S("dp", "tp"), None], "[_, tp], [_, tp] -> [_, tp]"),
    # indexing
    "gather": (lambda: make("prim.gather", T(10, 6), T(4, 2, dtype="i64"), axis=0),
               [S("tp", "dp"), S("tp", None)], "[_, dp], [tp, _] -> [tp, _, dp]"),
    "scatter-add": (lambda: make("prim.scatter_add", T(10, 6), T(4, dtype="i64"), T(4, 6), axis=0),
                    [None, S("dp"), S(None, "tp")],
                    "[_, tp] partial{dp=sum}, [dp], [dp, tp] -> [_, tp] partial{dp=sum}"),
    "dynamic-slice": (lambda: make("prim.dynamic_slice", T(4, 6), T(2, dtype="i64"),
                                   slice_sizes=[2, 6]), [S("dp", "tp"), None],
                      "[_, tp], [_] -> [_, tp]"),
    "dynamic-update-slice": (lambda: make("prim.dynamic_update_slice", T(4, 6), T(4, 2),
                                          T(2, dtype="i64")), [S("dp", "tp"), None, None],
                             "[dp, _], [dp, _], [_] -> [dp, _]"),
    # reductions
    "reduce-sum": (lambda: make("prim.reduce_sum", T(4, 6), axes=[1]), [S("dp", "tp")],
                   "[dp, tp] -> [dp] partial{tp=sum}"),
    "reduce-sum-of-partial": (lambda: make("prim.reduce_sum", T(4, 6), axes=[0], keepdims=True),
                              [S(None, "tp", dp="avg")],
                              "[_, tp] partial{dp=avg} -> [_, tp] partial{dp=avg}"),
    "reduce-max": (lambda: make("prim.reduce_max", T(4, 6), axes=[0, 1]), [S("dp", "tp")],
                   "[dp, tp] -> [] partial{dp=max, tp=max}"),
    "reduce-min-keepdims": (lambda: make("prim.reduce_min", T(4, 6), axes=[1], keepdims=True),
                            [S("dp", "tp")], "[dp, tp] -> [dp, _] partial{tp=min}"),
    "reduce-prod": (lambda: make("prim.reduce_prod", T(4, 6), axes=[1]), [S("dp", "tp")],
                    "[dp, _] -> [dp]"),
    "argmax": (lambda: make("prim.argmax", T(4, 6), axis=1), [S("dp", "tp")],
               "[dp, _] -> [dp]"),
    "cumsum": (lambda: make("prim.cumsum", T(4, 6), axis=1), [S(None, "tp", dp="sum")],
               "[_, _] partial{dp=sum} -> [_, _] partial{dp=sum}"),
    "sort": (lambda: make("prim.sort", T(4, 6), axis=1), [S("dp", "tp")],
             "[dp, _] -> [dp, _], [dp, _]"),
    # contractions
    "matmul-column": (matmul, [S("dp", None), S(None, "tp")], "[dp, _], [_, tp] -> [dp, tp]"),
    "matmul-row": (matmul, [S("dp", "tp"), S("tp", None)],
                   "[dp, tp], [tp, _] -> [dp, _] partial{tp=sum}"),
    "matmul-contracted-one-side": (matmul, [S(None, "tp"), None],
                                   "[_, tp], [tp, _] -> [_, _] partial{tp=sum}"),
    "matmul-partial-lhs": (matmul, [S(None, None, dp="sum"), S(None, "tp")],
                           "[_, _] partial{dp=sum}, [_, tp] -> [_, tp] partial{dp=sum}"),
    "batch-matmul": (lambda: make("prim.dot_general", T(4, 2, 6), T(4, 6, 4),
                                  lhs_batching_dimensions=[0], rhs_batching_dimensions=[0],
                                  lhs_contracting_dimensions=[2], rhs_contracting_dimensions=[1]),
                     [S("dp", None, None), S(None, None, "tp")],
                     "[dp, _, _], [dp, _, tp] -> [dp, _, tp]"),
    "conv-batch-and-out-channels": (lambda: make("prim.conv", T(4, 2, 5, 5), T(4, 2, 3, 3)),
                                    [S("dp", None, None, None), S("tp", None, None, None)],
                                    "[dp, _, _, _], [tp, _, _, _] -> [dp, tp, _, _]"),
    "conv-in-channels": (lambda: make("prim.conv", T(2, 4, 5, 5), T(3, 4, 3, 3)),
                         [S(None, "tp", "dp", None), None],
                         "[_, tp, _, _], [_, tp, _, _] -> [_, _, _, _] partial{tp=sum}"),
    "conv-grouped": (lambda: make("prim.conv", T(2, 4, 5, 5), T(4, 2, 3, 3), feature_group_count=2),
                     [S("dp", "tp", None, None), S("tp", None, None, None)],
                     "[dp, _, _, _], [_, _, _, _] -> [dp, _, _, _]"),
    # generators
    "iota": (lambda: make("prim.iota", result_types=[T(4, 6)], dimension=1), [], "-> [_, _]"),
    "random": (lambda: make("prim.random_uniform", result_types=[T(4, 6)], seed=1), [], "-> [_, _]"),
}


@pytest.mark.parametrize("case", FORWARD)
def test_forward_decision_and_its_run_on_ranks(case):
    build, ins, expected = FORWARD[case]
    op = build()
    d = forward(op, ins, MESH)
    assert str(d).strip() == expected
    simulate(op, d)


BACKWARD = {
    "matmul": (matmul, [S("dp", "tp")], "[dp, _], [_, tp] -> [dp, tp]"),
    "elementwise": (lambda: make("prim.mul", T(4, 6), T(4, 6)), [S(None, "tp", dp="sum")],
                    "[_, tp], [_, tp] -> [_, tp]"),  # wanted partials are the rule's to make
    "broadcast-new-dim": (lambda: make("prim.broadcast_in_dim", T(6), result_types=[T(4, 6)],
                                       broadcast_dimensions=[1]), [S("dp", "tp")],
                          "[tp] -> [dp, tp]"),
    "reshape": (lambda: make("prim.reshape", T(8, 6), result_types=[T(2, 4, 6)]),
                [S("dp", "tp", None)], "[dp, _] -> [dp, _, _]"),
    "slice-out": (lambda: make("prim.slice", T(4, 6), start_indices=[0, 0], limit_indices=[4, 4]),
                  [S("dp", "tp")], "[dp, _] -> [dp, _]"),
    "iota": (lambda: make("prim.iota", result_types=[T(4, 6)], dimension=1), [S("dp", "tp")],
             "-> [dp, _]"),
    "reduce": (lambda: make("prim.reduce_sum", T(4, 6), axes=[1]), [S("dp")], "[dp, _] -> [dp]"),
}


@pytest.mark.parametrize("case", BACKWARD)
def test_backward_decision_and_its_run_on_ranks(case):
    build, outs, expected = BACKWARD[case]
    op = build()
    d = backward(op, outs, MESH)
    assert str(d).strip() == expected
    simulate(op, d)


def test_operands_win_over_wanted_results():
    d = infer(matmul(), [S("dp", None), None], [S("tp", None)], MESH)
    assert str(d) == "[dp, _], [_, _] -> [dp, _]"


def test_megatron_mlp_needs_one_reduction():
    """Column-parallel then row-parallel: the only partial value is the last sum."""
    x, w1, b1, w2, b2 = R2, S(None, "tp"), S("tp"), S("tp", None), S(None)
    h = forward(matmul(4, 8, 6), [x, w1], MESH).outputs[0]
    bb = forward(make("prim.broadcast_in_dim", T(6), result_types=[T(4, 6)],
                      broadcast_dimensions=[1]), [b1], MESH).outputs[0]
    h = forward(make("prim.add", T(4, 6), T(4, 6)), [h, bb], MESH).outputs[0]
    h = forward(make("prim.tanh", T(4, 6)), [h], MESH).outputs[0]
    assert h == S(None, "tp")
    y = forward(matmul(4, 6, 8), [h, w2], MESH).outputs[0]
    assert y == S(None, None, tp="sum")
    add = forward(make("prim.add", T(4, 8), T(4, 8)), [y, S(None, None)], MESH)
    assert add.outputs[0] == S(None, None, tp="sum")  # the bias joins the partial sum
    assert add.inputs[1] == S(None, None, tp="sum")  # locally: on one rank, zeros elsewhere
    del b2


def test_two_mesh_axes_may_split_one_dim_in_mesh_order():
    op = make("prim.neg", T(8, 6))
    assert forward(op, [S(("dp", "tp"), None)], MESH).outputs[0] == S(("dp", "tp"), None)
    # the other nesting is not a layout the placements can say: the inner axis is dropped
    assert forward(op, [S(("tp", "dp"), None)], MESH).outputs[0] == S("tp", None)


def test_reshape_groups():
    assert reshape_groups((4, 1, 6), (4, 6)) == [([0], [0]), ([1, 2], [1])]
    assert reshape_groups((2, 3, 4), (6, 4)) == [([0, 1], [0]), ([2], [1])]
    assert reshape_groups((24,), (2, 3, 4)) == [([0], [0, 1, 2])]
    assert reshape_groups(("B", 6), ("B", 2, 3)) == [([0], [0]), ([1], [1, 2])]
    assert reshape_groups(("B", 6), (12, "C")) == [([0, 1], [0, 1])]  # opaque: one group
    assert reshape_groups((4, 6), (4, 6, 1)) == [([0], [0]), ([1], [1]), ([], [2])]


# -- sharding conversions --------------------------------------------------------------------

def test_sharding_to_and_from_placements():
    from pir.ir.dialects.dist import DistTensorType, parse_placements

    t = DistTensorType(DType.F32, (8, 6), MESH, parse_placements("[P(avg), S(0)]"))
    s = Sharding.of_type(t)
    assert s == S("tp", None, dp="avg") and str(s) == "[tp, _] partial{dp=avg}"
    assert s.to_type(t.tensor, MESH) == t
    assert Sharding.of_type(t.tensor) == R2
    with pytest.raises(PirError, match="dim 0 is split by tp, dp, not in the order"):
        S(("tp", "dp"), None).placements(MESH)
    with pytest.raises(PirError, match="mesh axis 'dp' is used twice"):
        S("dp", "dp")
    with pytest.raises(PirError, match=r"cannot lay out tensor<3x6xf32> as \[dp, _\]: dim 0 \(3\)"):
        S("dp", None).to_type(T(3, 6, dtype="f32"), MESH)


# -- the table -------------------------------------------------------------------------------

def test_every_prim_op_has_a_rule_or_runs_replicated():
    prim = all_ops(["prim"])
    assert ops_without_rule([make_stub(n) for n in prim]) == []
    assert set(REPLICATED) == {"prim.random_uniform", "prim.random_normal"}
    assert len(SPMD) + len(REPLICATED) == len(prim)
    assert rule_for("prim.random_normal") is replicate_all


def make_stub(name):
    class Stub:
        pass

    s = Stub()
    s.name = name
    return s


def test_pir_ops_requires_shard():
    r = CliRunner().invoke(main, ["ops", "--require", "shard", "--dialect", "prim"])
    assert r.exit_code == 0, r.stderr
    n = len(all_ops(["prim"]))
    assert re.search(rf"^shard +{n}/{n} prim ops +{n - 2} +2 replicate +0$", r.stdout, re.M)


def test_a_missing_rule_names_the_op_and_the_transformation():
    with pytest.raises(PirError, match=r"nn.matmul has no SPMD rule \(shard\)"):
        rule_for("nn.matmul")


@pytest.mark.parametrize("ins, message", [
    ([S("pp", None), None], r"the sharding \[pp, _\] of operand 0 uses pp, not axes of mesh<dp=2,tp=2>"),
    ([S("dp"), None], r"operand 0 has rank 2, its sharding \[dp\] rank 1"),
])
def test_bad_inputs_to_a_rule(ins, message):
    with pytest.raises(PirError, match=message):
        forward(matmul(), ins, MESH)


def test_rules_are_pure_functions_of_the_mesh():
    op = matmul()
    ins = [S("dp", None), S(None, "tp")]
    assert forward(op, ins, MESH) == forward(op, ins, MESH)
    small = Mesh.parse("dp=3,tp=2")  # 3 does not divide 4: the rows stay whole
    assert str(forward(op, ins, small)) == "[_, _], [_, tp] -> [_, tp]"
