"""Reflect, edge and wrap pads of a symbolic axis decompose into a gather at indices
computed at run time (an audio front end reflect-pads its samples before an STFT conv), and
agree with ONNX Runtime at several lengths, decomposed and compiled."""

import numpy as np
import pytest

from helpers import check_pipeline, node_model, op_names, run_ort
from pir.frontends.onnx.importer import import_model
from pir.runtimes.reference.interpreter import run_function

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", [[0, 0, 0, 3, 0, 0, 0, 5], [0, 0, 2, 0, 0, 0, 1, 0]])
def test_mode_pad_of_a_symbolic_axis(mode, pads):
    x0 = np.zeros((1, 1, 8, 8), np.float32)
    model = node_model("Pad", {"x": x0}, ["y"], shapes={"x": ["N", 1, "H", "T"]},
                       initializers={"pads": np.array(pads, np.int64)}, mode=mode)
    module = import_model(model)
    for h, t in [(6, 9), (8, 17)]:
        x = np.random.default_rng(t).normal(size=(2, 1, h, t)).astype(np.float32)
        fused = check_pipeline(module, {"x": x}, FUSE, rtol=0, atol=0)
        assert "nn.pad" not in op_names(fused), op_names(fused)
        np.testing.assert_array_equal(run_function(fused, {"x": x})["y"],
                                      run_ort(model, {"x": x})["y"])


def test_a_reflect_pad_of_a_symbolic_axis_compiles_for_every_length():
    from pir.codegen.tvm.codegen import codegen_module
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline
    from pir.runtimes.tvm import TvmInterpreter

    x0 = np.zeros((1, 1, 8), np.float32)
    model = node_model("Pad", {"x": x0}, ["y"], shapes={"x": ["N", 1, "T"]},
                       initializers={"pads": np.array([0, 0, 4, 0, 0, 4], np.int64)},
                       mode="reflect")
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    report = codegen_module(module, "llvm")
    assert report.kernels >= 1 and not report.kept
    top = [op.name for op in module.funcs[0].entry.ops]
    assert not [n for n in top if n.startswith(("nn.", "prim."))], top
    interp = TvmInterpreter(module)
    for t in (9, 33):
        x = np.random.default_rng(t).normal(size=(2, 1, t)).astype(np.float32)
        np.testing.assert_array_equal(interp.run(module.funcs[0], {"x": x})["y"],
                                      run_ort(model, {"x": x})["y"])
