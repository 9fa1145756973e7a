"""`pir codegen --explain` and `pir show` list every op that still runs on the host, with
the reason (pir.codegen.uncompiled)."""

import numpy as np
import onnx
from onnx import TensorProto, helper

from helpers import cli


def _model() -> onnx.ModelProto:
    """A conv that decompose must keep (SAME pads of a stride-2 conv depend on the parity of
    the symbolic H and W) feeding a relu and a NonZero (a data-dependent size)."""
    w = np.random.default_rng(0).normal(size=(4, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3],
                              auto_pad="SAME_UPPER", strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_codegen_explain_and_show_list_host_ops(tmp_path):
    onnx.save(_model(), tmp_path / "m.onnx")
    assert cli("import", tmp_path / "m.onnx", "-o", tmp_path / "n.pir")[0] == 0
    code, _, err = cli("optimize", tmp_path / "n.pir", "-p",
                       "decompose,canonicalize,fold,cse,dce,shapes,fuse", "-o", tmp_path / "f.pir")
    assert code == 0, err
    code, _, err = cli("codegen", tmp_path / "f.pir", "--target", "llvm", "--explain",
                       "-o", tmp_path / "k.pir")
    assert code == 0, err
    assert "not compiled: 1 op run on the host" in err
    assert ("nn.conv x1: not decomposed: auto_pad SAME_UPPER needs static spatial dims"
            in err)
    code, out, err = cli("show", tmp_path / "k.pir")
    assert code == 0, err
    assert "nn.conv x1: not decomposed: auto_pad SAME_UPPER needs static spatial dims" in out
    # the relu after it is a kernel
    assert "kernel.tvm" in out
