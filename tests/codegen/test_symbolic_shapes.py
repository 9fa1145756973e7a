"""Convolutions and batched products with symbolic sizes compiled as TVM kernels
(pir/codegen/tvm/direct.py, pir/codegen/tvm/bmm.py): a symbolic-H/W convolution with its
bias and relu, strided and padded; a 1-d, a grouped, a depthwise and a transposed one; and
attention's batched ``[B, heads, S, D] x [B, heads, D, S]`` product.  Each program is
compiled once and run at two sizes against ONNX Runtime; the second size builds nothing, and
the op runs inside a kernel.tvm, not as a numpy library call."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import onnx
import pytest
from onnx import helper as oh

pytest.importorskip("tvm")
ort = pytest.importorskip("onnxruntime")

from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.verifier import verify_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter, executor  # noqa: E402
from helpers import AVX512, cli, graph_model  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"
REPRO = pathlib.Path(__file__).resolve().parents[1] / "real" / "repro"


def _weights(*shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 0.2).astype(np.float32)


def _compile(model: onnx.ModelProto):
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    report = codegen_module(module, AVX512)
    verify_module(module)
    return module, report


def _in_kernels(module, name: str, kind: str) -> None:
    """Every ``name`` op of the program runs inside a kernel.tvm of ``kind``."""
    fn = module.funcs[0]
    assert not [op for op in fn.entry.ops if op.name == name], f"{name} left to numpy"
    kernels = [op for op in fn.entry.ops if isinstance(op, TvmKernelOp)
               and any(inner.name == name for inner in op.body.block.ops)]
    assert kernels and all(k.kind == kind for k in kernels)


def _runs_like_ort(model, module, shapes: list[dict[str, tuple]], tol=1e-4) -> None:
    """Run the compiled ``module`` at each of ``shapes`` (input -> shape) against ONNX
    Runtime; the first run's build is the only one."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    interp = TvmInterpreter(module)
    built = dict(executor.stats)
    rng = np.random.default_rng(1)
    for feeds_shapes in shapes:
        feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in feeds_shapes.items()}
        want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        got = interp.run(module.funcs[0], feeds)
        for k, w in want.items():
            assert got[k].shape == w.shape
            err = np.abs(got[k].astype(np.float64) - w).max() / max(np.abs(w).max(), 1e-6)
            assert err < tol, (feeds_shapes, k, err)
        assert executor.stats == built, "a second size built (or loaded) kernels again"
    # and a second runtime of the same program loads nothing either
    TvmInterpreter(module)
    assert executor.stats == built


@pytest.mark.parametrize("stride,pad,bias", [(1, 1, True), (2, 1, True), (2, 0, False),
                                              (1, 2, False)])
def test_a_symbolic_hw_conv_with_its_epilogue_is_one_kernel(stride, pad, bias):
    inits = {"w": _weights(16, 3, 3, 3)}
    if bias:
        inits["b"] = _weights(16, seed=1)
    nodes = [oh.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["c"],
                          kernel_shape=[3, 3], pads=[pad] * 4, strides=[stride] * 2),
             oh.make_node("Relu", ["c"], ["y"])]
    model = graph_model(nodes, {"x": ["N", 3, "H", "W"]}, ["y"], inits)
    module, report = _compile(model)
    assert report.matmuls == 1 and not report.kept
    _in_kernels(module, "prim.conv", "conv")
    (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    assert "prim.max" in [op.name for op in kernel.body.block.ops]  # the relu moved in
    assert "T.vectorized(16)" in kernel.source and "T.where(" in kernel.source
    _runs_like_ort(model, module, [{"x": (1, 3, 20, 24)}, {"x": (2, 3, 33, 17)}])


def test_a_stack_of_symbolic_convs_hands_expression_dims_on():
    """The second conv reads ``(H + 1) floordiv 2``: its kernel takes H and W as
    parameters (pir.codegen.tvm.dims); the third is grouped and adds a residual."""
    nodes = [oh.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1], strides=[2, 2]),
             oh.make_node("Relu", ["c1"], ["r1"]),
             oh.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
             oh.make_node("Relu", ["c2"], ["r2"]),
             oh.make_node("Conv", ["r2", "w3"], ["c3"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                          group=4),
             oh.make_node("Add", ["c3", "r2"], ["y"])]
    inits = {"w1": _weights(16, 3, 3, 3), "b1": _weights(16, seed=1),
             "w2": _weights(32, 16, 3, 3, seed=2), "b2": _weights(32, seed=3),
             "w3": _weights(32, 8, 3, 3, seed=4)}
    model = graph_model(nodes, {"x": ["N", 3, "H", "W"]}, ["y"], inits)
    module, report = _compile(model)
    assert report.matmuls == 3 and report.kernels == 3
    _in_kernels(module, "prim.conv", "conv")
    _runs_like_ort(model, module, [{"x": (1, 3, 21, 18)}, {"x": (2, 3, 32, 40)}])


