"""Matmuls by constant weights compiled as TVM GEMM kernels (pir/codegen/tvm/gemm.py): the
matmul group codegen forms (packed weights, the epilogue moved in), its meaning on the
reference runtime, and the compiled kernel against numpy for static and symbolic row counts,
tails included, with and without an epilogue, for [K, N] and [N, K] (transB) weights."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tvm")

from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.codegen.tvm.gemm import MATMUL  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.fusion import GroupOp  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.ir.verifier import verify_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from helpers import AVX512, node_model  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _gemm_model(rows, k, n, *, trans_b=False, act=None, seed=0):
    """x [*rows, K] @ W (+ bias, then act): a MatMul, or a Gemm with transB for 2-d x."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    x = np.zeros([2] * len(rows) + [k], np.float32)
    shapes = {"x": list(rows) + [k]}
    if trans_b:
        return node_model("Gemm", {"x": x}, ["y"], initializers={"w": w, "b": bias},
                          transB=1, shapes=shapes)
    model = node_model("MatMul", {"x": x}, ["y"], initializers={"w": w}, shapes=shapes)
    if act is not None:  # append Add(bias) and the activation
        import onnx.helper as oh
        g = model.graph
        g.node[0].output[0] = "mm"
        g.node.append(oh.make_node("Add", ["mm", "b"], ["h"]))
        g.node.append(oh.make_node(act, ["h"], ["y"]))
        g.initializer.append(__import__("onnx").numpy_helper.from_array(bias, "b"))
    return model


def _compile(model):
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    ref = print_module(module)
    report = codegen_module(module, AVX512)
    verify_module(module)
    return module, parse_module(ref), report


def _kernels(module, kind=MATMUL):
    return [op for op in module.walk() if isinstance(op, TvmKernelOp) and op.kind == kind]


