"""Winograd F(2x2, 3x3) convolutions (pir/codegen/tvm/winograd.py): which convolutions take
it, the transformed weights, the region that still means the convolution, and the compiled
kernels (banded or not, even and odd maps, a residual epilogue, several batch sizes)
against the reference rules of the program before codegen."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

import onnx.helper as oh  # noqa: E402

from pir.codegen.tvm.winograd import (G, G_PLUS, band_rows, tile_group,  # noqa: E402
                                      transformed_weights, winograd_source)
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from helpers import codegen_kernels, graph_model  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def test_the_transformed_weights_are_g_g_gt_packed_in_panels():
    w = np.random.default_rng(0).standard_normal((64, 16, 3, 3)).astype(np.float32)
    u = transformed_weights(w, 32)
    assert u.shape == (4, 4, 2, 16, 32) and u.dtype == np.float32  # [4, 4, O/32, C, 32]
    want = np.einsum("ai,ocij,bj->abco", G, w.astype(np.float64), G)  # [4, 4, C, O]
    got = u.transpose(0, 1, 3, 2, 4).reshape(4, 4, 16, 64)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # the region's way back: G+ U G+^T is the 3x3 filter again
    back = np.einsum("ra,abco,sb->ocrs", G_PLUS, got.astype(np.float64), G_PLUS)
    np.testing.assert_allclose(back, w, rtol=1e-5, atol=1e-6)


def test_bands_are_whole_tile_rows_that_fit_and_only_when_u_stays_in_cache():
    assert band_rows(28, 28, 64, 64) == 2     # ResNet-50's 56x56 layers
    assert band_rows(16, 16, 32, 32) == 8     # the most rows within BAND_BYTES
    assert band_rows(7, 7, 256, 256) is None  # U is 4 MB
    assert band_rows(5, 5, 32, 32) is None    # 5 tile rows: no divisor of 2..4
    assert band_rows(4, 4, 32, 32) == 2
    assert band_rows(32, 1, 32, 32) is None   # one tile column: its loop would be dropped


def test_a_register_tile_is_the_most_tiles_of_4_to_8_that_divide_a_row():
    assert [tile_group(tw) for tw in (28, 14, 7, 4, 5, 10, 16, 12)] == [7, 7, 7, 4, 5, 5, 8, 6]
    assert [tile_group(tw) for tw in (1, 2, 3, 11, 13)] == [None] * 5


def _model(hw, c: int = 32, o: int = 32, residual: bool = False, stride: int = 1,
           pad: int = 1):
    """a = relu(conv 1x1 16->c); b = relu(conv 3x3 of a (+ a)); y = conv 1x1 of b, over an
    ``hw`` (or (h, w)) map: b reads and writes channel blocks, the form Winograd takes."""
    h, w = hw if isinstance(hw, tuple) else (hw, hw)
    rng = np.random.default_rng(h * w + c)
    inits, nodes = {}, []

    def conv(name, x, ci, co, k, s=1, p=0):
        inits[f"{name}.w"] = (rng.standard_normal((co, ci, k, k)) * 0.2).astype(np.float32)
        inits[f"{name}.b"] = rng.standard_normal(co).astype(np.float32)
        nodes.append(oh.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [f"{name}.cv"],
                                  kernel_shape=[k, k], strides=[s, s], pads=[p] * 4))
        return f"{name}.cv"

    nodes.append(oh.make_node("Relu", [conv("a", "x", 16, c, 1)], ["a"]))
    b = conv("b", "a", c, o, 3, stride, pad)
    if residual:
        nodes.append(oh.make_node("Add", [b, "a"], ["b.sum"]))
        b = "b.sum"
    nodes.append(oh.make_node("Relu", [b], ["b"]))
    conv("y", "b", o, 32, 1)
    return graph_model(nodes, {"x": ["N", 16, h, w]}, ["y.cv"], inits)


def _compile(model):
    return codegen_kernels(model, FUSE)


def _winograd(kernel) -> bool:
    convs = [op for op in kernel.body.block.ops if op.name == "prim.conv"]
    return any(winograd_source(op.operands[1]) is not None for op in convs)


@pytest.mark.parametrize("hw, c, o, residual, banded", [
    (8, 32, 32, False, True),      # 4x4 tiles, bands of two tile rows
    (9, 32, 32, True, None),       # an odd map: 5x5 tiles, the last row and column cut
    (32, 32, 32, True, True),      # bands of 8 tile rows
    (8, 160, 160, False, False),   # U of 1.6 MB: no bands, the 16 GEMMs in parallel
    ((64, 10), 32, 32, True, True),  # register tiles of 5 tiles
])
def test_the_winograd_kernel_computes_the_convolution(hw, c, o, residual, banded):
    h, w = hw if isinstance(hw, tuple) else (hw, hw)
    module, before, kernels = _compile(_model((h, w), c, o, residual))
    b = kernels["b"]
    assert _winograd(b)
    assert "_wino_v" in b.source and "_wino_m" in b.source
    assert (band_rows(-(-h // 2), -(-w // 2), c, o) is not None) == bool(banded)
    for n in (1, 3):
        x = np.random.default_rng(n).standard_normal((n, 16, h, w)).astype(np.float32)
        want = run_function(before, {"x": x})["y.cv"]
        interp = TvmInterpreter(module)
        for _ in range(2):  # the second run reuses the plan's buffers
            got = interp.run(module.funcs[0], {"x": x})["y.cv"]
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        # the regions' reference rules: U turned back into the 3x3 weights, then the
        # convolution as written
        ref = run_function(parse_module(print_module(module)), {"x": x})["y.cv"]
        np.testing.assert_allclose(ref, want, rtol=1e-4, atol=1e-4)


def test_the_region_holds_u_and_the_way_back_to_the_weights():
    _, _, kernels = _compile(_model(8))
    ops = kernels["b"].body.block.ops
    (u,) = [op for op in ops if op.name == "builtin.constant"
            and op.results[0].name.endswith(".winograd")]
    assert u.results[0].type.shape == (4, 4, 1, 32, 32)
    assert [op.name for op in ops].count("prim.dot_general") == 2
    assert not [op for op in ops if op.name == "builtin.constant"
                and op.results[0].name.endswith(".packed")]  # no 3x3 weights besides


@pytest.mark.parametrize("why, kwargs", [
    ("strided", {"stride": 2}),
    ("unpadded", {"pad": 0}),
    ("48 output channels: not whole panels", {"o": 48}),
    ("3x3 tiles: fewer than MIN_TILES", {"hw": 6}),
    ("one tile column", {"hw": (64, 2)}),
    ("rows of 11 tiles: no register tile of 4 to 8 divides them", {"hw": (16, 22)}),
])
def test_other_convolutions_keep_the_direct_form(why, kwargs):
    args = {"hw": 8, **kwargs}
    module, before, kernels = _compile(_model(**args))
    assert not _winograd(kernels["b"]), why
    assert "_wino" not in kernels["b"].source
    h, w = args["hw"] if isinstance(args["hw"], tuple) else (args["hw"],) * 2
    x = np.random.default_rng(2).standard_normal((2, 16, h, w)).astype(np.float32)
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y.cv"]
    np.testing.assert_allclose(got, run_function(before, {"x": x})["y.cv"],
                               rtol=1e-4, atol=1e-4)
