"""Control flow decided by static facts of shapes, as Silero VAD writes it: ``If(Shape(x)[1]
== 1)`` squeezes a channel that is always there.  The importer folds the dims a shape op
picks when they are static, converts only the branch a constant condition takes (inline,
typed from its values: the batch keeps its input symbol, not ONNX's ``Squeeze_dim_0``),
and codegen compiles convolutions inside a run-time ``If`` too."""

import numpy as np
import onnx
from onnx import TensorProto, helper

from helpers import run_ort
from pir.codegen.tvm.codegen import codegen_module
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.kernel import TvmKernelOp
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline
from pir.runtimes.reference.interpreter import run_function
from pir.runtimes.tvm import TvmInterpreter

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _const(name, value, dtype=np.int64):
    return helper.make_node("Constant", [], [name],
                            value=onnx.numpy_helper.from_array(np.array(value, dtype), name))


def _branch(name, nodes, out, shape):
    return helper.make_graph(nodes, name, [],
                             [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)])


def _vad_like(runtime_if: bool) -> onnx.ModelProto:
    """x [batch, 1, T] -> if x has one channel: squeeze and unsqueeze it back (a no-op
    pair, as the exporter wrote it), else pass x; then a stride-4 conv and a relu.  With
    ``runtime_if`` the conv sits inside ``If(flag)`` of a run-time input instead."""
    w = (np.random.default_rng(0).normal(size=(8, 1, 16)) * 0.3).astype(np.float32)
    inits = [onnx.numpy_helper.from_array(w, "w")]
    conv = [helper.make_node("Conv", ["xx", "w"], ["c"], strides=[4]),
            helper.make_node("Relu", ["c"], ["y"])]
    if runtime_if:
        then = _branch("then", [helper.make_node("Identity", ["x"], ["xx"]), *conv], "y",
                       ["batch", 8, None])
        other = _branch("else", [helper.make_node("Neg", ["x"], ["y"])], "y",
                        ["batch", 1, "T"])
        nodes = [helper.make_node("If", ["flag"], ["out"], then_branch=then,
                                  else_branch=other)]
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, "T"]),
                  helper.make_tensor_value_info("flag", TensorProto.BOOL, [])]
    else:
        then = _branch("then", [_const("ax", [1]),
                                helper.make_node("Squeeze", ["x", "ax"], ["sq"]),
                                helper.make_node("Unsqueeze", ["sq", "ax"], ["xs"])],
                       "xs", ["Squeeze_dim_0", 1, "T"])
        other = _branch("else", [helper.make_node("Identity", ["x"], ["xo"])], "xo", None)
        nodes = [helper.make_node("Shape", ["x"], ["s"]), _const("one", [1]),
                 helper.make_node("Gather", ["s", "one"], ["c1"]),
                 helper.make_node("Equal", ["c1", "one"], ["is1"]),
                 helper.make_node("If", ["is1"], ["xx"], then_branch=then,
                                  else_branch=other),
                 *[n for n in conv[:1]], helper.make_node("Relu", ["c"], ["out"])]
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, "T"])]
    graph = helper.make_graph(nodes, "vad", inputs,
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def test_an_if_on_a_static_dim_of_a_shape_is_its_branch():
    model = _vad_like(runtime_if=False)
    module = import_model(model)
    ops = list(module.funcs[0].walk())
    assert "nn.if" not in [op.name for op in ops]
    # the shape query is read by nothing now (dce removes it)
    assert all(not op.results[0].uses for op in ops if op.name == "nn.shape")
    (squeeze,) = [op for op in module.funcs[0].walk() if op.name == "nn.squeeze"]
    assert squeeze.results[0].type.shape == ("batch", "T")  # not ONNX's Squeeze_dim_0
    x = np.random.default_rng(1).normal(size=(2, 1, 40)).astype(np.float32)
    np.testing.assert_allclose(run_function(module, {"x": x})["out"],
                               run_ort(model, {"x": x})["out"], rtol=1e-5, atol=1e-6)
    PassManager(parse_pipeline(FUSE)).run(module)
    codegen_module(module, "llvm")
    top = module.funcs[0].entry.ops
    assert not [op.name for op in top if op.name.startswith(("nn.", "prim."))]
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["out"]
    np.testing.assert_allclose(got, run_ort(model, {"x": x})["out"], rtol=1e-5, atol=1e-6)


def test_convolutions_inside_a_run_time_if_are_compiled():
    model = _vad_like(runtime_if=True)
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    report = codegen_module(module, "llvm")
    (if_op,) = [op for op in module.funcs[0].entry.ops if op.name == "nn.if"]
    inner = [op for op in if_op.regions[0].block.ops]
    assert [op.kind for op in inner if isinstance(op, TvmKernelOp)] == ["conv"], \
        [op.name for op in inner]
    assert report.matmuls == 1
    interp = TvmInterpreter(module)
    for flag in (True, False):
        x = np.random.default_rng(2).normal(size=(1, 1, 64)).astype(np.float32)
        feeds = {"x": x, "flag": np.array(flag)}
        np.testing.assert_allclose(interp.run(module.funcs[0], feeds)["out"],
                                   run_ort(model, feeds)["out"], rtol=1e-5, atol=1e-6)
