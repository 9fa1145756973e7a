"""canonicalize's prim-conv-unit-spatial-dims: a 3-d convolution over a unit depth (with a
unit kernel depth and no padding on it) is the 2-d convolution, which codegen compiles."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from helpers import check_pipeline, run_ort
from pir.frontends.onnx.importer import import_model

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _conv3d(depth: int, kernel_depth: int, pad_depth: int) -> onnx.ModelProto:
    w = (np.random.default_rng(0).standard_normal((8, 3, kernel_depth, 3, 3)) * 0.2)
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[pad_depth, 1, 1, pad_depth, 1, 1])
    graph = helper.make_graph(
        [node], "c3", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                     ["N", 3, depth, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w.astype(np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def _conv_ranks(module) -> list[int]:
    return [len(op.operands[0].type.shape) for op in module.walk() if op.name == "prim.conv"]


@pytest.mark.parametrize("depth, kernel_depth, pad_depth, ranks", [
    (1, 1, 0, [4]),   # RivaGAN's Conv3d over [N, C, 1, H, W] frames: a 2-d convolution
    (2, 1, 0, [5]),   # a real depth stays 3-d
    (1, 1, 1, [5]),   # padded along the unit depth: the result is 3 deep
])
def test_a_conv3d_over_a_unit_depth_is_a_conv2d(depth, kernel_depth, pad_depth, ranks):
    model = _conv3d(depth, kernel_depth, pad_depth)
    x = np.random.default_rng(1).standard_normal((2, 3, depth, 5, 6)).astype(np.float32)
    done = check_pipeline(import_model(model), {"x": x}, FUSE)
    assert _conv_ranks(done) == ranks
    from pir.runtimes.reference import run_function

    np.testing.assert_allclose(run_function(done, {"x": x})["y"], run_ort(model, {"x": x})["y"],
                               rtol=1e-4, atol=1e-5)
