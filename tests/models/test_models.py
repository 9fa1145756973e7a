"""Models of real architectures, exported from PyTorch: import, byte-identical round trip,
and the reference runtime against ONNX Runtime.

Tolerance: rtol 1e-4 elementwise, with an absolute floor of 1e-5 times the output's largest
magnitude (elementwise relative error is meaningless at values that are almost zero).
"""

import pathlib

import numpy as np
import onnx
import pytest

from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_file_bytes
from pir.ir.printer import print_module
from pir.runtimes.ort import run_onnxruntime
from pir.runtimes.reference import run_function

HERE = pathlib.Path(__file__).parent
MODELS = sorted(p.stem for p in HERE.glob("*.onnx"))


@pytest.fixture(scope="module", params=MODELS)
def imported(request):
    name = request.param
    path = HERE / f"{name}.onnx"
    return name, path, import_model(str(path))


def test_there_are_models_of_every_architecture():
    assert set(MODELS) >= {"gpt2", "bert", "llama", "t5", "whisper", "vit", "resnet", "mobilenet"}


def test_round_trip_is_byte_identical(imported):
    name, _, module = imported
    text = print_module(module)
    again = print_module(parse_file_bytes(text.encode(), f"{name}.pir"))
    assert again == text


def test_weights_are_resources(imported):
    name, path, module = imported
    model = onnx.load(str(path))
    biggest = max(model.graph.initializer, key=lambda t: np.prod(t.dims))
    assert biggest.name in module.resources or any(
        np.array_equal(a, onnx.numpy_helper.to_array(biggest)) for a in module.resources.values())


def test_matches_onnxruntime(imported):
    name, path, module = imported
    feeds = dict(np.load(HERE / f"{name}.inputs.npz"))
    ours = run_function(module, feeds)
    theirs = run_onnxruntime(onnx.load(str(path)), feeds)
    assert set(ours) == set(theirs)
    for out, want in theirs.items():
        got = ours[out]
        assert got.shape == want.shape and got.dtype == want.dtype, out
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale, err_msg=f"{name}:{out}")


def test_symbolic_dims_stay_symbolic(imported):
    name, _, module = imported
    fn = module.funcs[0]
    if name in ("gpt2", "bert", "llama"):
        assert fn.args[0].type.shape == ("batch", "seq")
