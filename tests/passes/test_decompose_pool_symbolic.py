"""Poolings over symbolic spatial dims decompose (gathered taps), and agree with ONNX
Runtime at several sizes, through decompose and compiled."""

import numpy as np
import pytest

from helpers import check_pipeline, node_model, op_names, run_ort
from pir.frontends.onnx.importer import import_model

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"

POOLS = [
    ("MaxPool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("MaxPool", {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]}),  # YOLO's SPPF
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2], "dilations": [2, 2]}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("GlobalAveragePool", {}),
]


@pytest.mark.parametrize("op_type, attrs", POOLS, ids=lambda v: str(v))
def test_pool_over_symbolic_spatial_dims(op_type, attrs):
    x0 = np.zeros((1, 2, 9, 9), np.float32)
    model = node_model(op_type, {"x": x0}, ["y"], shapes={"x": ["N", 2, "H", "W"]}, **attrs)
    module = import_model(model)
    for h, w in [(9, 12), (16, 7)]:
        x = np.random.default_rng(h).normal(size=(2, 2, h, w)).astype(np.float32)
        fused = check_pipeline(module, {"x": x}, FUSE, rtol=1e-5, atol=1e-6)
        assert not [n for n in op_names(fused) if n.startswith("nn.")], op_names(fused)
        from pir.runtimes.reference.interpreter import run_function

        np.testing.assert_allclose(run_function(fused, {"x": x})["y"],
                                   run_ort(model, {"x": x})["y"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op_type, attrs", [POOLS[0], POOLS[4]], ids=["max", "average"])
def test_symbolic_pool_compiles_to_one_kernel_for_all_sizes(op_type, attrs, tmp_path):
    from helpers import cli, cli_run

    x0 = np.zeros((1, 2, 9, 9), np.float32)
    model = node_model(op_type, {"x": x0}, ["y"], shapes={"x": ["N", 2, "H", "W"]}, **attrs)
    import onnx

    onnx.save(model, tmp_path / "m.onnx")
    assert cli("import", tmp_path / "m.onnx", "-o", tmp_path / "n.pir")[0] == 0
    assert cli("optimize", tmp_path / "n.pir", "-p", FUSE, "-o", tmp_path / "f.pir")[0] == 0
    code, _, err = cli("codegen", tmp_path / "f.pir", "--target", "llvm", "--explain",
                       "-o", tmp_path / "k.pir")
    assert code == 0, err
    assert "not compiled: nothing" in err, err
    for h, w in [(9, 12), (16, 7)]:
        x = np.random.default_rng(h).normal(size=(2, 2, h, w)).astype(np.float32)
        np.testing.assert_allclose(cli_run(tmp_path / "k.pir", {"x": x}, tmp_path)["y"],
                                   run_ort(model, {"x": x})["y"], rtol=1e-5, atol=1e-6)
