"""Decomposition of reductions, arg-reductions, scans and top-k into prim ops: the reference
runtime gives the same results before and after `decompose` on random inputs of several shapes
(symbolic dims included), and no nn op is left; ops a rule cannot handle stay, with the reason."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_pipeline, node_model, op_names

from pir.frontends.onnx.importer import import_model
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline

rng = np.random.default_rng(7)

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]


def positive(*shape, dtype=np.float32):
    return rng.uniform(0.5, 2.0, shape).astype(dtype)  # log-sums need positive sums


def decomposes_fully(model, feeds_list, rtol=1e-5, atol=1e-6):
    """Import ``model``; for each feed dict, check `decompose` keeps the results; assert that
    only prim and builtin ops remain.  Returns the last decomposed module."""
    module = import_model(model)
    for feeds in feeds_list:
        out = check_pipeline(module, feeds, "decompose", rtol=rtol, atol=atol)
        left = [n for n in op_names(out) if n.startswith("nn.")]
        assert not left, f"not decomposed: {left}"
    return out


def stays(model, capsys) -> str:
    """Run `decompose{explain}` and return what it says about the op that stays."""
    module = import_model(model)
    PassManager(parse_pipeline("decompose{explain=true}")).run(module)
    assert any(n.startswith("nn.") for n in op_names(module))
    return capsys.readouterr().err


# -- nn.reduce_* ----------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", REDUCE_OPS)
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, -1], 0), (None, 1), (None, 0)])
def test_reductions_with_symbolic_dims(op_type, axes, keepdims):
    inits = {} if axes is None else {"axes": np.array(axes, np.int64)}
    x = positive(2, 3, 4)
    model = node_model(op_type, {"x": x}, ["y"], opset=18, initializers=inits,
                       keepdims=keepdims, shapes={"x": ["B", 3, "S"]})
    decomposes_fully(model, [{"x": x}, {"x": positive(5, 3, 1)}, {"x": positive(1, 3, 7)}])


@pytest.mark.parametrize("op_type", REDUCE_OPS)
def test_reductions_of_static_shapes_with_repeated_axes(op_type):
    x = positive(3, 2, 4)
    model = node_model(op_type, {"x": x}, ["y"], opset=18,
                       initializers={"axes": np.array([2, -1, 0], np.int64)}, keepdims=0)
    out = decomposes_fully(model, [{"x": x}])
    assert "prim.reduce_" + {"ReduceMax": "max", "ReduceMin": "min", "ReduceProd": "prod"}.get(
        op_type, "sum") in op_names(out)


def test_mean_over_static_dims_divides_by_a_constant():
    x = positive(2, 3, 4)
    model = node_model("ReduceMean", {"x": x}, ["y"], initializers={"axes": np.array([1, 2])},
                       keepdims=0, shapes={"x": ["B", 3, 4]})
    out = decomposes_fully(model, [{"x": x}])
    assert op_names(out).count("prim.reduce_sum") == 1  # no count computed at run time


@pytest.mark.parametrize("op_type", ["ReduceSumSquare", "ReduceLogSum", "ReduceL1"])
@pytest.mark.parametrize("noop", [0, 1])
def test_empty_axes_reduce_all_or_nothing(op_type, noop):
    x = positive(2, 3)
    model = node_model(op_type, {"x": x}, ["y"], opset=18, noop_with_empty_axes=noop,
                       initializers={"axes": np.zeros(0, np.int64)}, keepdims=0)
    out = decomposes_fully(model, [{"x": x}])
    assert any(n.startswith("prim.reduce_") for n in op_names(out)) == (not noop)


def test_reduction_over_no_axes_of_a_function_output_is_a_named_copy():
    """Its value is the input itself, which cannot carry the output's name: a same-type
    reshape does."""
    x = positive(2, 3)
    model = node_model("ReduceSum", {"x": x}, ["y"], opset=18, noop_with_empty_axes=1)
    out = check_pipeline(import_model(model), {"x": x}, "decompose")
    assert [op.name for op in out.funcs[0].walk() if "." in op.name and not
            op.name.startswith(("func.", "builtin."))] == ["prim.reshape"]


@pytest.mark.parametrize("op_type", REDUCE_OPS)
def test_reductions_of_an_empty_set(op_type):
    x = np.zeros((2, 0, 3), np.float32)
    model = node_model(op_type, {"x": x}, ["y"], opset=18,
                       initializers={"axes": np.array([1], np.int64)}, keepdims=1)
    decomposes_fully(model, [{"x": x}])


def test_log_sum_exp_is_stable_for_large_inputs():
    x = np.array([[1000.0, 1000.0, -np.inf], [-np.inf, -np.inf, -np.inf]], np.float32)
    model = node_model("ReduceLogSumExp", {"x": x}, ["y"], opset=18,
                       initializers={"axes": np.array([1], np.int64)}, keepdims=0)
    out = decomposes_fully(model, [{"x": x}])
    from pir.runtimes.reference import run_function
    y = run_function(out, {"x": x})["y"]
    np.testing.assert_allclose(y, [1000 + np.log(2), -np.inf], rtol=1e-6)


@pytest.mark.parametrize("op_type", ["ReduceMax", "ReduceMin"])
def test_boolean_max_min(op_type):
    x = np.array([[True, False], [False, False], [True, True]])
    model = node_model(op_type, {"x": x}, ["y"], opset=20, shapes={"x": [3, "N"]},
                       initializers={"axes": np.array([1], np.int64)}, keepdims=0)
    decomposes_fully(model, [{"x": x}, {"x": np.zeros((3, 0), bool)}])  # any/all of nothing


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean", "ReduceL2", "ReduceSumSquare",
                                     "ReduceLogSumExp", "ReduceProd"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_reductions(op_type, dtype):
    x = rng.integers(-5, 9, (3, 4)).astype(dtype)
    model = node_model(op_type, {"x": x}, ["y"], opset=18,
                       initializers={"axes": np.array([1], np.int64)}, keepdims=0)
    decomposes_fully(model, [{"x": x}])


@pytest.mark.parametrize("op_type", ["ReduceMean", "ReduceL2", "ReduceLogSumExp"])
def test_half_precision_is_computed_in_f32(op_type):
    x = positive(4, 64, dtype=np.float16)
    model = node_model(op_type, {"x": x}, ["y"], opset=18,
                       initializers={"axes": np.array([1], np.int64)}, keepdims=0)
    out = decomposes_fully(model, [{"x": x}], rtol=1e-3)
    assert "prim.cast" in op_names(out)


def test_axes_known_only_at_run_time_keep_the_op(capsys):
    x, axes = positive(2, 3), np.array([1], np.int64)
    model = node_model("ReduceSum", {"x": x, "axes": axes}, ["y"], opset=18)
    assert "nn.reduce_sum stays: the axes are known only at run time" in stays(model, capsys)


# -- arg-reductions -------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis,keepdims,last", [(0, 1, 0), (1, 0, 0), (-1, 1, 1), (2, 0, 1)])
def test_arg_reductions(op_type, axis, keepdims, last):
    x = rng.integers(0, 3, (3, 4, 5)).astype(np.float32)  # many ties: first vs last matters
    model = node_model(op_type, {"x": x}, ["y"], axis=axis, keepdims=keepdims,
                       select_last_index=last, shapes={"x": ["B", 4, 5]})
    x2 = rng.integers(0, 3, (6, 4, 5)).astype(np.float32)
    out = decomposes_fully(model, [{"x": x}, {"x": x2}])
    assert "prim." + op_type.lower() in op_names(out)


# -- scans ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type,opset", [("CumSum", 21), ("CumProd", 26)])
@pytest.mark.parametrize("axis,exclusive,reverse", [(0, 0, 0), (1, 1, 0), (-1, 0, 1), (1, 1, 1)])
def test_scans(op_type, opset, axis, exclusive, reverse):
    x = positive(3, 5)
    model = node_model(op_type, {"x": x}, ["y"], opset=opset,
                       initializers={"axis": np.array(axis, np.int32)},
                       exclusive=exclusive, reverse=reverse)
    decomposes_fully(model, [{"x": x}])


@pytest.mark.parametrize("n", [2, 7, 8, 9])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cum_prod_of_integers_over_a_symbolic_batch(n, exclusive, reverse):
    x = rng.integers(-3, 4, (2, n)).astype(np.int64)  # zeros and signs, which log/exp would lose
    model = node_model("CumProd", {"x": x}, ["y"], opset=26, shapes={"x": ["B", n]},
                       initializers={"axis": np.array(1, np.int64)},
                       exclusive=exclusive, reverse=reverse)
    x2 = rng.integers(-3, 4, (4, n)).astype(np.int64)
    out = decomposes_fully(model, [{"x": x}, {"x": x2}])
    steps = int(np.ceil(np.log2(n)))
    assert op_names(out).count("prim.pad") == steps + exclusive


def test_cum_sum_over_a_symbolic_axis():
    x = positive(2, 6)
    model = node_model("CumSum", {"x": x}, ["y"], shapes={"x": [2, "S"]},
                       initializers={"axis": np.array(1, np.int64)}, exclusive=1)
    decomposes_fully(model, [{"x": x}, {"x": positive(2, 3)}])


def test_cum_prod_over_a_symbolic_axis_stays(capsys):
    x = positive(2, 6)
    model = node_model("CumProd", {"x": x}, ["y"], opset=26, shapes={"x": [2, "S"]},
                       initializers={"axis": np.array(1, np.int64)})
    why = stays(model, capsys)
    assert "nn.cum_prod stays: the scanned dim must be static" in why


# -- top-k ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("axis,k", [(-1, 2), (0, 3), (1, 4)])
def test_top_k(largest, axis, k):
    x = rng.integers(0, 4, (3, 4, 5)).astype(np.float32)  # ties: the lower index comes first
    shape = [3, 4, 5]
    shape[0 if axis != 0 else 2] = "B"
    model = node_model("TopK", {"x": x}, ["values", "indices"], axis=axis, largest=largest,
                       initializers={"k": np.array([k], np.int64)}, shapes={"x": shape})
    out = decomposes_fully(model, [{"x": x}])
    assert "prim.sort" in op_names(out)


def test_top_k_of_every_element_needs_no_slice():
    x = positive(2, 3)
    model = node_model("TopK", {"x": x}, ["v", "i"], initializers={"k": np.array([3])})
    assert op_names(decomposes_fully(model, [{"x": x}])) == ["prim.sort", "func.return"]


def test_top_k_with_k_known_only_at_run_time_stays(capsys):
    x, k = positive(2, 3), np.array([2], np.int64)
    model = node_model("TopK", {"x": x, "k": k}, ["v", "i"])
    assert "nn.top_k stays: k is known only at run time" in stays(model, capsys)
