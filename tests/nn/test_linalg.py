"""Matrix products and the determinant: import, round trip, run, and compare with ONNX Runtime;
type rules and their diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_model, node_model

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.core import Block
from pir.ir.dialects.nn.linalg import Einsum, MatMul
from pir.ir.types import DType, TensorType

rng = np.random.default_rng(0)


def normal(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def result_type(module, name):
    fn = module.body.block.ops[0]
    return next(o for o in fn.walk() if o.name == name).results[0].type


@pytest.mark.parametrize("a_shape, b_shape, out_shape", [
    ((3, 4), (4, 5), (3, 5)),
    ((2, 3, 4), (2, 4, 5), (2, 3, 5)),
    ((2, 1, 3, 4), (5, 4, 2), (2, 5, 3, 2)),  # batch dims broadcast
    ((4,), (2, 4, 3), (2, 3)),  # a 1-D left operand is a row vector, dropped after
    ((2, 3, 4), (4,), (2, 3)),  # a 1-D right operand is a column vector
    ((4,), (4,), ()),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_matmul(a_shape, b_shape, out_shape, dtype):
    feeds = {"a": normal(*a_shape, dtype=np.float32).round().astype(dtype),
             "b": normal(*b_shape, dtype=np.float32).round().astype(dtype)}
    module = check_model(node_model("MatMul", feeds, ["c"], opset=13), feeds)
    assert result_type(module, "nn.matmul") == TensorType(DType.from_numpy(dtype), out_shape)


@pytest.mark.parametrize("attrs, a_shape, b_shape, c_shape", [
    ({}, (3, 5), (5, 4), None),
    ({}, (3, 5), (5, 4), ()),
    ({}, (3, 5), (5, 4), (4,)),
    ({"beta": 0.5}, (3, 5), (5, 4), (3, 1)),
    ({"alpha": 0.25, "beta": 2.0}, (3, 5), (5, 4), (3, 4)),
    ({"transA": 1}, (5, 3), (5, 4), (1, 4)),
    ({"transB": 1}, (3, 5), (4, 5), (4,)),
    ({"transA": 1, "transB": 1, "alpha": 1.5, "beta": 0.35}, (5, 3), (4, 5), (1, 4)),
])
@pytest.mark.parametrize("opset", [11, 13])
def test_gemm(attrs, a_shape, b_shape, c_shape, opset):
    feeds = {"a": normal(*a_shape), "b": normal(*b_shape)}
    if c_shape is not None:
        feeds["c"] = normal(*c_shape)
    module = check_model(node_model("Gemm", feeds, ["y"], opset=opset, **attrs), feeds)
    assert result_type(module, "nn.gemm").shape == (3, 4)


def test_gemm_beta_zero_ignores_c():
    feeds = {"a": normal(2, 3), "b": normal(3, 2), "c": np.full((2, 2), np.nan, np.float32)}
    check_model(node_model("Gemm", feeds, ["y"], beta=0.0), feeds,
                expected={"y": feeds["a"] @ feeds["b"]})


@pytest.mark.parametrize("equation, shapes", [
    ("ij->ji", [(3, 4)]),
    ("ij->i", [(3, 4)]),
    ("i,i", [(5,)]*2),
    ("bij, bjk -> bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ii->...i", [(3, 4, 4)]),
    ("ij,jk", [(3, 4), (4, 2)]),  # implicit output: labels seen once, sorted
    ("...j,j->...", [(2, 3, 4), (4,)]),
    ("ii", [(3, 3)]),  # a trace
])
def test_einsum(equation, shapes):
    feeds = {f"x{i}": normal(*s, dtype=np.float64) for i, s in enumerate(shapes)}
    module = check_model(node_model("Einsum", feeds, ["y"], opset=12, equation=equation), feeds)
    want = np.einsum(equation.replace(" ", ""), *feeds.values()).shape
    assert result_type(module, "nn.einsum").shape == want


@pytest.mark.parametrize("shape", [(2, 2), (3, 3), (4, 3, 3), (2, 2, 5, 5)])
def test_det(shape):
    feeds = {"x": normal(*shape)}
    module = check_model(node_model("Det", feeds, ["y"], opset=22), feeds, rtol=1e-4, atol=1e-5)
    assert result_type(module, "nn.det").shape == shape[:-2]


def test_matmul_keeps_symbolic_batch():
    block = Block([TensorType(DType.F32, ("B", 3, 4)), TensorType(DType.F32, (4, "N"))])
    op = MatMul.build(*block.args)
    assert op.results[0].type == TensorType(DType.F32, ("B", 3, "N"))


def test_einsum_type_rule_with_ellipsis():
    block = Block([TensorType(DType.F32, ("B", 1, 3, 4)), TensorType(DType.F32, (5, 4, 2))])
    op = Einsum.build(list(block.args), equation="...ij,...jk->...ik")
    assert op.results[0].type == TensorType(DType.F32, ("B", 5, 3, 2))


def test_matmul_contracting_dims_must_agree():
    feeds = {"a": normal(3, 4), "b": normal(5, 2)}
    with pytest.raises(PirError, match=r"\(MatMul\).*contracting dims of \[3, 4\] and \[5, 2\]: "
                                       r"4 and 5 differ"):
        import_model(node_model("MatMul", feeds, ["c"], opset=13))


def test_gemm_needs_matrices():
    feeds = {"a": normal(2, 3, 4), "b": normal(4, 5)}
    with pytest.raises(PirError, match=r"\(Gemm\).*operand 'a' must have rank 2, got tensor<2x3x4xf32>"):
        import_model(node_model("Gemm", feeds, ["y"], opset=13))


def test_gemm_c_must_broadcast_one_way():
    feeds = {"a": normal(3, 5), "b": normal(5, 4), "c": normal(2, 4)}
    with pytest.raises(PirError, match=r"C of type tensor<2x4xf32> does not broadcast to \(3, 4\)"):
        import_model(node_model("Gemm", feeds, ["y"], opset=13))


def test_einsum_term_count_must_match_operands():
    feeds = {"x": normal(3, 4)}
    with pytest.raises(PirError, match=r"einsum equation 'ij,jk->ik' has 2 input terms for 1 operands"):
        import_model(node_model("Einsum", feeds, ["y"], opset=12, equation="ij,jk->ik"))


def test_det_needs_square_matrices():
    feeds = {"x": normal(2, 3)}
    with pytest.raises(PirError, match=r"det needs square matrices: the last two dims: 2 and 3 differ"):
        import_model(node_model("Det", feeds, ["y"], opset=22))