def _matches_reference(module, before, x):
    """The compiled ``module`` computes ``y`` from ``x`` as the program ``before`` codegen."""
    want = run_function(before, {"x": x})["y"]
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows,shape", [
    (["B", 16], (3, 16)),            # static tile-divisible rows under a symbolic batch
    (["B", "S"], (2, 13)),           # two symbolic dims: padded rows (13 = 8 + 5)
    (["N"], (5,)),                   # fewer rows than one tile
    ([24], (24,)),
])
@pytest.mark.parametrize("act", [None, "Relu", "Tanh"])
def test_gemm_kernel_matches_reference(rows, shape, act):
    model = _gemm_model(rows, 48, 64, act=act)
    module, before, report = _compile(model)
    assert report.matmuls == 1
    (kernel,) = _kernels(module)
    names = [op.name for op in kernel.body.block.ops]
    assert names[:3] == ["builtin.constant", "prim.dot_general", "prim.reshape"]
    if act is not None:  # the bias add and the activation moved into the kernel
        assert "prim.add" in names and not [op for op in module.walk()
                                            if isinstance(op, GroupOp)]
    x = np.random.default_rng(1).standard_normal(shape + (48,)).astype(np.float32)
    want = run_function(before, {"x": x})["y"]
    interp = TvmInterpreter(module)
    got = interp.run(module.funcs[0], {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # the region means the same on the reference runtime
    np.testing.assert_allclose(run_function(module, {"x": x})["y"], want, rtol=1e-5, atol=1e-5)


def test_transposed_weights_are_packed_the_same_way():
    model = _gemm_model(["N"], 40, 32, trans_b=True)
    module, before, report = _compile(model)
    assert report.matmuls == 1
    x = np.random.default_rng(2).standard_normal((7, 40)).astype(np.float32)
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y"]
    np.testing.assert_allclose(got, run_function(before, {"x": x})["y"], rtol=1e-5, atol=1e-5)


def test_packed_weights_replace_the_original_ones():
    module, _, _ = _compile(_gemm_model(["N"], 64, 96))
    (kernel,) = _kernels(module)
    packed = kernel.body.block.ops[0].results[0].type.shape
    assert packed == (3, 64, 32)  # [N / 32, K, 32]
    # the unpacked [K, N] weights are gone from the function
    shapes = [op.results[0].type.shape for op in module.funcs[0].entry.ops
              if op.name == "builtin.constant"]
    assert (64, 96) not in shapes
    # and the kernel's TIR is the tiled schedule: a vector of 32 columns, 8 unrolled rows
    assert "T.vectorized(32)" in kernel.source and "T.unroll(8)" in kernel.source


@pytest.mark.parametrize("act", [None, "Relu"])
@pytest.mark.parametrize("n", [24, 40, 1000])
def test_columns_16_does_not_divide_are_padded_and_sliced_off(n, act):
    module, before, report = _compile(_gemm_model(["N"], 32, n, act=act))
    assert report.matmuls == 1
    (kernel,) = _kernels(module)
    ops = kernel.body.block.ops
    # whole 16-wide vectors; from 256 columns on, whole 32-wide panels (1000 -> 1024)
    n_pad = -(-n // 16) * 16 if n < 256 else -(-n // 32) * 32
    packed = ops[0].results[0].type.shape
    assert packed[0] * packed[2] == n_pad and packed[2] == (16 if n_pad % 32 else 32)
    assert "prim.slice" in [op.name for op in ops]
    x = np.random.default_rng(7).standard_normal((11, 32)).astype(np.float32)
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y"]
    assert got.shape == (11, n)
    np.testing.assert_allclose(got, run_function(before, {"x": x})["y"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k,n", [(48, 10), (8, 64)])
def test_shapes_the_kernel_does_not_take_stay_library_calls(k, n):
    """Fewer than 16 columns (padding would more than double the work), or K too short to be
    worth a kernel: numpy's BLAS keeps it."""
    module, before, report = _compile(_gemm_model(["N"], k, n))
    assert report.matmuls == 0
    assert any(op.name == "prim.dot_general" for op in module.walk())
    x = np.random.default_rng(3).standard_normal((3, k)).astype(np.float32)
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y"]
    np.testing.assert_allclose(got, run_function(before, {"x": x})["y"], rtol=1e-5)


def _conv_model(c, o, k, stride, pad, hw, seed=0, group=1, relu=True):
    import onnx
    import onnx.helper as oh
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((o, c // group, k, k)) * 0.1).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    nodes = [oh.make_node("Conv", ["x", "w", "b"], ["cv" if relu else "y"], kernel_shape=[k, k],
                          strides=[stride, stride], pads=[pad] * 4, group=group)]
    if relu:
        nodes.append(oh.make_node("Relu", ["cv"], ["y"]))
    g = oh.make_graph(nodes, "conv", [oh.make_tensor_value_info("x", 1, ["N", c, hw, hw])],
                      [oh.make_tensor_value_info("y", 1, None)],
                      [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 9
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize("c,o,k,stride,pad,hw", [
    (8, 32, 3, 1, 1, 10),    # 3x3 "same": im2col with zero padding
    (16, 64, 1, 1, 0, 7),    # 1x1 stride 1: no im2col copy; 49 positions, tiles of 7
    (16, 32, 1, 2, 0, 14),   # 1x1 stride 2 (a ResNet downsample)
    (3, 64, 7, 2, 3, 32),    # the ResNet stem
    (8, 16, 3, 2, 1, 9),     # odd sizes: 25 positions, padded tiles
    (16, 32, 1, 1, 0, 16),   # 1x1 stride 1 on 256 positions: positions in the vectors
    (64, 24, 1, 1, 0, 8),    # 24 output channels: padded to 32 with zero filters, sliced
    (8, 40, 3, 2, 1, 9),     # 40 (padded to 48: three 16-wide panels), 3x3 stride 2
    (16, 24, 1, 1, 0, 16),   # 24 channels, positions in the vectors
])
def test_conv_kernel_matches_reference(c, o, k, stride, pad, hw):
    module, before, report = _compile(_conv_model(c, o, k, stride, pad, hw))
    assert report.matmuls == 1
    (kernel,) = _kernels(module, "conv")
    assert "prim.max" in [op.name for op in kernel.body.block.ops]  # the relu moved in
    assert "T.vectorized(" in kernel.source and "T.unroll(" in kernel.source
    x = np.random.default_rng(4).standard_normal((2, c, hw, hw)).astype(np.float32)
    _matches_reference(module, before, x)


@pytest.mark.parametrize("c,o,k,hw", [
    (32, 32, 3, 9),   # 9 x 9 = 81 positions
    (48, 24, 1, 3),   # 9 positions, and 24 channels sliced from 32 (two predicates)
])
def test_positions_no_tile_divides_keep_the_register_tile(c, o, k, hw):
    # No tile of 4..8 rows divides the positions.  The last tile is cut by a predicate;
    # TVM's pad_einsum refuses a convolution's window indices, which used to leave such a
    # kernel on the generic schedule (about 100x slower)
    module, before, _ = _compile(_conv_model(c, o, k, 1, k // 2, hw))
    (kernel,) = _kernels(module, "conv")
    assert 'scope="local"' in kernel.source and "T.where(" in kernel.source
    x = np.random.default_rng(6).standard_normal((2, c, hw, hw)).astype(np.float32)
    _matches_reference(module, before, x)


@pytest.mark.parametrize("o,k,stride,pad,dil", [
    (64, 3, 1, 1, 1),    # Whisper's first conv1d: kernel 3, "same"
    (24, 3, 2, 1, 1),    # stride 2, channels padded to 32
    (32, 5, 1, 4, 2),    # dilated
])
def test_a_1d_conv_is_a_2d_kernel_over_a_unit_height(o, k, stride, pad, dil):
    import onnx
    import onnx.helper as oh
    rng = np.random.default_rng(8)
    c, width = 16, 30
    w = (rng.standard_normal((o, c, k)) * 0.1).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    nodes = [oh.make_node("Conv", ["x", "w", "b"], ["cv"], kernel_shape=[k], strides=[stride],
                          pads=[pad, pad], dilations=[dil]),
             oh.make_node("Relu", ["cv"], ["y"])]
    g = oh.make_graph(nodes, "conv1d", [oh.make_tensor_value_info("x", 1, ["N", c, width])],
                      [oh.make_tensor_value_info("y", 1, None)],
                      [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 9
    module, before, report = _compile(onnx.shape_inference.infer_shapes(model))
    assert report.matmuls == 1
    (kernel,) = _kernels(module, "conv")
    convs = [op for op in kernel.body.block.ops if op.name == "prim.conv"]
    assert len(convs[0].operands[0].type.shape) == 4  # [N, C, 1, W]
    assert "prim.max" in [op.name for op in kernel.body.block.ops]  # the relu moved in
    x = rng.standard_normal((2, c, width)).astype(np.float32)
    _matches_reference(module, before, x)


def test_a_wide_1x1_conv_puts_positions_in_the_vectors_and_adds_its_residual_in_place():
    import onnx
    import onnx.helper as oh

    rng = np.random.default_rng(5)
    w = (rng.standard_normal((32, 16, 1, 1)) * 0.1).astype(np.float32)
    nodes = [oh.make_node("Conv", ["x", "w"], ["cv"], kernel_shape=[1, 1]),
             oh.make_node("Add", ["cv", "res"], ["s"]), oh.make_node("Relu", ["s"], ["y"])]
    g = oh.make_graph(nodes, "res", [oh.make_tensor_value_info("x", 1, ["N", 16, 16, 16]),
                                     oh.make_tensor_value_info("res", 1, ["N", 32, 16, 16])],
                      [oh.make_tensor_value_info("y", 1, None)],
                      [onnx.numpy_helper.from_array(w, "w")])
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 9
    module, before, report = _compile(onnx.shape_inference.infer_shapes(model))
    (kernel,) = _kernels(module, "conv")
    # the [N, O, P] product, its P = 256 positions in vectors of 32, written as it is tiled:
    # the residual is read and the output written with whole vectors (the register tile's
    # buffer, [O, P], has no batch dim: pir.codegen.tvm.batch_private)
    assert "T.sblock_alloc_buffer((32, 256)" in kernel.source
    assert "for p_1 in T.vectorized(32)" in kernel.source
    feeds = {"x": rng.standard_normal((2, 16, 16, 16)).astype(np.float32),
             "res": rng.standard_normal((2, 32, 16, 16)).astype(np.float32)}
    want = run_function(before, feeds)["y"]
    got = TvmInterpreter(module).run(module.funcs[0], feeds)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_column_panels_run_in_chunks_that_stay_in_l2():
    # 1024 positions in 32 panels of 32, K = 64: a panel's slice of the input is 8 KB, so
    # row tiles (channels) pass over 8 panels (64 KB) before the next chunk, and 4 chunks
    # are left to run in parallel; each output row is written 8 panels wide at a time
    from pir.codegen.tvm.gemm_schedule import CHUNK_BYTES
    assert 8 * 64 * 32 * 4 <= CHUNK_BYTES
    module, before, report = _compile(_conv_model(64, 32, 1, 1, 0, 32, relu=True))
    (kernel,) = _kernels(module, "conv")
    assert "for p_0_0 in T.parallel(4):" in kernel.source
    assert "T.grid(N, 4, 8)" in kernel.source  # batch, channel tiles, the chunk's panels
    x = np.random.default_rng(6).standard_normal((2, 64, 32, 32)).astype(np.float32)
    _matches_reference(module, before, x)


@pytest.mark.parametrize("c,mult,k,stride,pad,hw,relu", [
    (16, 1, 3, 1, 1, 16, True),    # MobileNet's 3x3 "same": a row of 16, one vector
    (8, 2, 3, 2, 1, 9, True),      # channel multiplier 2, stride 2, an odd row of 5
    (4, 1, 5, 1, 2, 40, False),    # a 5x5 filter, rows of 40 (not a multiple of 16)
])
def test_depthwise_conv_kernel_matches_reference(c, mult, k, stride, pad, hw, relu):
    module, before, report = _compile(
        _conv_model(c, c * mult, k, stride, pad, hw, group=c, relu=relu))
    assert report.matmuls == 1
    (kernel,) = _kernels(module, "dwconv")
    assert "T.parallel(" in kernel.source and "T.vectorized(" in kernel.source
    x = np.random.default_rng(5).standard_normal((2, c, hw, hw)).astype(np.float32)
    _matches_reference(module, before, x)


@pytest.mark.parametrize("k,pad,hw,relu", [(3, 1, 28, True), (5, 2, 29, False), (3, 0, 40, True)])
def test_a_stride_2_depthwise_conv_reads_phased_columns_in_whole_vectors(k, pad, hw, relu):
    """Stride 2: the padded input's columns dealt into two phases (a 5-d ``*_xpad``), so each
    tap reads a contiguous run; rows that 16 does not divide computed as whole vectors."""
    module, before, _ = _compile(_conv_model(8, 8, k, 2, pad, hw, group=8, relu=relu))
    (kernel,) = _kernels(module, "dwconv")
    xpad = [line for line in kernel.source.splitlines()
            if "_xpad = T.sblock_alloc_buffer" in line]
    assert xpad and xpad[0].count(",") == 4, xpad  # [N, C, Hp, 2, ceil(Wp / 2)]
    lines = kernel.source.splitlines()
    update = next(i for i, line in enumerate(lines) if '_dw_update")' in line)
    vector = re.search(r"T\.vectorized\((\d+)\)", lines[update - 1])
    assert vector and int(vector.group(1)) % 16 == 0, lines[update - 1]  # whole vectors
    x = np.random.default_rng(6).standard_normal((2, 8, hw, hw)).astype(np.float32)
    _matches_reference(module, before, x)


COMPUTED_W = """module {{
  func.func @main(%x: tensor<Nx{k}xf32>, %w: tensor<{wshape}xf32>, %b: tensor<{n}xf32>) -> (tensor<Nx{n}xf32>) {{
    %mm = prim.dot_general(%x, %w) {{lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [{rc}]}} : (tensor<Nx{k}xf32>, tensor<{wshape}xf32>) -> tensor<Nx{n}xf32>
    %bb = prim.broadcast_in_dim(%b) {{broadcast_dimensions = [1]}} : (tensor<{n}xf32>) -> tensor<Nx{n}xf32>
    %y = prim.add(%mm, %bb) : (tensor<Nx{n}xf32>, tensor<Nx{n}xf32>) -> tensor<Nx{n}xf32>
    func.return(%y) : (tensor<Nx{n}xf32>) -> ()
  }}
}}
"""


@pytest.mark.parametrize("rows,n", [(16, 40), (64, 272), ("M", 40), ("M", 1000)])
def test_an_epilogue_with_two_results_over_sliced_columns_waits_for_every_panel(rows, n):
    """x @ w + b -> (relu, sigmoid), N padded to whole panels and sliced: the two epilogue
    blocks read columns of every panel, so they may not run inside the parallel loop over
    panels (they did, racing the threads still computing other panels: errors of 2-8)."""
    import onnx.helper as oh

    from helpers import graph_model
    from pir.codegen.tvm.build import set_threads, threads

    rng = np.random.default_rng(11)
    w = (rng.standard_normal((32, n)) * 0.2).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    nodes = [oh.make_node("MatMul", ["x", "w"], ["mm"]), oh.make_node("Add", ["mm", "b"], ["t"]),
             oh.make_node("Relu", ["t"], ["y"]), oh.make_node("Sigmoid", ["t"], ["z"])]
    module, before, _ = _compile(graph_model(nodes, {"x": [rows, 32]}, ["y", "z"],
                                             {"w": w, "b": b}))
    (kernel,) = _kernels(module)
    assert "prim.slice" in [op.name for op in kernel.body.block.ops]
    x = rng.standard_normal((16 if rows == "M" else rows, 32)).astype(np.float32)
    want = run_function(before, {"x": x})
    was = threads()
    set_threads(2)  # the race needs a second thread (CI has two cores)
    try:
        got = TvmInterpreter(module).run(module.funcs[0], {"x": x})
    finally:
        set_threads(was)
    for k in ("y", "z"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("transposed,k", [(False, 24), (True, 24), (False, 2)])
def test_computed_weights_are_packed_in_the_kernel(transposed, k):
    """A function that takes its weights as an input (a derivative, a training step): the
    kernel packs them itself ([N, K] ones transposed first) into a buffer before the GEMM.
    K = 2: a PINN's first layer on its (x, y) points."""
    n = 64
    text = COMPUTED_W.format(k=k, n=n, wshape=f"{n}x{k}" if transposed else f"{k}x{n}",
                             rc=1 if transposed else 0)
    module = parse_module(text)
    PassManager(parse_pipeline("fuse")).run(module)
    before = parse_module(print_module(module))
    report = codegen_module(module, AVX512)
    assert report.matmuls == 1
    (kernel,) = _kernels(module)
    assert [v.name for v in kernel.operands] == ["x", "w", "b"]
    assert "_wpack" in kernel.source  # its own stage, not a gather inlined in the GEMM
    rng = np.random.default_rng(4)
    feeds = {"x": rng.standard_normal((11, k)).astype(np.float32),
             "w": rng.standard_normal((n, k) if transposed else (k, n)).astype(np.float32),
             "b": rng.standard_normal(n).astype(np.float32)}
    got = TvmInterpreter(module).run(module.funcs[0], feeds)["y"]
    np.testing.assert_allclose(got, run_function(before, feeds)["y"], rtol=1e-5, atol=1e-5)


def test_an_epilogue_with_two_results_over_a_map_no_tile_is_a_box_of():
    """A 1x1 convolution over a 5 x 2 map, its epilogue two results: the tile of 5 of the 10
    positions is no rectangle of (h, w), and TVM's region for the epilogue moved into the
    tile missed part of it (a quantized ResNet's layer4: 40% of the outputs unwritten)."""
    import onnx
    import onnx.helper as oh
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((64, 32, 1, 1)) * 0.1).astype(np.float32)
    nodes = [oh.make_node("Conv", ["x", "w"], ["cv"]),
             oh.make_node("Relu", ["cv"], ["y"]), oh.make_node("Sigmoid", ["cv"], ["z"])]
    g = oh.make_graph(nodes, "conv2", [oh.make_tensor_value_info("x", 1, [1, 32, 5, 2])],
                      [oh.make_tensor_value_info("y", 1, None),
                       oh.make_tensor_value_info("z", 1, None)],
                      [onnx.numpy_helper.from_array(w, "w")])
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 9
    module, before, _ = _compile(onnx.shape_inference.infer_shapes(model))
    (kernel,) = _kernels(module, "conv")
    assert len(kernel.results) == 2
    x = rng.standard_normal((1, 32, 5, 2)).astype(np.float32)
    want = run_function(before, {"x": x})
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})
    for name in ("y", "z"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)
