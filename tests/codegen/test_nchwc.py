"""Channel blocks between convolution kernels (pir/codegen/tvm/nchwc.py): which values codegen
hands over as ``[N, C/16, H, W, 16]``, that a value any other op reads (the function's
return) stays NCHW, and that the compiled program, and its regions on the reference rules,
compute what the program did before codegen (padding, stride 2, a residual in blocks)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

import onnx.helper as oh  # noqa: E402

from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.ir.verifier import verify_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from helpers import AVX512, graph_model  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _model():
    """a = relu(conv 1x1 16->32), b = relu(conv 3x3 32->32), c = relu(conv 1x1 32->32 + a),
    d = relu(conv 3x3 stride 2 32->48), y = conv 3x3 stride 2 48->24; the function returns y
    and c."""
    rng = np.random.default_rng(0)
    inits, nodes = {}, []

    def conv(name, x, c, o, k, stride=1, relu=True, residual=None):
        w = (rng.standard_normal((o, c, k, k)) * 0.2).astype(np.float32)
        b = rng.standard_normal(o).astype(np.float32)
        inits.update({f"{name}.w": w, f"{name}.b": b})
        out = f"{name}.cv"
        nodes.append(oh.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [out],
                                  kernel_shape=[k, k], strides=[stride] * 2,
                                  pads=[k // 2] * 4))
        if residual is not None:
            nodes.append(oh.make_node("Add", [out, residual], [f"{name}.sum"]))
            out = f"{name}.sum"
        if relu:
            nodes.append(oh.make_node("Relu", [out], [name]))
        else:
            nodes[-1].output[0] = name
        return name

    a = conv("a", "x", 16, 32, 1)
    b = conv("b", a, 32, 32, 3)
    c = conv("c", b, 32, 32, 1, residual=a)
    d = conv("d", c, 32, 48, 3, stride=2)
    conv("y", d, 48, 24, 3, stride=2, relu=False)
    return graph_model(nodes, {"x": ["N", 16, 9, 9]}, ["y", c], inits)


@pytest.fixture(scope="module")
def compiled():
    module = import_model(_model())
    PassManager(parse_pipeline(FUSE)).run(module)
    before = parse_module(print_module(module))
    codegen_module(module, AVX512)
    verify_module(module)
    return module, before


def _producer_kernel(module, value_name):
    for op in module.funcs[0].entry.ops:
        if isinstance(op, TvmKernelOp) and any(r.name == value_name for r in op.results):
            return op
    raise AssertionError(value_name)


def test_values_only_conv_kernels_read_are_handed_over_in_channel_blocks(compiled):
    module, _ = compiled
    shape = {op.results[0].name: op.results[0].type.shape
             for op in module.funcs[0].entry.ops if isinstance(op, TvmKernelOp)}
    assert shape["a"] == ("N", 2, 9, 9, 16)   # read by b's conv and, as a residual, by c's
    assert shape["b"] == ("N", 2, 9, 9, 16)
    assert shape["d"] == ("N", 3, 5, 5, 16)   # 48 channels: three blocks
    assert shape["c"] == ("N", 32, 9, 9)      # the function returns it too: NCHW
    assert shape["y"] == ("N", 24, 3, 3)      # the function returns it
    # no layout op at the top level: every conversion is inside a kernel's region
    assert not [op for op in module.funcs[0].entry.ops if op.name in ("prim.transpose",
                                                                      "prim.reshape")]


def test_a_conv_reading_blocks_packs_its_weights_in_their_order(compiled):
    module, _ = compiled
    # y's input d comes blocked, but a strided 3x3 window unblocks it in its padding copy
    # and reduces in NCHW order (conv.reduces_blocks); b, a 3x3 stride-1 window from blocks
    # to blocks, takes Winograd's transformed weights instead (pir.codegen.tvm.winograd)
    for name, blocked_input in [("a", False), ("c", True), ("d", False), ("y", False)]:
        kernel = _producer_kernel(module, name)
        packed = [op for op in kernel.body.block.ops if op.name == "builtin.constant"
                  and op.results[0].name.endswith(".packed")]
        rank = len(packed[0].results[0].type.shape)
        assert rank == (6 if blocked_input else 5), name
    b = _producer_kernel(module, "b")
    (u,) = [op for op in b.body.block.ops if op.name == "builtin.constant"
            and op.results[0].name.endswith(".winograd")]
    assert u.results[0].type.shape == (4, 4, 1, 32, 32)  # [4, 4, O/32, C, 32]
    # the tile is written (and the residual read) 16 lanes, one block, at a time
    assert "T.vectorized(16)" in _producer_kernel(module, "c").source


def test_blocked_program_computes_what_the_nchw_one_did(compiled):
    module, before = compiled
    x = np.random.default_rng(1).standard_normal((2, 16, 9, 9)).astype(np.float32)
    want = run_function(before, {"x": x})
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})
    for k in ("y", "c"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5)
    # the kernels' regions are plain prim IR: the reference rules run them too
    ref = run_function(parse_module(print_module(module)), {"x": x})
    for k in ("y", "c"):
        np.testing.assert_allclose(ref[k], want[k], rtol=1e-5, atol=1e-5)


def _stem_model():
    """ResNet's stem in small: conv 3x3 stride 2 (+ bias) -> relu -> max pool 3x3 stride 2
    -> conv 1x1 -> relu."""
    rng = np.random.default_rng(3)
    w1 = (rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32)
    b1 = rng.standard_normal(16).astype(np.float32)
    w2 = (rng.standard_normal((32, 16, 1, 1)) * 0.3).astype(np.float32)
    nodes = [oh.make_node("Conv", ["x", "w1", "b1"], ["cv"], kernel_shape=[3, 3],
                          strides=[2, 2], pads=[1] * 4),
             oh.make_node("Relu", ["cv"], ["r"]),
             oh.make_node("MaxPool", ["r"], ["pool"], kernel_shape=[3, 3], strides=[2, 2],
                          pads=[1] * 4),
             oh.make_node("Conv", ["pool", "w2"], ["cv2"], kernel_shape=[1, 1]),
             oh.make_node("Relu", ["cv2"], ["y"])]
    return graph_model(nodes, {"x": ["N", 3, 18, 18]}, ["y"], {"w1": w1, "b1": b1, "w2": w2})


def test_a_pool_between_convs_takes_the_bias_and_relu_off_and_computes_on_blocks():
    module = import_model(_stem_model())
    PassManager(parse_pipeline(FUSE)).run(module)
    before = parse_module(print_module(module))
    (pool_group,) = [op for op in module.funcs[0].entry.ops
                     if op.name == "fusion.group" and op.kind == "injective"]
    assert "prim.add" in [op.name for op in pool_group.body.block.ops]  # the bias, in fuse's
    codegen_module(module, AVX512)
    verify_module(module)
    kernels = [op for op in module.funcs[0].entry.ops if isinstance(op, TvmKernelOp)]
    stem, pool = kernels[0], kernels[1]
    # the elementwise front (bias, relu) of the pool's group is the stem conv's epilogue now
    assert stem.kind == "conv" and "prim.max" in [op.name for op in stem.body.block.ops]
    assert "epilogue_of" not in pool.attributes
    # the stem's result and the pool's are handed over in blocks, and the pool's region
    # pads and slices blocks (the 16 channels of a position in one vector)
    assert stem.results[0].type.shape == ("N", 1, 9, 9, 16)
    assert pool.results[0].type.shape == ("N", 1, 5, 5, 16)
    pads = [op for op in pool.body.block.ops if op.name == "prim.pad"]
    assert pads and len(pads[0].results[0].type.shape) == 5
    assert "T.vectorized(16)" in pool.source
    x = np.random.default_rng(2).standard_normal((2, 3, 18, 18)).astype(np.float32)
    want = run_function(before, {"x": x})["y"]
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    ref = run_function(parse_module(print_module(module)), {"x": x})["y"]
    np.testing.assert_allclose(ref, want, rtol=1e-5, atol=1e-5)


_GROUP = """
module @m {
  func.func @main(%x: tensor<2x32x5x5xf32>, %s: tensor<1x32x1x1xf32>) -> (tensor<2x32x4x4xf32>) {
    %y = fusion.group(%x, %s) ({
    ^bb0(%x_1: tensor<2x32x5x5xf32>, %s_1: tensor<1x32x1x1xf32>):
      %sb = prim.broadcast_in_dim(%s_1) {broadcast_dimensions = [0, 1, 2, 3]} : (tensor<1x32x1x1xf32>) -> tensor<2x32x5x5xf32>
      %m = prim.mul(%x_1, %sb) : (tensor<2x32x5x5xf32>, tensor<2x32x5x5xf32>) -> tensor<2x32x5x5xf32>
      %z = builtin.constant() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
      %p = prim.pad(%m, %z) {edge_padding_low = [0, 0, 0, 1], edge_padding_high = [0, 0, 1, 0]} : (tensor<2x32x5x5xf32>, tensor<f32>) -> tensor<2x32x6x6xf32>
      %a = prim.slice(%p) {start_indices = [0, 0, 0, 0], limit_indices = [2, 32, 6, 6], strides = [1, 1, 2, 2]} : (tensor<2x32x6x6xf32>) -> tensor<2x32x3x3xf32>
      %b = prim.slice(%p) {start_indices = [1, 1], limit_indices = [5, 5], axes = [2, 3]} : (tensor<2x32x6x6xf32>) -> tensor<2x32x4x4xf32>
      %y_1 = prim.exp(%b) : (tensor<2x32x4x4xf32>) -> tensor<2x32x4x4xf32>
      fusion.yield(%y_1) : (tensor<2x32x4x4xf32>) -> ()
    }) {kind = "injective"} : (tensor<2x32x5x5xf32>, tensor<1x32x1x1xf32>) -> tensor<2x32x4x4xf32>
    func.return(%y) : (tensor<2x32x4x4xf32>) -> ()
  }
}
"""


def _blocks(a: np.ndarray) -> np.ndarray:
    n, c, h, w = a.shape
    return a.reshape(n, c // 16, 16, h, w).transpose(0, 1, 3, 4, 2)


@pytest.mark.parametrize("blocked_args", [{0}, set()])
def test_a_region_that_keeps_channels_apart_computes_the_same_on_blocks(blocked_args):
    from pir.codegen.tvm.nchwc import blocked_type
    from pir.codegen.tvm.nchwc_region import block_region, keeps_channels
    from pir.ir.types import FunctionType

    module = parse_module(_GROUP)
    (g,) = [op for op in module.funcs[0].entry.ops if op.name == "fusion.group"]
    assert keeps_channels(g)
    rng = np.random.default_rng(5)
    feeds = {"x": rng.standard_normal((2, 32, 5, 5)).astype(np.float32),
             "s": rng.standard_normal((1, 32, 1, 1)).astype(np.float32)}
    want = run_function(module, feeds)["y"]
    block_region(g, blocked_args)
    # a slice without axes takes the new dim whole; a pad pads it by 0; the [1, C, 1, 1]
    # argument (not blocked) is blocked inside the region
    shapes = [op.results[0].type.shape for op in g.body.block.ops if op.results]
    assert (2, 2, 3, 3, 16) in shapes and (2, 2, 6, 6, 16) in shapes
    assert g.results[0].type.shape == (2, 2, 4, 4, 16)
    # the function now takes x (when blocked) and returns y in blocks, as its readers would
    fn = module.funcs[0]
    if 0 in blocked_args:
        fn.entry.args[0].type = blocked_type(fn.entry.args[0].type)
    fn.attributes["function_type"] = FunctionType(tuple(a.type for a in fn.entry.args),
                                                  (g.results[0].type,))
    x = _blocks(feeds["x"]) if 0 in blocked_args else feeds["x"]
    got = run_function(parse_module(print_module(module)), {"x": x, "s": feeds["s"]})["y"]
    np.testing.assert_allclose(got, _blocks(want), rtol=1e-6)


def test_a_region_that_mixes_channels_stays_nchw():
    from pir.codegen.tvm.nchwc_region import keeps_channels

    text = """
