"""Zero halos (pir/codegen/tvm/halo.py): a blocked value that only padded convolutions read,
all padding alike, is written padded by its maker's kernel and read as it is by theirs (no
``*_xpad`` copy); the regions still mean what they did; the kernel writes the border's zeros
whatever its output buffer held before."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

import onnx.helper as oh  # noqa: E402
import tvm  # noqa: E402

from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter, compile_program  # noqa: E402
from helpers import codegen_kernels, graph_model  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _model(second_kernel: int = 3):
    """a = relu(conv 1x1 16->32); b = relu(conv 3x3 of a); s = relu(conv 3x3 stride 2 of a,
    or a ``second_kernel`` x ``second_kernel`` one); c = conv 1x1 of b.  Returns c and s."""
    rng = np.random.default_rng(0)
    inits, nodes = {}, []

    def conv(name, x, c, o, k, stride=1):
        inits[f"{name}.w"] = (rng.standard_normal((o, c, k, k)) * 0.2).astype(np.float32)
        inits[f"{name}.b"] = rng.standard_normal(o).astype(np.float32)
        nodes.append(oh.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [f"{name}.cv"],
                                  kernel_shape=[k, k], strides=[stride] * 2,
                                  pads=[k // 2] * 4))
        nodes.append(oh.make_node("Relu", [f"{name}.cv"], [name]))
        return name

    a = conv("a", "x", 16, 32, 1)
    b = conv("b", a, 32, 32, 3)
    conv("s", a, 32, 32, second_kernel, stride=2)
    conv("c", b, 32, 32, 1)
    return graph_model(nodes, {"x": ["N", 16, 16, 16]}, ["c", "s"], inits)


def _compile(model):
    return codegen_kernels(model, FUSE)


@pytest.fixture(scope="module")
def compiled():
    return _compile(_model())


def test_the_maker_pads_and_the_readers_take_it_as_it_is(compiled):
    _, _, kernels = compiled
    a = kernels["a"]
    assert a.results[0].type.shape == ("N", 2, 18, 18, 16)  # a 1-wide halo
    region = a.body.block
    assert region.ops[-2].name == "prim.pad"  # then the yield
    assert "_interior" in a.source and "_xpad" not in a.source
    for reader in ("b", "s"):  # a 3x3 window, and a strided one onto 8x8
        ops = kernels[reader].body.block.ops
        assert ops[0].name == "prim.slice" and ops[0].operands[0] is \
            kernels[reader].body.block.args[0]
        assert "_xpad" not in kernels[reader].source, reader
    # b is read by a 1x1 convolution, which pads nothing: no halo
    assert kernels["b"].results[0].type.shape == ("N", 2, 16, 16, 16)


@pytest.mark.parametrize("n", [1, 3])
def test_the_padded_program_computes_what_the_program_did(compiled, n):
    module, before, _ = compiled
    x = np.random.default_rng(n).standard_normal((n, 16, 16, 16)).astype(np.float32)
    want = run_function(before, {"x": x})
    interp = TvmInterpreter(module)
    for _ in range(2):  # the second run reuses the plan's buffers
        got = interp.run(module.funcs[0], {"x": x})
        for k in ("c", "s"):
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5)
    ref = run_function(parse_module(print_module(module)), {"x": x})  # the regions' rules
    for k in ("c", "s"):
        np.testing.assert_allclose(ref[k], want[k], rtol=1e-5, atol=1e-5)


def test_the_maker_writes_the_border_whatever_its_buffer_held(compiled):
    module, _, kernels = compiled
    op = kernels["a"]
    kernel = compile_program(module).kernel(op)
    x = np.random.default_rng(5).standard_normal((2, 16, 16, 16)).astype(np.float32)
    dev = tvm.cpu()
    out = tvm.runtime.tensor(np.full((2, 2, 18, 18, 16), np.nan, np.float32), dev)
    kernel.fn(tvm.runtime.tensor(x, dev), *kernel.params, out)
    got = out.numpy()
    inner = got[:, :, 1:17, 1:17, :]
    assert not np.isnan(inner).any()
    border = got.copy()
    border[:, :, 1:17, 1:17, :] = 0
    assert not border.any()  # zeros all round, the NaNs overwritten


def test_readers_that_pad_differently_keep_their_own_copy():
    _, _, kernels = _compile(_model(second_kernel=5))  # a 5x5 window pads by 2
    assert kernels["a"].results[0].type.shape == ("N", 2, 16, 16, 16)
    assert "_xpad" in kernels["b"].source and "_xpad" in kernels["s"].source


def _two_readers(pads, dilations=(1, 1), k=3):
    """a = relu(conv 1x1 16->32) read by two k x k convolutions (stride 1 and 2) with
    ``pads`` (ONNX order: top, left, bottom, right) and ``dilations``."""
    rng = np.random.default_rng(7)
    inits = {}
    nodes = []
    for name, x, c, o, kk, stride, p in [("a", "x", 16, 32, 1, 1, [0] * 4),
                                         ("b", "a", 32, 32, k, 1, pads),
                                         ("s", "a", 32, 16, k, 2, pads)]:
        inits[f"{name}.w"] = (rng.standard_normal((o, c, kk, kk)) * 0.2).astype(np.float32)
        attrs = {"dilations": list(dilations)} if name != "a" else {}
        nodes.append(oh.make_node("Conv", [x, f"{name}.w"], [f"{name}.cv"],
                                  kernel_shape=[kk, kk], strides=[stride] * 2, pads=p,
                                  **attrs))
        nodes.append(oh.make_node("Relu", [f"{name}.cv"], [name]))
    return graph_model(nodes, {"x": ["N", 16, 20, 20]}, ["b", "s"], inits)


@pytest.mark.parametrize("pads, dilations, halo_shape", [
    ([0, 0, 1, 1], (1, 1), ("N", 2, 21, 21, 16)),   # asymmetric: bottom and right only
    ([1, 2, 1, 0], (1, 1), ("N", 2, 22, 22, 16)),   # every side different
    ([2, 2, 2, 2], (2, 2), ("N", 2, 24, 24, 16)),   # a dilated window
])
def test_any_padding_the_readers_share(pads, dilations, halo_shape):
    module, before, kernels = _compile(_two_readers(pads, dilations))
    assert kernels["a"].results[0].type.shape == halo_shape
    assert "_xpad" not in kernels["b"].source and "_xpad" not in kernels["s"].source
    x = np.random.default_rng(8).standard_normal((2, 16, 20, 20)).astype(np.float32)
    want = run_function(before, {"x": x})
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})
    for k in ("b", "s"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5)
