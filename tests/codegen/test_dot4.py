"""uint8 x int8 products in VNNI's four-wide dot instruction (pir.codegen.tvm.dot4).

For a CPU with AVX-512 VNNI, a GEMM whose weights are whole numbers in [-128, 127] and whose
activations are provably whole numbers in a range of 256 is computed as ``(x - lo)`` uint8
times int8 weights plus ``lo * colsum(w)``, its inner 16 columns x 4 products one
``vpdpbusd``.  The sums are integers: they must equal numpy's exactly, on this machine's
instruction and, for a CPU without it, on the plain vector code the build spells it as."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

tvm = pytest.importorskip("tvm")

from tvm import te  # noqa: E402

from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.codegen.tvm.dot4 import USES_VNNI, VNNI, dot4_offset, pack_dot4, use_vnni  # noqa: E402
from pir.codegen.tvm.dot4 import without_vnni  # noqa: E402
from pir.codegen.tvm.int_range import integral  # noqa: E402
from pir.codegen.tvm.target import cpu_target  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.ir.types import DType  # noqa: E402
from pir.ir.verifier import verify_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from pir.runtimes.tvm.library import build_module  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"
VNNI_CPU = "llvm -mcpu=sapphirerapids -num-cores=2"  # has AVX-512 VNNI
NO_VNNI_CPU = "llvm -mcpu=skylake-avx512 -num-cores=2"  # AVX-512 without it


def _compile(model, target=VNNI_CPU):
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    before = parse_module(print_module(module))
    codegen_module(module, target)
    verify_module(module)
    return parse_module(print_module(module)), before


def _kernels(module) -> list[TvmKernelOp]:
    return [op for op in module.walk() if isinstance(op, TvmKernelOp)
            and any(o.name == "prim.dot_general" for o in op.body.block.ops)]


def _matmul_integer(k: int, n: int, w: np.ndarray, w_zp: int, a_zp: int) -> onnx.ModelProto:
    """y [rows, n] i32 = MatMulInteger(a [rows, k] u8, w u8, a_zp, w_zp), zero points known."""
    node = helper.make_node("MatMulInteger", ["a", "w", "a_zp", "w_zp"], ["y"])
    graph = helper.make_graph(
        [node], "q", [helper.make_tensor_value_info("a", TensorProto.UINT8, ["rows", k])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, ["rows", n])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(w_zp, np.uint8),
                                                                   "w_zp"),
         numpy_helper.from_array(np.array(a_zp, np.uint8), "a_zp")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def test_a_matmul_integer_is_one_vnni_kernel_exact_at_every_row_count():
    rng = np.random.default_rng(0)
    w = rng.integers(0, 256, (96, 40)).astype(np.uint8)  # minus 128: all of [-128, 127]
    module, before = _compile(_matmul_integer(96, 40, w, 128, 131))
    (kernel,) = _kernels(module)
    ops = kernel.body.block.ops
    (dot,) = [o for o in ops if o.name == "prim.dot_general"]
    # uint8 activations in quads by int8 weights packed [N/BN, K/4, BN, 4]
    assert [v.type.shape[-2:] for v in dot.operands] == [(24, 4), (16, 4)]  # 40 -> 48 cols
    packed = [o.results[0].type for o in ops if o.name == "builtin.constant"
              and o.results[0].type.shape[-1:] == (4,)]
    assert [t.dtype for t in packed] == [DType.I8]
    assert VNNI in kernel.attributes["source"]
    for rows in (1, 5, 20):  # the one-row variant, a padded tile, whole tiles
        feeds = {"a": rng.integers(0, 256, (rows, 96)).astype(np.uint8)}
        exact = (feeds["a"].astype(np.int64) - 131) @ (w.astype(np.int64) - 128)
        np.testing.assert_array_equal(run_function(before, feeds)["y"], exact)
        np.testing.assert_array_equal(TvmInterpreter(module).run(module.funcs[0], feeds)["y"],
                                      exact)


def _qdq_matmul(k: int, n: int, w: np.ndarray, zp: int) -> onnx.ModelProto:
    """The static QDQ form onnxruntime's quantizer writes: y = DQ(Q(x)) @ DQ(w int8)."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"]),
             helper.make_node("MatMul", ["xd", "wd"], ["y"])]
    inits = {"s": np.array(0.05, np.float32), "zp": np.array(zp, np.uint8), "w": w,
             "ws": np.array(0.01, np.float32)}
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 7, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 7, n])],
        [numpy_helper.from_array(v, name) for name, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def test_a_qdq_matmul_runs_on_its_quanta():
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 128, (64, 48)).astype(np.int8)
    module, before = _compile(_qdq_matmul(64, 48, w, 100))
    (kernel,) = _kernels(module)
    assert VNNI in kernel.attributes["source"]
    feeds = {"x": rng.normal(0, 3, (2, 7, 64)).astype(np.float32)}
    q = np.clip(np.round(feeds["x"] / np.float32(0.05)) + 100, 0, 255)
    exact = ((q - 100).astype(np.int64).reshape(-1, 64) @ w.astype(np.int64)).reshape(2, 7, 48)
    want = run_function(before, feeds)["y"]
    got = TvmInterpreter(module).run(module.funcs[0], feeds)["y"]
    # both are the integer sums times the two scales, rounded once
    np.testing.assert_allclose(want, exact * np.float32(0.05 * 0.01), rtol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("why, w, zp", [
    ("weights past int8", np.full((64, 48), 127, np.int8), None),  # minus a zp of -1: 128
    ("K not a multiple of 4", np.ones((62, 48), np.int8), 0),
])
def test_products_the_instruction_cannot_take_stay_as_they_were(why, w, zp):
    k = w.shape[0]
    if zp is None:
        model = _qdq_matmul(k, 48, w, 100)
        for t in model.graph.initializer:
            if t.name == "w":
                t.CopyFrom(numpy_helper.from_array(w, "w"))
        node = model.graph.node[2]
        node.input.append("wzp")
        model.graph.initializer.append(numpy_helper.from_array(np.array(-1, np.int8), "wzp"))
    else:
        model = _qdq_matmul(k, 48, w, 100)
    module, before = _compile(model)
    (kernel,) = _kernels(module)
    assert VNNI not in kernel.attributes["source"], why
    feeds = {"x": np.random.default_rng(2).normal(0, 3, (1, 7, k)).astype(np.float32)}
    np.testing.assert_allclose(TvmInterpreter(module).run(module.funcs[0], feeds)["y"],
                               run_function(before, feeds)["y"], rtol=1e-6)


def test_a_cpu_without_vnni_keeps_the_float32_product():
    w = np.random.default_rng(3).integers(-128, 128, (64, 48)).astype(np.int8)
    module, _ = _compile(_qdq_matmul(64, 48, w, 100), NO_VNNI_CPU)
    (kernel,) = _kernels(module)
    assert VNNI not in kernel.attributes["source"]
    assert cpu_target("sapphirerapids").vnni and not cpu_target("skylake-avx512").vnni


# -- the TIR rewrite and its plain form, on a scheduled GEMM of their own --------------------

def _scheduled_gemm(m: int, k: int, n: int):
    """x [m, k] u8 x packed w [n/32, k/4, 32, 4] i8 -> [m, n] i32, tiled as the GEMM
    schedule tiles a dot4 product (16 columns x 4 products innermost)."""
    x = te.placeholder((m, k), "uint8", name="x")
    w = te.placeholder((n // 32, k // 4, 32, 4), "int8", name="w")
    ko, ki = te.reduce_axis((0, k // 4), "ko"), te.reduce_axis((0, 4), "ki")
    c = te.compute((m, n // 32, 32), lambda i, p, j: te.sum(
        x[i, ko * 4 + ki].astype("int32") * w[p, ko, j, ki].astype("int32"), axis=[ko, ki]),
        name="c")
    y = te.compute((m, n), lambda i, j: c[i, j // 32, j % 32], name="y")
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": te.create_prim_func([x, w, y])}))
    dot = sch.get_sblock("c")
    i, p, j, k0, k1 = sch.get_loops(dot)
    mo, mi = sch.split(i, [None, 4])
    vectors, lanes = sch.split(j, [None, 16])
    sch.reorder(p, mo, k0, mi, vectors, lanes, k1)
    acc = sch.cache_write(dot, 0, "local")
    sch.reverse_compute_at(acc, mo)
    sch.decompose_reduction(dot, k0)
    sch.reverse_compute_inline(sch.get_sblock("y"))
    return sch.mod["main"]


@pytest.mark.parametrize("target, spelled", [("sapphirerapids", False),
                                             ("skylake-avx512", True)])
def test_the_instruction_and_its_plain_spelling_compute_the_same_sums(target, spelled):
    from pir.codegen.tvm.target import host_cpu

    func = use_vnni(_scheduled_gemm(8, 64, 64))
    assert func.attrs[USES_VNNI] and VNNI in func.script()
    # the text round-trips (a .k.pir holds it), and each [16 x 4] loop pair is one call
    tvm.ir.assert_structural_equal(tvm.script.from_source(func.script()), func)
    assert func.script().count("vpdpbusd") == 1
    if not spelled and not cpu_target(host_cpu()).vnni:
        pytest.skip("this machine has no VNNI to run the instruction on")
    # built for this machine (code for another CPU may not run here): the spelled form
    # through the build's own rule for a CPU without VNNI, when this one has none, else
    # spelled here
    host = tvm.target.Target({"kind": "llvm", "mcpu": host_cpu()})
    if spelled and cpu_target(host_cpu()).vnni:
        func = without_vnni(func)
    assert cpu_target(target).vnni != spelled
    lib = build_module(tvm.IRModule({"main": func}), host)
    rng = np.random.default_rng(4)
    x = rng.integers(0, 256, (8, 64)).astype(np.uint8)
    w = rng.integers(-128, 128, (64, 64)).astype(np.int8)
    panels = np.ascontiguousarray(w.reshape(64, 2, 32).transpose(1, 0, 2))
    out = tvm.runtime.tensor(np.zeros((8, 64), np.int32))
    lib["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(pack_dot4(panels)), out)
    np.testing.assert_array_equal(out.numpy(), x.astype(np.int64) @ w.astype(np.int64))
    if spelled:
        assert VNNI not in without_vnni(func).script()
        # and the build for a CPU without VNNI spells it itself (LLVM would emit the
        # instruction for any x86 CPU, which then faults on one without it)
        from pir.runtimes.tvm.library import _for_cpu

        vnni = tvm.IRModule({"main": use_vnni(_scheduled_gemm(8, 64, 64))})
        for mcpu, kept in ((target, False), ("sapphirerapids", True)):
            built = _for_cpu(vnni, tvm.target.Target({"kind": "llvm", "mcpu": mcpu}))
            assert (VNNI in built.script()) == kept, mcpu


def test_integral_and_the_offset_follow_casts_roundings_and_constants():
    text = """module {
  func.func @main(%a: tensor<8xui8>, %f: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %z = builtin.constant() {value = dense<100.0> : tensor<8xf32>} : () -> tensor<8xf32>
    %h = builtin.constant() {value = dense<0.5> : tensor<8xf32>} : () -> tensor<8xf32>
    %af = prim.cast(%a) {dtype = f32} : (tensor<8xui8>) -> tensor<8xf32>
    %c = prim.sub(%af, %z) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %half = prim.mul(%af, %h) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %r = prim.round(%f) : (tensor<8xf32>) -> tensor<8xf32>
    func.return(%c, %half, %r) : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
  }
}"""
    module = parse_module(text)
    c, half, r = module.funcs[0].entry.terminator.operands
    f = module.funcs[0].entry.args[1]
    assert integral(c) and integral(r)
    assert not integral(half) and not integral(f)
    w = np.ones((8, 16), np.float32)
    assert dot4_offset(c, w) == -100  # cast(a) - 100 in [-100, 155]: (c + 100) is uint8
    assert dot4_offset(r, w) is None  # a rounded float: whole, but of no known range
    assert dot4_offset(c, w * 0.5) is None  # weights that are not whole numbers


def test_a_recurrent_layers_two_symbolic_row_dims_are_one_row_dim():
    """A quantized LSTM's input projection, [seq, batch, K] rows: tiled over batch alone, a
    batch of one was padded to 8 rows and the weights read again for each step (1.4 ms
    for [24, 1, 512] x [512, 2048]).  The rows are seq * batch, and a one-row variant takes
    a single row."""
    rng = np.random.default_rng(6)
    w = rng.integers(-128, 128, (64, 32)).astype(np.int8)
    node = helper.make_node("MatMulInteger", ["a", "w", "a_zp"], ["y"])
    graph = helper.make_graph(
        [node], "q", [helper.make_tensor_value_info("a", TensorProto.UINT8, ["seq", "b", 64]),
                      helper.make_tensor_value_info("a_zp", TensorProto.UINT8, [])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, ["seq", "b", 32])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    module, before = _compile(model)
    (kernel,) = _kernels(module)
    (dot,) = [o for o in kernel.body.block.ops if o.name == "prim.dot_general"]
    assert len(dot.operands[0].type.shape) == 3  # [seq * b, K/4, 4]
    assert "_rows1" in kernel.attributes["source"]
    for shape in ((7, 1), (3, 5), (1, 1)):
        feeds = {"a": rng.integers(0, 256, shape + (64,)).astype(np.uint8),
                 "a_zp": np.array(77, np.uint8)}
        exact = (feeds["a"].astype(np.int64) - 77) @ w.astype(np.int64)
        np.testing.assert_array_equal(TvmInterpreter(module).run(module.funcs[0], feeds)["y"],
                                      exact)
        np.testing.assert_array_equal(run_function(before, feeds)["y"], exact)
