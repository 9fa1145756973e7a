"""shape-branches (pir/passes/shape_branches.py): an nn.if on a fact of the shapes takes the
rest of its block into its branches, where the fact gives it ranks and sizes; decompose runs
it first.  The models are torch's exported ``x.squeeze(-1)`` on a symbolic dim, as Silero
VAD has it, against onnxruntime at the sizes that take each branch."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from helpers import run_ort
from pir.frontends.onnx.importer import import_model
from pir.ir.printer import print_module
from pir.ir.parser import parse_module
from pir.ir.verifier import verify_module
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline
from pir.passes.shape_branches import shape_fact
from pir.runtimes.reference.interpreter import run_function

DECOMPOSE = "decompose,canonicalize,fold,cse,dce,shapes"


def _const(name, value):
    return helper.make_node("Constant", [], [name],
                            value=onnx.numpy_helper.from_array(np.array(value, np.int64), name))


def _squeeze_last(x: str, out: str, tag: str) -> list:
    """torch's ``x.squeeze(-1)`` of a symbolic last dim: If(Shape(x)[-1] == 1)."""
    then = helper.make_graph([_const(f"{tag}ax", [-1]),
                              helper.make_node("Squeeze", [x, f"{tag}ax"], [f"{tag}sq"])],
                             f"{tag}then", [], [helper.make_tensor_value_info(
                                 f"{tag}sq", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Identity", [x], [f"{tag}id"])], f"{tag}else",
                              [], [helper.make_tensor_value_info(f"{tag}id", TensorProto.FLOAT,
                                                                 None)])
    return [helper.make_node("Shape", [x], [f"{tag}s"]), _const(f"{tag}last", [-1]),
            _const(f"{tag}one", [1]),
            helper.make_node("Gather", [f"{tag}s", f"{tag}last"], [f"{tag}d"]),
            helper.make_node("Equal", [f"{tag}d", f"{tag}one"], [f"{tag}is1"]),
            helper.make_node("If", [f"{tag}is1"], [out], then_branch=then, else_branch=other)]


def _model(tail: list, twice: bool = False) -> onnx.ModelProto:
    """x [B, 4, T] -> relu -> squeeze(-1) -> ``tail`` (from "r" to "out"); with ``twice``
    a second squeeze of the same value (the same test again)."""
    nodes = [helper.make_node("Relu", ["x"], ["h"]), *_squeeze_last("h", "r", "a")]
    if twice:
        nodes += _squeeze_last("h", "r2", "b")
        nodes.append(helper.make_node("Add", ["r", "r2"], ["rr"]))
    nodes += tail
    graph = helper.make_graph(
        nodes, "squeeze", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 4, "T"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def _rank_tail() -> list:
    """What the exporter writes after it: a test of the squeezed value's rank (unsqueeze a
    2-d value to 3-d), then an elementwise op and a mean over the last axis."""
    then = helper.make_graph([_const("uax", [0]), helper.make_node("Unsqueeze", ["r", "uax"],
                                                                   ["ru"])],
                             "uthen", [], [helper.make_tensor_value_info("ru", TensorProto.FLOAT,
                                                                         None)])
    other = helper.make_graph([helper.make_node("Identity", ["r"], ["ri"])], "uelse", [],
                              [helper.make_tensor_value_info("ri", TensorProto.FLOAT, None)])
    return [helper.make_node("Shape", ["r"], ["rs"]), helper.make_node("Size", ["rs"], ["rank"]),
            _const("two", 2), helper.make_node("Equal", ["rank", "two"], ["is2"]),
            helper.make_node("If", ["is2"], ["r3"], then_branch=then, else_branch=other),
            helper.make_node("Sigmoid", ["r3"], ["g"]),
            helper.make_node("ReduceMean", ["g"], ["out"], axes=[-1], keepdims=0)]


def _ops(module) -> list[str]:
    return [op.name for op in module.walk()]


def _check_both_sizes(model, module) -> None:
    rng = np.random.default_rng(0)
    for shape in [(2, 4, 1), (3, 4, 5)]:  # T == 1 takes the then-branch, T == 5 the else
        x = rng.standard_normal(shape).astype(np.float32)
        want = run_ort(model, {"x": x})["out"]
        got = run_function(module, {"x": x})["out"]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_the_rest_of_the_block_is_versioned_and_decomposes_where_the_fact_holds():
    model = _model(_rank_tail())
    module = import_model(model)
    if_op = next(op for op in module.funcs[0].entry.ops if op.name == "nn.if")
    fact = shape_fact(if_op.operands[0])
    assert fact is not None and fact[0] == ("==", "T", "1")
    # before: the squeezed value has no rank, so nothing after it decomposes
    before = parse_module(print_module(module))
    PassManager(parse_pipeline(DECOMPOSE.replace("decompose", "decompose{branches=false}"))
                ).run(before)
    assert "nn.reduce_mean" in _ops(before)
    PassManager(parse_pipeline(DECOMPOSE)).run(module)
    verify_module(module)
    entry = module.funcs[0].entry.ops
    (top,) = [op for op in entry if op.name == "nn.if"]
    assert entry[-1].operands[0] is top.results[0]  # the if now makes the output
    then, other = (r.block for r in top.regions)
    # T == 1: the squeeze gives [B, 4], the rank test is decided (unsqueeze to [1, B, 4]),
    # and the rest is prim ops of ranked values
    assert {op.name for op in then.ops} <= {"builtin.constant", "nn.yield"} | {
        op.name for op in then.ops if op.name.startswith("prim.")}
    assert all(r.type.shape is not None for op in then.ops for r in op.results)
    # T != 1: the value keeps its rank 3, the rank test is decided the other way
    assert "nn.if" not in {op.name for op in other.ops}
    assert all(r.type.shape is not None for op in other.ops for r in op.results)
    _check_both_sizes(model, module)


def test_a_second_test_of_the_same_fact_is_decided_in_both_copies():
    tail = [helper.make_node("Sigmoid", ["rr"], ["out"])]
    model = _model(tail, twice=True)
    module = import_model(model)
    assert _ops(module).count("nn.if") == 2
    PassManager(parse_pipeline("shape-branches")).run(module)
    # one if, testing T == 1; the second squeeze's test is resolved in each branch
    assert _ops(module).count("nn.if") == 1
    _check_both_sizes(model, module)


def test_a_copy_an_op_rejects_keeps_the_original_form():
    # a Gemm takes a 2-d input: after the squeeze (T == 1) it is [B, 4]; when T != 1 the
    # value stays [B, 4, T], which Gemm rejects (so does onnxruntime): that branch keeps the
    # if and the rest as they were, unranked, and the program still verifies
    w = np.random.default_rng(2).standard_normal((4, 3)).astype(np.float32)
    tail = [helper.make_node("Constant", [], ["w"], value=onnx.numpy_helper.from_array(w, "w")),
            helper.make_node("Gemm", ["r", "w"], ["out"])]
    model = _model(tail)
    module = import_model(model)
    PassManager(parse_pipeline(DECOMPOSE)).run(module)
    verify_module(module)
    (top,) = [op for op in module.funcs[0].entry.ops if op.name == "nn.if"]
    then, other = (r.block for r in top.regions)
    assert "nn.gemm" not in {op.name for op in then.ops}  # decomposed: ranks are known
    assert "nn.if" in {op.name for op in other.ops}  # the original form
    x = np.random.default_rng(3).standard_normal((2, 4, 1)).astype(np.float32)
    np.testing.assert_allclose(run_function(module, {"x": x})["out"],
                               run_ort(model, {"x": x})["out"], rtol=1e-5, atol=1e-6)


def test_a_symbol_the_fact_fixes_is_its_size_in_that_branch():
    # If(Shape(x)[0] == 1) on the batch: in the then-branch B is 1
    module = parse_module("""module {
  func.func @main(%x: tensor<Bx4xf32>) -> (tensor<*xf32>) {
    %s = nn.shape(%x) : (tensor<Bx4xf32>) -> tensor<2xi64>
    %i = builtin.constant() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
    %d = nn.gather(%s, %i) {axis = 0} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
    %one = builtin.constant() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
    %c = nn.equal(%d, %one) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi1>
    %r = nn.if(%c) ({
      %n = nn.neg(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
      nn.yield(%n) : (tensor<Bx4xf32>) -> ()
    }, {
      nn.yield(%x) : (tensor<Bx4xf32>) -> ()
    }) : (tensor<1xi1>) -> tensor<*xf32>
    %y = nn.relu(%r) : (tensor<*xf32>) -> tensor<*xf32>
    func.return(%y) : (tensor<*xf32>) -> ()
  }
}""")
    PassManager(parse_pipeline("shape-branches")).run(module)
    verify_module(module)
    (top,) = [op for op in module.funcs[0].entry.ops if op.name == "nn.if"]
    then, other = (r.block for r in top.regions)
    relu_then = next(op for op in then.ops if op.name == "nn.relu")
    relu_else = next(op for op in other.ops if op.name == "nn.relu")
    assert relu_then.results[0].type.shape == (1, 4)
    assert relu_else.results[0].type.shape == ("B", 4)
    for b in (1, 3):
        x = np.linspace(-1, 1, 4 * b, dtype=np.float32).reshape(b, 4)
        want = np.maximum(-x, 0) if b == 1 else np.maximum(x, 0)
        np.testing.assert_array_equal(run_function(module, {"x": x})["y"], want)


@pytest.mark.parametrize("pipeline", ["shape-branches{max-versions=0}",
                                      "decompose{branches=false}"])
def test_the_options_leave_the_if_alone(pipeline):
    module = import_model(_model(_rank_tail()))
    before = _ops(module).count("nn.if")
    PassManager(parse_pipeline(pipeline)).run(module)
    entry = module.funcs[0].entry.ops
    assert _ops(module).count("nn.if") == before
    assert entry[-1].operands[0].op.name != "nn.if"  # the rest stayed after the if


def _squeeze_all_model(shape: list) -> onnx.ModelProto:
    """x -> Squeeze (no axes: every size-1 dim) -> Sigmoid -> ReduceSum over the last axis,
    torch's ``x.squeeze()`` on dims the exporter left symbolic."""
    graph = helper.make_graph(
        [helper.make_node("Squeeze", ["x"], ["s"]), helper.make_node("Sigmoid", ["s"], ["g"]),
         _const("ax", [-1]), helper.make_node("ReduceSum", ["g", "ax"], ["out"], keepdims=0)],
        "squeeze_all", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def test_a_squeeze_without_axes_is_versioned_on_each_dim_that_may_be_1():
    model = _squeeze_all_model(["B", 1, "T", 3])
    module = import_model(model)
    assert module.funcs[0].entry.ops[0].results[0].type.shape is None  # no rank
    PassManager(parse_pipeline(DECOMPOSE)).run(module)
    verify_module(module)
    # B == 1 and T == 1 each an if: four versions, every one ranked and in prim ops
    (top,) = [op for op in module.funcs[0].entry.ops if op.name == "nn.if"]
    leaves = [r.block for op in [top] for r in op.regions]
    leaves = [r.block for b in leaves for op in b.ops if op.name == "nn.if" for r in op.regions]
    assert len(leaves) == 4
    for block in leaves:
        assert not {op.name for op in block.ops if op.name.startswith("nn.")} - {"nn.yield"}
        assert all(r.type.shape is not None for op in block.ops for r in op.results)
    rng = np.random.default_rng(4)
    for shape in [(1, 1, 1, 3), (2, 1, 1, 3), (1, 1, 5, 3), (2, 1, 5, 3)]:
        x = rng.standard_normal(shape).astype(np.float32)
        want = run_ort(model, {"x": x})["out"]
        got = run_function(module, {"x": x})["out"]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_max_squeeze_dims_leaves_a_squeeze_of_more_dims_alone():
    module = import_model(_squeeze_all_model(["B", 1, "T", 3]))
    PassManager(parse_pipeline("shape-branches{max-squeeze-dims=1}")).run(module)
    assert "nn.if" not in _ops(module) and "nn.squeeze" in _ops(module)


def test_a_squeeze_without_axes_of_dims_never_1_has_a_rank():
    module = parse_module("""module {
  func.func @main(%x: tensor<1x(S + 2)x(2*T)xf32>) -> (tensor<*xf32>) {
    %y = nn.squeeze(%x) : (tensor<1x(S + 2)x(2*T)xf32>) -> tensor<*xf32>
    func.return(%y) : (tensor<*xf32>) -> ()
  }
}""")
    (sq,) = [op for op in module.funcs[0].entry.ops if op.name == "nn.squeeze"]
    assert [str(d) for d in sq.infer()[0].shape] == ["S + 2", "2*T"]
    PassManager(parse_pipeline("shape-branches")).run(module)
    assert "nn.if" not in _ops(module)  # nothing to test
