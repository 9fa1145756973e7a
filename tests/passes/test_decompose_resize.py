"""Nearest upsampling by whole factors decomposes into a repetition (broadcast, then a
reshape that merges each pair of axes) over symbolic H and W, equal to ONNX Runtime bit for
bit; the modes where output k*s + j does not read input k stay nn.resize."""

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from helpers import check_pipeline, cli, cli_run, op_names, run_ort
from pir.frontends.onnx.importer import import_model
from pir.runtimes.reference.interpreter import run_function

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"

#: coordinate mode -> nearest modes that repeat (rules_resize._REPEATS), the rest stay
REPEATS = {
    "asymmetric": {"floor"},
    "half_pixel": {"round_prefer_floor", "round_prefer_ceil"},
    "pytorch_half_pixel": {"round_prefer_floor", "round_prefer_ceil"},
    "half_pixel_symmetric": {"round_prefer_floor", "round_prefer_ceil"},
}
NEAREST = ["floor", "ceil", "round_prefer_floor", "round_prefer_ceil"]
CASES = list(itertools.product([*REPEATS, "align_corners"], NEAREST))


def resize_model(coord: str, nearest: str, scales) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                            coordinate_transformation_mode=coord, nearest_mode=nearest)
    graph = helper.make_graph([node], "resize", [x], [y],
                              [helper.make_tensor("scales", TensorProto.FLOAT, [4], scales)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


@pytest.mark.parametrize("coord, nearest", CASES, ids=lambda v: str(v))
def test_nearest_upsampling_repeats_exactly(coord, nearest):
    for scales in ([1, 1, 2, 2], [1, 1, 3, 1]):
        model = resize_model(coord, nearest, scales)
        module = import_model(model)
        x = np.random.default_rng(7).normal(size=(2, 3, 5, 7)).astype(np.float32)
        fused = check_pipeline(module, {"x": x}, FUSE, rtol=0, atol=0)
        kept = "nn.resize" in op_names(fused)
        assert kept == (nearest not in REPEATS.get(coord, ())), op_names(fused)
        np.testing.assert_array_equal(run_function(fused, {"x": x})["y"],
                                      run_ort(model, {"x": x})["y"])


def test_repetition_is_one_compiled_kernel_for_every_size(tmp_path):
    onnx.save(resize_model("asymmetric", "floor", [1, 1, 2, 2]), tmp_path / "m.onnx")
    assert cli("import", tmp_path / "m.onnx", "-o", tmp_path / "n.pir")[0] == 0
    assert cli("optimize", tmp_path / "n.pir", "-p", FUSE, "-o", tmp_path / "f.pir")[0] == 0
    code, _, err = cli("codegen", tmp_path / "f.pir", "--target", "llvm", "--explain",
                       "-o", tmp_path / "k.pir")
    assert code == 0 and "not compiled: nothing" in err, err
    model = resize_model("asymmetric", "floor", [1, 1, 2, 2])
    for h, w in [(5, 7), (16, 3)]:
        x = np.random.default_rng(h).normal(size=(1, 3, h, w)).astype(np.float32)
        np.testing.assert_array_equal(cli_run(tmp_path / "k.pir", {"x": x}, tmp_path)["y"],
                                      run_ort(model, {"x": x})["y"])
