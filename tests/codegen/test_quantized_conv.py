"""A dynamically quantized convolution (ConvInteger, as onnxruntime's quantizer writes it):
its int8 weights stay int8 through optimize (fold does not widen a large integer constant),
and the int32 convolution of the centred operands compiles in the direct form over a
symbolic width, equal to ONNX Runtime exactly."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from helpers import run_ort
from pir.codegen.tvm.codegen import codegen_module
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.builtin import ConstantOp
from pir.ir.dialects.kernel import TvmKernelOp
from pir.ir.types import DType
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline
from pir.runtimes.tvm import TvmInterpreter

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _model():
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, size=(32, 16, 3, 3)).astype(np.int8)
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array(3, np.int8), "w_zp")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xzp"]),
             helper.make_node("ConvInteger", ["xq", "w", "xzp", "w_zp"], ["y"],
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes, "qconv", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                       [1, 16, 12, "W"])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def test_int8_weights_stay_int8_and_the_int32_conv_compiles():
    model = _model()
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    consts = [op.results[0].type for op in module.walk() if isinstance(op, ConstantOp)]
    big = [t for t in consts if t.numel and t.numel > 1024]
    assert big and all(t.dtype is DType.I8 for t in big), [str(t) for t in big]
    codegen_module(module, "llvm")
    kinds = [op.kind for op in module.funcs[0].entry.ops if isinstance(op, TvmKernelOp)]
    assert "conv" in kinds, kinds
    assert "prim.conv" not in [op.name for op in module.funcs[0].entry.ops]
    interp = TvmInterpreter(module)
    for w in (20, 37):
        x = np.random.default_rng(w).normal(size=(1, 16, 12, w)).astype(np.float32)
        np.testing.assert_array_equal(interp.run(module.funcs[0], {"x": x})["y"],
                                      run_ort(model, {"x": x})["y"])