@pytest.mark.parametrize("stride,dil", [(1, 1), (2, 1), (1, 2)])
def test_a_1d_conv_over_a_symbolic_length(stride, dil):
    nodes = [oh.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3], pads=[2, 2],
                          strides=[stride], dilations=[dil]),
             oh.make_node("Relu", ["c"], ["y"])]
    model = graph_model(nodes, {"x": ["N", 8, "L"]}, ["y"],
                        {"w": _weights(12, 8, 3), "b": _weights(12, seed=1)})
    module, _ = _compile(model)
    _in_kernels(module, "prim.conv", "conv")
    _runs_like_ort(model, module, [{"x": (1, 8, 37)}, {"x": (3, 8, 100)}])


@pytest.mark.parametrize("rank,o", [(1, 257), (2, 100)], ids=["stft-257", "2d-100"])
def test_an_odd_channel_count_is_padded_to_whole_tiles_and_sliced(rank, o):
    # 257 STFT bins (a 512-tap, stride-160 convolution over a symbolic length) or 100
    # channels: computed as 272 / 112 with zero weights, 16 channels a tile, and cut back
    if rank == 1:
        conv = oh.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[64], strides=[16])
        inputs, w, sizes = {"x": ["N", 1, "L"]}, _weights(o, 1, 64), [(1, 1, 200), (2, 1, 531)]
    else:
        conv = oh.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
                            pads=[1, 1, 1, 1])
        inputs, w, sizes = {"x": ["N", 8, "H", "W"]}, _weights(o, 8, 3, 3), [(1, 8, 9, 20),
                                                                          (2, 8, 17, 5)]
    nodes = [conv, oh.make_node("Relu", ["c"], ["y"])]
    model = graph_model(nodes, inputs, ["y"], {"w": w, "b": _weights(o, seed=1)})
    module, _ = _compile(model)
    _in_kernels(module, "prim.conv", "conv")
    (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    (cut,) = [op for op in kernel.body.block.ops if op.name == "prim.slice"]
    assert cut.operands[0].type.shape[1] == -(-o // 16) * 16 and cut.results[0].type.shape[1] == o
    if rank == 1:  # 16 channels a vector (pir.codegen.tvm.lanes)
        assert "_lanes" in kernel.source and "T.vectorized(16)" in kernel.source
    else:
        assert "T.unroll(16)" in kernel.source  # sixteen channels a tile
    _runs_like_ort(model, module, [{"x": s} for s in sizes])


@pytest.mark.parametrize("o,k,stride,dil", [(32, 3, 1, 1), (128, 3, 2, 1), (64, 5, 1, 2),
                                            (16, 1, 1, 1)])
def test_a_1d_conv_over_a_short_run_time_length_puts_channels_in_the_lanes(o, k, stride, dil):
    """Whole vectors of 16 output channels by 4 positions: a streaming model's 1, 4 or 37
    frames compute no padded positions beyond the last tile of 4."""
    nodes = [oh.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k], pads=[1, 1],
                          strides=[stride], dilations=[dil]),
             oh.make_node("Relu", ["c"], ["y"])]
    model = graph_model(nodes, {"x": ["N", 24, "L"]}, ["y"],
                        {"w": _weights(o, 24, k), "b": _weights(o, seed=1)})
    module, _ = _compile(model)
    _in_kernels(module, "prim.conv", "conv")
    (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    assert "_lanes = T.sblock_alloc_buffer" in kernel.source
    length = (dil * (k - 1) + 1) - 2  # the shortest input with one output position
    _runs_like_ort(model, module, [{"x": (1, 24, max(length, 1))}, {"x": (1, 24, 7)},
                                   {"x": (2, 24, 74)}])


def test_1d_convs_the_lanes_do_not_fit_keep_positions_in_the_lanes():
    """12 channels (16 does not divide them, too few to pad) and a grouped conv."""
    for o, group in [(12, 1), (32, 2)]:
        nodes = [oh.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3], group=group)]
        model = graph_model(nodes, {"x": ["N", 8, "L"]}, ["y"], {"w": _weights(o, 8 // group, 3)})
        module, _ = _compile(model)
        (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
        assert "_lanes" not in kernel.source and "_gemm" in kernel.source
        _runs_like_ort(model, module, [{"x": (1, 8, 9)}, {"x": (2, 8, 40)}])


@pytest.mark.parametrize("c,o,group", [(8, 16, 2), (8, 8, 8), (6, 12, 3)])
def test_grouped_and_depthwise_convs_over_symbolic_hw(c, o, group):
    nodes = [oh.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1], group=group)]
    model = graph_model(nodes, {"x": ["N", c, "H", "W"]}, ["y"],
                        {"w": _weights(o, c // group, 3, 3), "b": _weights(o, seed=1)})
    module, _ = _compile(model)
    _in_kernels(module, "prim.conv", "conv")
    _runs_like_ort(model, module, [{"x": (1, c, 9, 13)}, {"x": (2, c, 20, 17)}])


def test_a_static_grouped_conv_is_compiled_too():
    nodes = [oh.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                          group=2)]
    model = graph_model(nodes, {"x": ["N", 8, 12, 12]}, ["y"], {"w": _weights(16, 4, 3, 3)})
    module, _ = _compile(model)
    _in_kernels(module, "prim.conv", "conv")
    _runs_like_ort(model, module, [{"x": (1, 8, 12, 12)}, {"x": (2, 8, 12, 12)}])


@pytest.mark.parametrize("stride,pad,k", [(2, 1, 4), (1, 1, 3), (2, 0, 3)])
def test_a_conv_transpose_over_symbolic_hw(stride, pad, k):
    """Decomposed to a conv with input dilation, which the direct form dilates in its
    zero-padded copy of the input."""
    nodes = [oh.make_node("ConvTranspose", ["x", "w", "b"], ["c"], kernel_shape=[k, k],
                          pads=[pad] * 4, strides=[stride] * 2),
             oh.make_node("Relu", ["c"], ["y"])]
    model = graph_model(nodes, {"x": ["N", 8, "H", "W"]}, ["y"],
                        {"w": _weights(8, 12, k, k), "b": _weights(12, seed=1)})
    module, _ = _compile(model)
    _in_kernels(module, "prim.conv", "conv")
    _runs_like_ort(model, module, [{"x": (1, 8, 7, 9)}, {"x": (2, 8, 12, 5)}])


def test_attention_products_over_a_symbolic_sequence():
    """softmax(q . k^T * scale) . v, [B, heads, S, D]: both products are kernels (the
    scale moved into the first as its epilogue)."""
    scale = oh.make_tensor("scale", onnx.TensorProto.FLOAT, [], [0.125])
    nodes = [oh.make_node("MatMul", ["q", "kt"], ["s"]), oh.make_node("Mul", ["s", "scale"], ["z"]),
             oh.make_node("Softmax", ["z"], ["p"], axis=-1),
             oh.make_node("MatMul", ["p", "v"], ["y"])]
    graph = oh.make_graph(
        nodes, "attention",
        [oh.make_tensor_value_info("q", 1, ["B", 4, "S", 16]),
         oh.make_tensor_value_info("kt", 1, ["B", 4, 16, "S"]),
         oh.make_tensor_value_info("v", 1, ["B", 4, "S", 16])],
        [oh.make_tensor_value_info("y", 1, None)], [scale])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 9
    model = onnx.shape_inference.infer_shapes(model)
    module, report = _compile(model)
    assert report.matmuls == 2
    _in_kernels(module, "prim.dot_general", "matmul")
    first = next(op for op in module.walk() if isinstance(op, TvmKernelOp)
                 and op.kind == "matmul")
    assert "prim.mul" in [op.name for op in first.body.block.ops]  # the scale moved in
    _runs_like_ort(model, module, [
        {"q": (1, 4, 7, 16), "kt": (1, 4, 16, 7), "v": (1, 4, 7, 16)},
        {"q": (2, 4, 37, 16), "kt": (2, 4, 16, 37), "v": (2, 4, 37, 16)}])


def test_a_product_contracting_both_last_dims():
    """q . k with k untransposed ([B, S, D] x [B, S, D], contracting D of both)."""
    model = graph_model([oh.make_node("Einsum", ["q", "k"], ["y"], equation="bid,bjd->bij")],
                        {"q": ["B", "S", 24], "k": ["B", "T", 24]}, ["y"], {}, opset=17)
    module, _ = _compile(model)
    _in_kernels(module, "prim.dot_general", "matmul")
    _runs_like_ort(model, module, [{"q": (1, 5, 24), "k": (1, 19, 24)},
                                   {"q": (3, 33, 24), "k": (3, 2, 24)}])


@pytest.mark.parametrize("case", ["conv_dynamic_hw", "value_info_expr_dims"])
def test_the_real_model_reproducers_run_their_conv_in_a_kernel(case):
    path = REPRO / f"{case}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    model = onnx.load(str(path))
    module, report = _compile(model)
    _in_kernels(module, "prim.conv", "conv")
    data = np.load(REPRO / f"{case}.npz")
    feeds = {k[3:]: data[k] for k in data.files if k.startswith("in_")}
    got = TvmInterpreter(module).run(module.funcs[0], feeds)
    for k in data.files:
        if k.startswith("out_"):
            ref = data[k]
            assert np.abs(got[k[4:]] - ref).max() / np.abs(ref).max() < 1e-4


@pytest.mark.parametrize("rank", [1, 2])
def test_a_symbolic_conv_by_a_computed_kernel(rank):
    """The kernel an input (a derivative's, a dequantized one): read unpacked."""
    k = [3] * rank
    model = graph_model(
        [oh.make_node("Conv", ["x", "w"], ["c"], kernel_shape=k, pads=[1] * 2 * rank),
         oh.make_node("Relu", ["c"], ["y"])],
        {"x": ["N", 3] + ["H", "W"][:rank], "w": [8, 3] + k}, ["y"], {})
    module, _ = _compile(model)
    _in_kernels(module, "prim.conv", "conv")
    spatial = (11, 19)[:rank]
    _runs_like_ort(model, module, [{"x": (1, 3, *spatial), "w": (8, 3, *k)},
                                   {"x": (2, 3, *(s + 5 for s in spatial)), "w": (8, 3, *k)}])


def test_explain_gives_the_reason_a_conv_stays_a_library_call(tmp_path):
    """A static convolution by a computed kernel (an input, not a constant) is not
    compiled (the fast paths pack constant weights), and `pir codegen --explain` says why."""
    model = graph_model([oh.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])],
                        {"x": ["N", 3, 16, 16], "w": [4, 3, 3, 3]}, ["y"], {})
    onnx.save(model, tmp_path / "m.onnx")
    assert cli("import", tmp_path / "m.onnx", "-o", tmp_path / "n.pir")[0] == 0
    assert cli("optimize", tmp_path / "n.pir", "-p", FUSE, "-o", tmp_path / "f.pir")[0] == 0
    code, _, err = cli("codegen", tmp_path / "f.pir", "--explain", "-o", tmp_path / "k.pir")
    assert code == 0, err
    assert "prim.conv x1: a convolution outside kernels" in err
    assert "its kernel is computed: the static fast paths pack weights known at codegen only" \
        in err


def test_an_fpn_neck_conv_on_upsampled_dims_is_scheduled():
    """An OCR detector's neck: five stride-2 convs, a nearest x8 upsample, then a 3x3 conv
    and a residual of another resolution.  The last conv reads 8*((H + 31) floordiv 32)
    columns; TVM could not prove those fit in their round-up to whole tiles while the dim
    was an expression (and left the conv an unscheduled loop nest, 35x slower): a compound
    dim shown by a buffer is a variable of its own (lower._shown_exprs).  The upsample is a
    repetition in the kernel, whose reshape divides by no symbolic size (rules_shape
    ._groups), and the residual add of two different expressions compiles by its declared
    shape (decompose's builder._agree_with)."""
    nodes, prev = [], "x"
    for k in range(5):
        nodes.append(oh.make_node("Conv", [prev, f"w{k}"], [f"c{k}"], kernel_shape=[3, 3],
                                  pads=[1, 1, 1, 1], strides=[2, 2]))
        prev = f"c{k}"
    nodes += [oh.make_node("Resize", [prev, "", "scales"], ["up"], mode="nearest",
                           coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
              oh.make_node("Conv", ["up", "wn", "bn"], ["n"], kernel_shape=[3, 3],
                           pads=[1, 1, 1, 1]),
              oh.make_node("Relu", ["n"], ["y"])]
    inits = {f"w{k}": _weights(16, 3 if k == 0 else 16, 3, 3, seed=k) for k in range(5)}
    inits.update(wn=_weights(16, 16, 3, 3, seed=9), bn=_weights(16, seed=10),
                 scales=np.array([1, 1, 8, 8], np.float32))
    model = graph_model(nodes, {"x": ["N", 3, "H", "W"]}, ["y"], inits)
    module, report = _compile(model)
    assert not report.kept
    fn = module.funcs[0]
    assert not [op.name for op in fn.entry.ops if op.name.startswith("nn.")]
    last = [op for op in fn.entry.ops if isinstance(op, TvmKernelOp)][-1]
    assert "prim.conv" in [op.name for op in last.body.block.ops]
    # the register-tiled direct schedule: an accumulator tile, vector lanes
    assert "_gemm_local" in last.source and "T.vectorized(16)" in last.source, last.source
    _runs_like_ort(model, module, [{"x": (1, 3, 64, 96)}, {"x": (2, 3, 96, 64)}])


@pytest.mark.parametrize("c,o,k,pad,dil,group,residual", [
    (32, 24, 3, 1, 1, 1, False), (24, 24, 3, 2, 2, 1, True), (256, 32, 1, 0, 1, 1, False),
    (64, 64, 3, 1, 1, 2, True), (16, 8, 5, 0, 1, 1, False)],
    ids=["3x3", "dilated", "pointwise", "grouped", "5x5-unpadded"])
def test_a_stride_1_conv_runs_over_its_positions_as_one_flat_run(c, o, k, pad, dil, group,
                                                                 residual):
    # the flat form: every window's loads consecutive floats of the padded input laid out
    # as one run per channel (no division in the products), the result read back out of it
    # row by row; at sizes whose rows are shorter and longer than a tile and one wide
    conv = oh.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], pads=[pad] * 4,
                        dilations=[dil, dil], group=group)
    nodes = [conv, oh.make_node("Relu", ["c"], ["y" if not residual else "r"])]
    if residual:
        nodes.append(oh.make_node("Add", ["r", "x"], ["y"]))
    model = graph_model(nodes, {"x": ["N", c, "H", "W"]}, ["y"],
                        {"w": _weights(o, c // group, k, k), "b": _weights(o, seed=1)})
    module, _ = _compile(model)
    _in_kernels(module, "prim.conv", "conv")
    (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    loads = [m.split(",") for line in kernel.source.splitlines()
             if "_gemm_local[" in line for m in re.findall(r"_xpad\[([^\]]*)\]", line)]
    # [batch, channel, position], the position a sum of the tile's and the window's offsets
    assert loads and all(len(i) == 3 and "//" not in i[2] and "%" not in i[2] for i in loads)
    low = max((k - 1) * dil + 1 - 2 * pad, 1)  # the smallest input: one output position
    _runs_like_ort(model, module, [{"x": (1, c, 7, 40)}, {"x": (2, c, 12, low)},
                                   {"x": (1, c, low, low + 2)}])


def test_a_symbolic_max_pool_reads_its_window_positions_computed_in_place():
    # a PP-HGNet stem's 2x2 stride-1 pool behind a one-sided pad: over symbolic H x W its
    # taps are gathers of iota positions, which are inlined as index arithmetic; kept in an
    # i64 buffer, every load of the pool was a gather of loaded indices (7x slower)
    nodes = [oh.make_node("Pad", ["x", "pads"], ["p"], mode="constant"),
             oh.make_node("MaxPool", ["p"], ["y"], kernel_shape=[2, 2], strides=[1, 1])]
    pads = np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64)
    model = graph_model(nodes, {"x": ["N", 8, "H", "W"]}, ["y"], {"pads": pads})
    module, _ = _compile(model)
    (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    assert any(op.name == "prim.iota" for op in kernel.body.block.ops)
    assert "sblock_alloc_buffer" not in kernel.source
    _runs_like_ort(model, module, [{"x": (1, 8, 9, 14)}, {"x": (2, 8, 4, 31)}])


def test_a_pool_over_a_symbolic_time_axis_loads_its_static_axis_affinely():
    # PLCMOS's LeakyRelu + MaxPool [1, 4] / [1, 4] over [N, C, frames, 257]: its taps along
    # the static axis were gathers by folded i64 tables (a loaded index per element, 8 ms
    # for a [1, 32, 249, 64] result); as strided slices they are affine loads
    nodes = [oh.make_node("LeakyRelu", ["x"], ["l"], alpha=0.1),
             oh.make_node("MaxPool", ["l"], ["y"], kernel_shape=[1, 4], strides=[1, 4])]
    model = graph_model(nodes, {"x": ["N", 8, "T", 37]}, ["y"], {})
    module, _ = _compile(model)
    (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    assert not any(op.name == "prim.gather" for op in kernel.body.block.ops)
    assert '"int64")' not in kernel.source  # no table of positions among its buffers
    _runs_like_ort(model, module, [{"x": (1, 8, 9, 37)}, {"x": (2, 8, 30, 37)}])


def test_the_global_min_and_max_of_a_dynamic_quantization_run_in_vector_lanes():
    # DynamicQuantizeLinear takes the min and max of its whole input, and the scale read
    # them in a block without loops, which made TVM's rfactor fail: each was one scalar
    # chain (Tashkeel's attention, [batch, seq, seq, 512]: 12.5 of 23 ms)
    nodes = [oh.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])]
    model = graph_model(nodes, {"x": ["N", "S", 64]}, ["y", "s", "z"], {})
    for out in model.graph.output:  # (graph_model declares float outputs)
        if out.name != "s":
            out.type.tensor_type.elem_type = onnx.TensorProto.UINT8
    module, _ = _compile(model)
    (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    partials = re.findall(r"(\w+_rf) = T.sblock_alloc_buffer\(\((\d+),\)", kernel.source)
    assert len(partials) == 2 and all(n == "16" for _, n in partials), partials
    _runs_like_ort(model, module, [{"x": (2, 7, 64)}, {"x": (1, 30, 64)}])


@pytest.mark.parametrize("c,k", [(32, 1), (16, 3)])  # the row form and the flat form
def test_a_symbolic_conv_writes_whole_vectors_of_its_gelu_epilogue(c, k):
    # the last vector of each row is split off its loop, so that the others need no
    # `x < W` predicate: TVM writes a predicated statement one lane at a time, which made
    # the polynomial erf of a GELU epilogue five times the cost of the convolution
    from lanes import store_lanes

    nodes = [oh.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k],
                          pads=[k // 2] * 4),
             oh.make_node("Div", ["c", "sq2"], ["d"]), oh.make_node("Erf", ["d"], ["e"]),
             oh.make_node("Add", ["e", "one"], ["f"]), oh.make_node("Mul", ["c", "f"], ["g"]),
             oh.make_node("Mul", ["g", "half"], ["y"])]
    consts = {"sq2": np.array(1.4142135, np.float32), "one": np.array(1.0, np.float32),
              "half": np.array(0.5, np.float32)}
    model = graph_model(nodes, {"x": ["N", c, "H", "W"]}, ["y"],
                        {"w": _weights(16, c, k, k), "b": _weights(16, seed=1), **consts})
    module, _ = _compile(model)
    (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    vector, scalar = store_lanes(kernel.source, "y")
    assert vector >= 1 and scalar <= 1, (vector, scalar)  # one-lane stores: the row's end
    _runs_like_ort(model, module, [{"x": (1, c, 5, 37)}, {"x": (2, c, 3, 16)},
                                   {"x": (1, c, 4, 3)}])


def test_a_softmax_between_transposes_of_a_symbolic_map_builds():
    """RivaGAN's decoder: a softmax over 32 channels of a [b, 32, 1, H, W] map, between two
    transposes.  The schedule's lanes loop came out W long, and TVM refuses to vectorise a
    loop of symbolic extent for a CPU (the build failed)."""
    model = graph_model([oh.make_node("Transpose", ["x"], ["t"], perm=[0, 4, 2, 3, 1]),
                         oh.make_node("Softmax", ["t"], ["s"], axis=4),
                         oh.make_node("Transpose", ["s"], ["y"], perm=[0, 4, 2, 3, 1])],
                        {"x": ["b", 32, 1, "height", "width"]}, ["y"], {})
    module, _ = _compile(model)
    _runs_like_ort(model, module, [{"x": (1, 32, 1, 6, 5)}, {"x": (2, 32, 1, 3, 11)}])
