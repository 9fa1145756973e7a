"""Reductions, ArgMax/ArgMin, CumSum/CumProd and TopK: import, round trip, run, and compare with
ONNX Runtime; type rules and their diagnostics."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import check_model, node_model

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.func import FuncOp
from pir.ir.types import DType, TensorType

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]

rng = np.random.default_rng(0)


def positive(*shape, dtype=np.float32):
    return rng.uniform(0.5, 2.0, shape).astype(dtype)  # log-sums need positive sums


def op_of(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return next(o for o in fn.walk() if o.name == name)


@pytest.mark.parametrize("op_type", REDUCE_OPS)
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, 2], 0), ([-1], 0), (None, 1), (None, 0)])
def test_reduce_matches_ort(op_type, axes, keepdims):
    x = positive(2, 3, 4)
    inits = {} if axes is None else {"axes": np.array(axes, np.int64)}
    model = node_model(op_type, {"x": x}, ["y"], opset=18, initializers=inits, keepdims=keepdims)
    module = check_model(model, {"x": x}, rtol=1e-5, atol=1e-6)
    want = np.sum(x, axis=None if axes is None else tuple(axes), keepdims=bool(keepdims)).shape
    assert op_of(module, "nn." + _snake(op_type)).results[0].type.shape == want


def _snake(op_type: str) -> str:
    return {"ReduceLogSumExp": "reduce_log_sum_exp", "ReduceSumSquare": "reduce_sum_square",
            "ReduceLogSum": "reduce_log_sum", "ReduceL1": "reduce_l1",
            "ReduceL2": "reduce_l2"}.get(op_type, "reduce_" + op_type[6:].lower())


@pytest.mark.parametrize("op_type,opset", [("ReduceMean", 13), ("ReduceMax", 11), ("ReduceSum", 11)])
def test_reduce_axes_attribute_of_old_opsets(op_type, opset):
    x = positive(3, 4, 5)
    model = node_model(op_type, {"x": x}, ["y"], opset=opset, axes=[0, -1], keepdims=0)
    module = check_model(model, {"x": x})
    assert op_of(module, "nn." + _snake(op_type)).results[0].type == TensorType(DType.F32, (4,))


@pytest.mark.parametrize("noop,want", [(1, (2, 3)), (0, ())])
def test_reduce_sum_empty_axes(noop, want):
    x = positive(2, 3)
    model = node_model("ReduceSum", {"x": x}, ["y"], initializers={"axes": np.zeros(0, np.int64)},
                       keepdims=0, noop_with_empty_axes=noop)
    module = check_model(model, {"x": x})
    assert op_of(module, "nn.reduce_sum").results[0].type.shape == want


@pytest.mark.parametrize("op_type", ["ReduceSumSquare", "ReduceLogSum", "ReduceL1", "ReduceMax"])
def test_reduce_noop_without_axes_keeps_the_elementwise_steps(op_type):
    x = positive(2, 3)
    model = node_model(op_type, {"x": x}, ["y"], opset=18, noop_with_empty_axes=1)
    module = check_model(model, {"x": x})
    assert op_of(module, "nn." + _snake(op_type)).results[0].type.shape == (2, 3)


def test_reduce_with_axes_known_only_at_run_time():
    x, axes = positive(2, 3, 4), np.array([2, 0], np.int64)
    model = node_model("ReduceMax", {"x": x, "axes": axes}, ["y"], opset=18, keepdims=0)
    module = check_model(model, {"x": x, "axes": axes})
    assert op_of(module, "nn.reduce_max").results[0].type.shape == (None,)  # rank 3 - 2 axes


def with_symbolic_batch(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with dim 0 of its first input named B, output types inferred again."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "B"
    for o in model.graph.output:
        o.type.tensor_type.ClearField("shape")
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize("op_type,attrs,want", [
    ("ReduceSum", {"keepdims": 0}, ("B", 4)),
    ("ArgMin", {"axis": -1}, ("B", 3, 1)),
    ("CumSum", {}, ("B", 3, 4)),
])
def test_symbolic_dims_survive(op_type, attrs, want):
    x = positive(2, 3, 4)
    inits = {"ReduceSum": {"axes": np.array([1], np.int64)},
             "CumSum": {"axis": np.array(2, np.int64)}}.get(op_type, {})
    model = with_symbolic_batch(node_model(op_type, {"x": x}, ["y"], initializers=inits, **attrs))
    module = check_model(model, {"x": x})
    assert module.body.block.ops[0].return_op.operands[0].type.shape == want


def test_reduce_of_an_empty_set_gives_the_identity():
    x = np.zeros((2, 0, 3), np.float32)
    axes = {"axes": np.array([1], np.int64)}
    expected = {"ReduceSum": 0.0, "ReduceProd": 1.0, "ReduceMax": -np.inf, "ReduceMin": np.inf,
                "ReduceLogSumExp": -np.inf}
    for op_type, value in expected.items():
        model = node_model(op_type, {"x": x}, ["y"], opset=18, initializers=axes, keepdims=0)
        check_model(model, {"x": x}, expected={"y": np.full((2, 3), value, np.float32)})


@pytest.mark.parametrize("op_type", ["ReduceMax", "ReduceMin"])
def test_reduce_max_min_of_booleans(op_type):
    x = np.array([[True, False], [False, False], [True, True]])
    model = node_model(op_type, {"x": x}, ["y"], opset=20,
                       initializers={"axes": np.array([1], np.int64)}, keepdims=0)
    want = x.any(axis=1) if op_type == "ReduceMax" else x.all(axis=1)
    check_model(model, {"x": x}, expected={"y": want})


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis,keepdims,last", [(0, 1, 0), (1, 0, 0), (-1, 1, 1), (2, 0, 1)])
def test_arg_reduce(op_type, axis, keepdims, last):
    x = rng.integers(0, 3, (3, 4, 5)).astype(np.float32)  # many ties: first vs last matters
    model = node_model(op_type, {"x": x}, ["y"], axis=axis, keepdims=keepdims,
                       select_last_index=last)
    module = check_model(model, {"x": x})
    assert op_of(module, "nn." + op_type[:3].lower() + "_" + op_type[3:].lower()) \
        .results[0].type.dtype is DType.I64


@pytest.mark.parametrize("op_type,opset", [("CumSum", 21), ("CumProd", 26)])
@pytest.mark.parametrize("axis,exclusive,reverse", [(0, 0, 0), (1, 1, 0), (-1, 0, 1), (1, 1, 1)])
def test_scans(op_type, opset, axis, exclusive, reverse):
    x = positive(3, 4)
    model = node_model(op_type, {"x": x}, ["y"], opset=opset,
                       initializers={"axis": np.array(axis, np.int32)},
                       exclusive=exclusive, reverse=reverse)
    check_model(model, {"x": x})


def test_cumsum_of_integers_keeps_the_type():
    x = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    model = node_model("CumSum", {"x": x}, ["y"], initializers={"axis": np.array(1, np.int64)},
                       exclusive=1)
    check_model(model, {"x": x}, expected={"y": np.array([[0, 1, 3], [0, 4, 9]], np.int32)})


@pytest.mark.parametrize("axis,largest,k", [(-1, 1, 2), (0, 0, 3), (1, 1, 4), (1, 0, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32])
def test_top_k(axis, largest, k, dtype):
    x = rng.integers(0, 4, (4, 5)).astype(dtype)  # ties: lower index first
    model = node_model("TopK", {"x": x}, ["values", "indices"],
                       initializers={"k": np.array([k], np.int64)}, axis=axis, largest=largest)
    module = check_model(model, {"x": x})
    shape = list(x.shape)
    shape[axis] = k
    assert op_of(module, "nn.top_k").results[1].type == TensorType(DType.I64, tuple(shape))


def test_top_k_of_unsigned_values_keeps_ties_in_index_order():
    x = np.array([[3, 1, 3, 0, 2]], np.uint64)  # ONNX Runtime has no unsigned TopK kernel
    model = node_model("TopK", {"x": x}, ["values", "indices"],
                       initializers={"k": np.array([3], np.int64)})
    want = {"values": np.array([[3, 3, 2]], np.uint64), "indices": np.array([[0, 2, 4]])}
    check_model(model, {"x": x}, expected=want)


def test_top_k_attribute_of_opset_9():
    x = positive(3, 6)
    model = node_model("TopK", {"x": x}, ["values", "indices"], opset=9, k=2)
    check_model(model, {"x": x})


# -- diagnostics ----------------------------------------------------------------------------------


def test_reduce_axis_out_of_range_is_an_error():
    x = positive(2, 3)
    model = node_model("ReduceSum", {"x": x}, ["y"], initializers={"axes": np.array([2], np.int64)})
    with pytest.raises(PirError, match="axis 2 is out of range for rank 2"):
        import_model(model)


def test_top_k_with_k_larger_than_the_dim_is_an_error():
    x = positive(2, 3)
    model = node_model("TopK", {"x": x}, ["v", "i"], initializers={"k": np.array([4], np.int64)})
    with pytest.raises(PirError, match="k = 4 is out of range for a dim of size 3"):
        import_model(model)


def test_reduce_axes_of_wrong_type_is_an_error():
    x = positive(2, 3)
    model = node_model("ReduceSum", {"x": x}, ["y"], initializers={"axes": np.array([1], np.int32)})
    with pytest.raises(PirError, match="operand 'axes' has element type i32, expected one of i64"):
        import_model(model)


# -- long float sums: accumulated in f64 -------------------------------------------------------

def _long_column(n: int = 100_000) -> np.ndarray:
    """[n, 2]: 1.0, then n - 1 terms of 3e-8 in each column (a sequential f32 sum gives 1.0)."""
    x = np.full((n, 2), 3e-8, np.float32)
    x[0] = 1.0
    return x


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean", "ReduceL1", "ReduceSumSquare",
                                     "ReduceLogSumExp"])
def test_long_reductions_over_a_strided_axis_are_exact(op_type):
    x = _long_column()
    if op_type == "ReduceSumSquare":
        x = np.sqrt(x).astype(np.float32)
    if op_type == "ReduceLogSumExp":
        x = np.log(x).astype(np.float32)
    x64 = x.astype(np.float64)
    want = {"ReduceSum": lambda: x64.sum(0), "ReduceMean": lambda: x64.mean(0),
            "ReduceL1": lambda: np.abs(x64).sum(0), "ReduceSumSquare": lambda: (x64 * x64).sum(0),
            "ReduceLogSumExp": lambda: np.log(np.exp(x64).sum(0))}[op_type]()
    model = node_model(op_type, {"x": x}, ["y"], opset=18, keepdims=0,
                       initializers={"axes": np.array([0], np.int64)})
    # the log of a sum near 1 is within an ulp of that sum (1.2e-7), not of the log
    atol = 1.2e-7 if op_type == "ReduceLogSumExp" else 0
    check_model(model, {"x": x}, rtol=1e-6, atol=atol, expected={"y": want.astype(np.float32)})
