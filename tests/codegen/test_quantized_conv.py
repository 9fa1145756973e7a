"""A dynamically quantized convolution (ConvInteger, as onnxruntime's quantizer writes it):
its int8 weights stay int8 through optimize (fold does not widen a large integer constant),
and the int32 convolution of the centred operands compiles in the direct form over a
symbolic width, equal to ONNX Runtime exactly."""

import numpy as np
import pytest
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


def _qdq_conv(groups: int):
    """A static QDQ convolution (onnxruntime's quantizer): DQ(Q(x)) conv DQ(w int8), static
    sizes."""
    rng = np.random.default_rng(1)
    c = 64
    w = rng.integers(-127, 128, size=(64, c // groups, 3, 3)).astype(np.int8)
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array(0.02, np.float32), "ws"),
             numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             numpy_helper.from_array(np.array(128, np.uint8), "zp")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"]),
             helper.make_node("Conv", ["xd", "wd"], ["y"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], group=groups)]
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 9, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model



@pytest.mark.parametrize("groups", [1, 64])
def test_a_qdq_convolution_by_computed_weights_is_a_kernel(groups):
    """EfficientWord-Net's QDQ ResNet-50: the weights of its four largest convolutions were
    a group over the int8 constants (fold keeps those int8), which the static conv paths did
    not take: they ran on numpy, half the run.  The weights are evaluated at codegen."""
    from pir.runtimes.reference import run_function
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module

    model = _qdq_conv(groups)
    module = import_model(model)
    # (fold leaves a dequantization of more than 2**20 weights, as ResNet-50's 512 x 512 x
    # 3 x 3 ones, to be computed: so here of more than 256)
    PassManager(parse_pipeline(FUSE.replace("fold", "fold{size-limit=256}"))).run(module)
    before = parse_module(print_module(module))
    (conv,) = [op for op in module.walk() if op.name == "prim.conv"]
    assert not isinstance(getattr(conv.operands[1], "op", None), ConstantOp)
    codegen_module(module, "llvm")
    assert "prim.conv" not in [op.name for op in module.funcs[0].entry.ops]
    x = np.random.default_rng(2).normal(size=(1, 64, 9, 10)).astype(np.float32)
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y"]
    np.testing.assert_allclose(got, run_function(before, {"x": x})["y"], rtol=1e-5,
                               atol=1e-5)