module @m {
  func.func @main(%x: tensor<2x32x5x5xf32>) -> (tensor<2x16x5x5xf32>) {
    %y = fusion.group(%x) ({
    ^bb0(%x_1: tensor<2x32x5x5xf32>):
      %b = prim.slice(%x_1) {start_indices = [16], limit_indices = [32], axes = [1]} : (tensor<2x32x5x5xf32>) -> tensor<2x16x5x5xf32>
      fusion.yield(%b) : (tensor<2x16x5x5xf32>) -> ()
    }) {kind = "injective"} : (tensor<2x32x5x5xf32>) -> tensor<2x16x5x5xf32>
    func.return(%y) : (tensor<2x16x5x5xf32>) -> ()
  }
}
"""
    (g,) = [op for op in parse_module(text).funcs[0].entry.ops if op.name == "fusion.group"]
    assert not keeps_channels(g)  # a slice of the channel dim


def _bottleneck_model():
    """Two ResNet bottleneck blocks, the first with a strided downsample: out = relu(c(b(a(x)))
    + down(x)), then out2 = relu(c2(b2(a2(out))) + out)."""
    rng = np.random.default_rng(7)
    inits, nodes = {}, []

    def conv(name, x, c, o, k, stride=1, relu=True):
        inits[f"{name}.w"] = (rng.standard_normal((o, c, k, k)) * 0.2).astype(np.float32)
        out = name if not relu else f"{name}.cv"
        nodes.append(oh.make_node("Conv", [x, f"{name}.w"], [out], kernel_shape=[k, k],
                                  strides=[stride] * 2, pads=[k // 2] * 4))
        if relu:
            nodes.append(oh.make_node("Relu", [out], [name]))
        return name

    def block(p, x, c, mid, o, stride, down):
        h = conv(f"{p}.b", conv(f"{p}.a", x, c, mid, 1), mid, mid, 3, stride)
        h = conv(f"{p}.c", h, mid, o, 1, relu=False)
        res = conv(f"{p}.down", x, c, o, 1, stride, relu=False) if down else x
        nodes.append(oh.make_node("Add", [h, res], [f"{p}.sum"]))
        nodes.append(oh.make_node("Relu", [f"{p}.sum"], [f"{p}.out"]))
        return f"{p}.out"

    y = block("b1", block("b0", "x", 16, 16, 32, 2, True), 32, 16, 32, 1, False)
    nodes.append(oh.make_node("Relu", [y], ["y"]))
    return graph_model(nodes, {"x": ["N", 16, 12, 12]}, ["y"], inits)


def test_a_conv_packs_its_weights_for_blocks_exactly_when_its_input_comes_in_blocks():
    module = import_model(_bottleneck_model())
    PassManager(parse_pipeline(FUSE)).run(module)
    before = parse_module(print_module(module))
    codegen_module(module, AVX512)
    convs = {op.results[0].name: op for op in module.funcs[0].entry.ops
             if isinstance(op, TvmKernelOp) and op.kind == "conv"}
    for name, k in convs.items():
        (packed,) = [op for op in k.body.block.ops if op.name == "builtin.constant"
                     and op.results[0].name.endswith(".packed")]
        blocked_in = len(k.body.block.args[0].type.shape) == 5
        # (b0.b's strided 3x3 onto 36 positions unblocks its input: conv.reduces_blocks)
        assert (len(packed.results[0].type.shape) == 6) == (blocked_in and name != "b0.b"), name
    # the block output and the downsample both reach the next convs in blocks; the
    # downsample is an input of the output conv's epilogue, which that conv took
    assert convs["b0.out"].results[0].type.shape == ("N", 2, 6, 6, 16)
    assert convs["b0.down"].results[0].type.shape == ("N", 2, 6, 6, 16)
    assert len(convs["b1.a"].body.block.args[0].type.shape) == 5
    x = np.random.default_rng(8).standard_normal((2, 16, 12, 12)).astype(np.float32)
    want = run_function(before, {"x": x})["y"]
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_epilogue_of_a_depthwise_conv_stays_nchw_for_it():
    """relu(r + dw(x2)), r a blocked conv result: the group is the depthwise conv's epilogue,
    formed after the conv groups from NCHW values, so the layout plan leaves it alone (it
    used to block it, and the depthwise kernel then failed to lower and stayed a group)."""
    rng = np.random.default_rng(0)

    def w(*s):
        return (rng.standard_normal(s) * 0.2).astype(np.float32)

    nodes = [oh.make_node("Conv", ["x", "wr"], ["r"], kernel_shape=[1, 1]),
             oh.make_node("Conv", ["r", "wc"], ["c"], kernel_shape=[3, 3], pads=[1] * 4),
             oh.make_node("Conv", ["x2", "wd"], ["d"], kernel_shape=[3, 3], pads=[1] * 4,
                          group=32),
             oh.make_node("Add", ["r", "d"], ["s"]), oh.make_node("Relu", ["s"], ["g"]),
             oh.make_node("Conv", ["g", "wy"], ["y"], kernel_shape=[3, 3], pads=[1] * 4)]
    model = graph_model(nodes, {"x": [1, 16, 8, 8], "x2": [1, 32, 8, 8]}, ["c", "y"],
                        {"wr": w(32, 16, 1, 1), "wc": w(32, 32, 3, 3), "wd": w(32, 1, 3, 3),
                         "wy": w(32, 32, 3, 3)})
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    before = parse_module(print_module(module))
    report = codegen_module(module, AVX512)
    assert report.kept == []
    kinds = {op.results[0].name: op.kind for op in module.funcs[0].entry.ops
             if isinstance(op, TvmKernelOp)}
    assert kinds["g"] == "dwconv"
    feeds = {"x": rng.standard_normal((1, 16, 8, 8)).astype(np.float32),
             "x2": rng.standard_normal((1, 32, 8, 8)).astype(np.float32)}
    want = run_function(before, feeds)
    got = TvmInterpreter(module).run(module.funcs[0], feeds)
    for k in ("c", "y"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5)


def test_a_gate_broadcast_stays_out_of_the_split_epilogue():
    """A squeeze-excite gate (sigmoid of a 1x1 conv of the pooled map) scaling the map before
    a max pool: the elementwise front moved into the gate conv stops before the broadcast of
    [N, C, 1, 1] to the whole map, so the conv writes the gate, not a map-sized copy of it."""
    rng = np.random.default_rng(0)

    def w(*s):
        return (rng.standard_normal(s) * 0.2).astype(np.float32)

    nodes = [oh.make_node("Conv", ["x", "wa"], ["a"], kernel_shape=[3, 3], pads=[1] * 4),
             oh.make_node("GlobalAveragePool", ["a"], ["p"]),
             oh.make_node("Conv", ["p", "ws", "bs"], ["s"], kernel_shape=[1, 1]),
             oh.make_node("Sigmoid", ["s"], ["sg"]), oh.make_node("Mul", ["a", "sg"], ["m"]),
             oh.make_node("MaxPool", ["m"], ["mp"], kernel_shape=[3, 3], strides=[2, 2],
                          pads=[1] * 4),
             oh.make_node("Conv", ["mp", "wy"], ["y"], kernel_shape=[3, 3], pads=[1] * 4)]
    model = graph_model(nodes, {"x": ["N", 16, 16, 16]}, ["y"],
                        {"wa": w(32, 16, 3, 3), "ws": w(32, 32, 1, 1), "bs": w(32),
                         "wy": w(32, 32, 3, 3)})
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    before = parse_module(print_module(module))
    codegen_module(module, AVX512)
    gate = [op for op in module.funcs[0].entry.ops
            if isinstance(op, TvmKernelOp) and op.results[0].name == "sg"]
    assert gate and tuple(gate[0].results[0].type.shape[2:4]) == (1, 1)
    x = rng.standard_normal((2, 16, 16, 16)).astype(np.float32)
    want = run_function(before, {"x": x})["y"]
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
