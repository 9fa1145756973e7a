"""The tvm runtime's execution plan (pir/runtimes/tvm/plan.py) and kernels whose dims are
computed by a reshape (pir/codegen/tvm/dims.py): buffers reused by liveness, results that
survive the next run, one compile for several sizes, the profile."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import pytest

pytest.importorskip("tvm")

from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.codegen.tvm.dims import free_dims, solve  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.aligned import aligned  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.reference.interpreter import DimConflict  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter, stats  # noqa: E402
from pir.runtimes.tvm.plan import Plan  # noqa: E402

FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _chain_model(layers: int = 4, d: int = 32):
    """x -> (MatMul W_i, Relu, Softmax) x layers, then a Flatten of [B, S, d] to [B*S, d]
    followed by a reduction, so that values of one size die while others are made."""
    rng = np.random.default_rng(0)
    nodes, inits, h = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32)
        inits.append(onnx.numpy_helper.from_array(w, f"w{i}"))
        nodes += [oh.make_node("MatMul", [h, f"w{i}"], [f"m{i}"]),
                  oh.make_node("Relu", [f"m{i}"], [f"r{i}"]),
                  oh.make_node("Softmax", [f"r{i}"], [f"h{i}"], axis=-1)]
        h = f"h{i}"
    nodes += [oh.make_node("Flatten", [h], ["flat"], axis=2),
              oh.make_node("Exp", ["flat"], ["e"]),
              oh.make_node("ReduceSum", ["e"], ["y"], keepdims=0)]
    graph = oh.make_graph(
        nodes, "chain", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["B", "S", d])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None),
         oh.make_tensor_value_info("h0", onnx.TensorProto.FLOAT, None)], inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)])
    model.ir_version = 10
    return onnx.shape_inference.infer_shapes(model)


def _compiled():
    module = import_model(_chain_model())
    PassManager(parse_pipeline(FUSE)).run(module)
    reference = parse_module(print_module(module))
    report = codegen_module(module, "llvm")
    return module, reference, report


def test_every_group_compiles_including_the_flatten():
    module, _, report = _compiled()
    assert not report.kept, report.lines()
    # the [B, S, d] -> [B*S, d] rows are the expression B*S: a kernel that sees only those
    # rows takes B and S as size parameters (pir.codegen.tvm.dims)
    flat = [op for op in module.walk() if isinstance(op, TvmKernelOp)
            and {"B", "S"} <= set(free_dims(op.body.block))]
    assert flat, "a kernel over the [B*S, d] rows should take B and S as parameters"


def test_plan_reuses_buffers_and_matches_reference():
    module, reference, _ = _compiled()
    fn = module.funcs[0]
    interp = TvmInterpreter(module)
    x = np.random.default_rng(1).standard_normal((2, 8, 32)).astype(np.float32)
    got = interp.run(fn, {"x": x})
    want = run_function(reference, {"x": x})
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)
    (plan,) = interp._plans.values()
    planned = sum(1 for op, _ in plan.steps if isinstance(op, TvmKernelOp))
    assert planned >= 8
    # layers of one size share buffers: far fewer slots than planned results
    assert len(plan.slots) < len(plan.slot_of) / 2


def test_results_survive_the_next_run_and_sizes_change_without_recompiling():
    module, reference, _ = _compiled()
    fn = module.funcs[0]
    interp = TvmInterpreter(module)
    compiled = stats["compiled"]
    rng = np.random.default_rng(2)
    runs = []
    for shape in [(2, 8, 32), (3, 5, 32), (2, 8, 32)]:
        x = rng.standard_normal(shape).astype(np.float32)
        runs.append((x, interp.run(fn, {"x": x})))
    assert stats["compiled"] == compiled  # one build, three runs, two sizes
    assert len(interp._plans) == 2  # one plan per binding of B and S
    for x, got in runs:  # earlier results were not overwritten by later runs
        want = run_function(reference, {"x": x})
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)


def test_profile_has_one_entry_per_kernel_and_library_call():
    module, _, _ = _compiled()
    prof: dict = {}
    interp = TvmInterpreter(module, profile=prof)
    interp.run(module.funcs[0], {"x": np.ones((1, 4, 32), np.float32)})
    kernels = {op.symbol for op in module.funcs[0].entry.ops if isinstance(op, TvmKernelOp)}
    assert {name for (what, name) in prof if what == "kernel"} == kernels
    assert all(calls >= 1 and secs >= 0 for calls, secs in prof.values())


def test_solve_derived_dims():
    derived = {"unk": (("B", "S", 4), (4,)), "half": (("unk",), (2,))}
    assert solve(derived, {"B": 3, "S": 5}) == {"B": 3, "S": 5, "unk": 15, "half": 7}
    assert solve(derived, {"B": 3}) == {"B": 3}  # S unknown: nothing derived


def test_values_sharing_a_slot_never_overlap_in_time():
    module, _, _ = _compiled()
    interp = TvmInterpreter(module)
    interp.symbols.update({"B": 2, "S": 8})
    plan = Plan(interp, module.funcs[0].entry, interp.symbols)
    ops = [op for op, _ in plan.steps]
    index = {op: i for i, op in enumerate(ops)}
    live: dict[int, list[tuple[int, int]]] = {}
    for v, s in plan.slot_of.items():
        start = index[v.op]
        end = max([index.get(u.op, len(ops)) for u in v.uses] + [start])
        live.setdefault(s, []).append((start, end))
    for spans in live.values():  # values sharing a slot never overlap in time
        spans.sort()
        for (a0, a1), (b0, _) in zip(spans, spans[1:]):
            assert a1 < b0, spans


@pytest.mark.parametrize("case", ["bf16_result", "empty"])
def test_results_numpy_cannot_share_with_tvm_take_the_interpreters_path(case):
    """bfloat16 arrays do not export through DLPack, and TVM refuses an empty numpy array's
    zero strides: both still run (copied, or as TVM's own empty tensor)."""
    import sys
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1]))
    from helpers import node_model

    if case == "bf16_result":
        x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)
        model = node_model("Cast", {"x": x}, ["y"], to=onnx.TensorProto.BFLOAT16)
    else:
        x = np.zeros((0, 6), np.float32)
        model = node_model("Relu", {"x": x}, ["y"])
    module = import_model(model)
    PassManager(parse_pipeline(FUSE)).run(module)
    reference = parse_module(print_module(module))
    codegen_module(module, "llvm")
    got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y"]
    want = run_function(reference, {"x": x})["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


DOTS = """module {
  func.func @main(%a: tensor<5x3xf32>, %b: tensor<4x3xf32>, %c: tensor<3x5xf32>,
                  %p: tensor<2x3x5xf32>, %q: tensor<2x4x3xf32>, %u: tensor<6x1xf32>,
                  %v: tensor<7x1xf32>, %s: tensor<2x1x5xf32>, %t: tensor<2x4x1xf32>,
                  %o: tensor<1xf32>)
      -> (tensor<5x4xf32>, tensor<5x5xf32>, tensor<2x5x4xf32>, tensor<6x7xf32>, tensor<2x5x4xf32>,
          tensor<7xf32>) {
    %abt = prim.dot_general(%a, %b) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]} : (tensor<5x3xf32>, tensor<4x3xf32>) -> tensor<5x4xf32>
    %ctc = prim.dot_general(%c, %c) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]} : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<5x5xf32>
    %pq = prim.dot_general(%p, %q) {lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [2]} : (tensor<2x3x5xf32>, tensor<2x4x3xf32>) -> tensor<2x5x4xf32>
    %uvt = prim.dot_general(%u, %v) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]} : (tensor<6x1xf32>, tensor<7x1xf32>) -> tensor<6x7xf32>
    %st = prim.dot_general(%s, %t) {lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [2]} : (tensor<2x1x5xf32>, tensor<2x4x1xf32>) -> tensor<2x5x4xf32>
    %ov = prim.dot_general(%o, %v) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [1]} : (tensor<1xf32>, tensor<7x1xf32>) -> tensor<7xf32>
    func.return(%abt, %ctc, %pq, %uvt, %st, %ov) : (tensor<5x4xf32>, tensor<5x5xf32>, tensor<2x5x4xf32>, tensor<6x7xf32>, tensor<2x5x4xf32>, tensor<7xf32>) -> ()
  }
}
"""


def test_products_of_transposed_operands_are_matmul_steps_and_match_the_reference():
    from pir.runtimes.tvm.plan import matmul_form

    module = parse_module(DOTS)
    forms = [matmul_form(op) for op in module.funcs[0].entry.ops[:-1]]
    # the last two contract a dim of size 1: outer products, run as a broadcast multiply
    # (the last one a vector [1] by a [7, 1] matrix: np.matmul, since numpy would broadcast
    # the multiply of a vector to [1, 7])
    assert forms == [(False, True), (True, False), (True, True), (False, True), (True, True),
                     (False, True)]
    rng = np.random.default_rng(3)
    feeds = {a.name: rng.standard_normal(a.type.shape).astype(np.float32)
             for a in module.funcs[0].args}
    ref = run_function(module, feeds)
    # one kernel, so that the function runs through its plan (a program without kernels is
    # interpreted), where the products are matmul steps
    text = (DOTS.replace("-> (tensor<5x4xf32>", "-> (tensor<5x3xf32>, tensor<5x4xf32>")
            .replace("func.return(%abt", "%e = prim.exp(%a) : (tensor<5x3xf32>) -> "
                     "tensor<5x3xf32>\n    func.return(%e, %abt")
            .replace(": (tensor<5x4xf32>, tensor<5x5xf32>, tensor<2x5x4xf32>, tensor<6x7xf32>",
                     ": (tensor<5x3xf32>, tensor<5x4xf32>, tensor<5x5xf32>, tensor<2x5x4xf32>, "
                     "tensor<6x7xf32>"))
    compiled = parse_module(text)
    PassManager(parse_pipeline("fuse")).run(compiled)
    codegen_module(compiled, "llvm")
    interp = TvmInterpreter(compiled)
    got = interp.run(compiled.funcs[0], feeds)
    (plan,) = interp._plans.values()
    steps = {op.results[0].name: step.__qualname__ for op, step in plan.steps}
    # products of two computed operands with one free dim each are kernels
    # (pir.codegen.tvm.bmm); the vector by a matrix stays a matmul step
    kernels = {op.results[0].name for op in compiled.funcs[0].entry.ops
               if isinstance(op, TvmKernelOp) and op.kind == "matmul"}
    assert kernels == {"abt", "ctc", "pq", "uvt", "st"}
    assert "_matmul_step" in steps["ov"]
    want = {"abt": feeds["a"] @ feeds["b"].T, "ctc": feeds["c"].T @ feeds["c"],
            "pq": np.swapaxes(feeds["p"], 1, 2) @ np.swapaxes(feeds["q"], 1, 2),
            "uvt": feeds["u"] @ feeds["v"].T,
            "st": np.swapaxes(feeds["s"], 1, 2) @ np.swapaxes(feeds["t"], 1, 2),
            "ov": feeds["o"] @ feeds["v"].T}
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ref[k], v, rtol=1e-5, atol=1e-6)
        assert ref[k].flags.c_contiguous


FREE_DIMS = """module {
  func.func @main(%x: tensor<BxSx8xf32>, %w: tensor<8x16xf32>) -> (tensor<BxSx16xf32>) {
    %xf = prim.reshape(%x) : (tensor<BxSx8xf32>) -> tensor<Mx8xf32>
    %mm = prim.dot_general(%xf, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<Mx8xf32>, tensor<8x16xf32>) -> tensor<Mx16xf32>
    %r = prim.reshape(%mm) : (tensor<Mx16xf32>) -> tensor<BxSx16xf32>
    %y = prim.tanh(%r) : (tensor<BxSx16xf32>) -> tensor<BxSx16xf32>
    func.return(%y) : (tensor<BxSx16xf32>) -> ()
  }
}
"""


def test_dims_only_the_function_shows_are_kernel_parameters():
    """The epilogue reads [M, 16] and brings back [B, S, 16]: B and S are no dim of its
    input, but they are the function's, so the kernel takes them as scalars; one compile
    serves several sizes."""
    module = parse_module(FREE_DIMS)
    PassManager(parse_pipeline("fuse")).run(module)
    before = parse_module(print_module(module))
    report = codegen_module(module, "llvm")
    assert not report.kept
    (k,) = [op for op in module.walk() if isinstance(op, TvmKernelOp) and "y" in
            [r.name for r in op.results]]
    assert "B: T.int32" in k.source and "S: T.int32" in k.source
    interp = TvmInterpreter(module)
    w = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    for b, s in ((2, 3), (5, 1)):
        x = np.random.default_rng(b).standard_normal((b, s, 8)).astype(np.float32)
        got = interp.run(module.funcs[0], {"x": x, "w": w})["y"]
        want = run_function(before, {"x": x, "w": w})["y"]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _misaligned(a: np.ndarray) -> np.ndarray:
    """``a`` copied into memory that starts 4 bytes past a 64-byte boundary."""
    buf = np.empty(a.nbytes + 128, np.uint8)
    start = (-buf.ctypes.data % 64) + 4
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def test_misaligned_inputs_are_staged_once_and_never_returned():
    # numpy aligns arrays to 16 bytes and TVM kernels need 64: the plan copies such an input
    # into an aligned buffer it keeps for the next run; an input returned as it is must be
    # the caller's array, and a view of the staged copy a copy of its own
    text = """
module @m {
  func.func @main(%x: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<128xf32>, tensor<4x32xf32>) {
    %e = prim.exp(%x) : (tensor<4x32xf32>) -> tensor<4x32xf32>
    %f = prim.reshape(%x) : (tensor<4x32xf32>) -> tensor<128xf32>
    func.return(%e, %f, %x) : (tensor<4x32xf32>, tensor<128xf32>, tensor<4x32xf32>) -> ()
  }
}
"""
    module = parse_module(text)
    PassManager(parse_pipeline("fuse")).run(module)
    codegen_module(module, "llvm")
    interp = TvmInterpreter(module)
    fn = module.funcs[0]
    rng = np.random.default_rng(3)
    x1, x2 = (_misaligned(rng.standard_normal((4, 32)).astype(np.float32)) for _ in range(2))
    assert x1.ctypes.data % 64 and x2.ctypes.data % 64
    r1 = interp.run(fn, {"x": x1})
    staged = next(iter(interp._plans.values())).inputs.staging
    (copy,) = staged.values()
    r2 = interp.run(fn, {"x": x2})
    assert next(iter(interp._plans.values())).inputs.staging[0] is copy  # kept, not re-allocated
    for x, r in ((x1, r1), (x2, r2)):
        np.testing.assert_allclose(r["e"], np.exp(x), rtol=1e-6)
        np.testing.assert_array_equal(r["f"], x.reshape(-1))  # not the next run's input
        assert r["x"] is x


def test_an_input_two_kernels_read_is_bound_afresh_each_run():
    # the plan makes an input's TVM tensor once a run, shared by the kernels that read it:
    # the caller's array when aligned, the staging copy when not; a run with another array
    # (aligned or not) must not compute on the last run's
    text = """
module @m {
  func.func @main(%x: tensor<4x32xf32>, %w: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
    %e = prim.exp(%x) : (tensor<4x32xf32>) -> tensor<4x32xf32>
    %t = prim.mul(%x, %w) : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
    func.return(%e, %t) : (tensor<4x32xf32>, tensor<4x32xf32>) -> ()
  }
}
"""
    module = parse_module(text)
    PassManager(parse_pipeline("fuse{disable=horizontal}")).run(module)
    codegen_module(module, "llvm")
    fn = module.funcs[0]
    readers = [op for op in fn.entry.ops if isinstance(op, TvmKernelOp)
               and fn.entry.args[0] in op.operands]
    assert len(readers) == 2
    interp = TvmInterpreter(module)
    rng = np.random.default_rng(4)
    w = rng.standard_normal((4, 32)).astype(np.float32)
    for aligned_input in (True, False, False, True):
        x = rng.standard_normal((4, 32)).astype(np.float32)
        x = aligned(x) if aligned_input else _misaligned(x)
        got = interp.run(fn, {"x": x, "w": w})
        np.testing.assert_allclose(got["e"], np.exp(x), rtol=1e-6)
        np.testing.assert_array_equal(got["t"], x * w)
    assert len(interp._plans) == 1


def test_a_dim_an_earlier_kernel_derives_sizes_a_later_kernel():
    # the importer names a dim ONNX could not relate to others (a flatten's batch * 3)
    # unk__N; a later group that sums ones over it (a gather's bounds, decomposed) reads no
    # input that shows it.  The flatten's kernel derives it, so the later kernel takes it
    # as a parameter: both are kernels, both planned
    text = """
module @m {
  func.func @main(%x: tensor<Bx3xf32>) -> (tensor<unk__1x1xf32>, tensor<Bx3xf32>) {
    %f = prim.reshape(%x) : (tensor<Bx3xf32>) -> tensor<unk__1x1xf32>
    %one = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %b = prim.broadcast_in_dim(%one) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<unk__1xf32>
    %n = prim.reduce_sum(%b) {axes = [0], keepdims = false} : (tensor<unk__1xf32>) -> tensor<f32>
    %nb = prim.broadcast_in_dim(%n) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx3xf32>
    %y = prim.add(%x, %nb) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%f, %y) : (tensor<unk__1x1xf32>, tensor<Bx3xf32>) -> ()
  }
}
"""
    module = parse_module(text)
    PassManager(parse_pipeline("fuse")).run(module)
    report = codegen_module(module, "llvm")
    assert not report.kept and report.kernels == 2
    fn = module.funcs[0]
    interp = TvmInterpreter(module)
    for b in (4, 7):
        x = np.random.default_rng(b).standard_normal((b, 3)).astype(np.float32)
        got = interp.run(fn, {"x": x})
        np.testing.assert_array_equal(got["f"], x.reshape(-1, 1))
        np.testing.assert_allclose(got["y"], x + 3 * b, rtol=1e-6)
    for plan in interp._plans.values():
        assert [type(op) for op, _ in plan.steps] == [TvmKernelOp, TvmKernelOp]
        assert all(s.__qualname__.startswith("Plan._kernel_step") for _, s in plan.steps)


_SLICE = ("%s = nn.slice(%x, %zero, %n, %axes) {operand_segments = [1, 1, 1, 1, 0]} : "
          "(tensor<8x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> "
          "tensor<unk__1x4xf32>")
_IN_BRANCHES = """%s = nn.if(%c) ({
      SLICE1
      nn.yield(%s1) : (tensor<unk__1x4xf32>) -> ()
    }, {
      SLICE2
      nn.yield(%s2) : (tensor<unk__1x4xf32>) -> ()
    }) : (tensor<i1>) -> tensor<unk__1x4xf32>""".replace(
    "SLICE1", _SLICE.replace("%s =", "%s1 =")).replace("SLICE2", _SLICE.replace("%s =", "%s2 ="))


def _sliced_program(make_slice: str):
    text = f"""
module @m {{
  func.func @main(%x: tensor<8x4xf32>, %n: tensor<1xi64>, %c: tensor<i1>) -> (tensor<unk__1x4xf32>) {{
    %zero = builtin.constant() {{value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
    %axes = builtin.constant() {{value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
    {make_slice}
    %e = prim.exp(%s) : (tensor<unk__1x4xf32>) -> tensor<unk__1x4xf32>
    %y = prim.mul(%e, %e) : (tensor<unk__1x4xf32>, tensor<unk__1x4xf32>) -> tensor<unk__1x4xf32>
    func.return(%y) : (tensor<unk__1x4xf32>) -> ()
  }}
}}
"""
    module = parse_module(text)
    PassManager(parse_pipeline("decompose,canonicalize,fold,cse,dce,shapes,fuse")).run(module)
    assert not codegen_module(module, "llvm").kept
    return module


@pytest.mark.parametrize("make_slice", [_SLICE, _IN_BRANCHES], ids=["slice", "in-branches"])
def test_a_dim_only_a_run_shows_is_learned_and_checked_on_every_run(make_slice):
    # a slice whose length is an input's value: ONNX names its dim unk__N and nothing
    # before the run fixes it.  The first run is interpreted and binds it; the next runs
    # follow a plan with that size, and a run whose slice is longer (same input shapes)
    # is caught where the slice is made (also inside an nn.if's branch) and interpreted
    module = _sliced_program(make_slice)
    fn = module.funcs[0]
    interp = TvmInterpreter(module)
    x = np.random.default_rng(5).standard_normal((8, 4)).astype(np.float32)

    def run(n):
        got = interp.run(fn, {"x": x, "n": np.array([n], np.int64), "c": np.array(True)})["y"]
        np.testing.assert_allclose(got, np.exp(x[:n]) ** 2, rtol=1e-6)

    run(3)
    (plan,) = interp._plans.values()
    assert plan.learned == {"unk__1"} and plan.symbols["unk__1"] == 3
    assert "unk__1" not in plan.bind  # each run binds it where the slice is made
    kernel_steps = [s for op, s in plan.steps if isinstance(op, TvmKernelOp)]
    assert kernel_steps and all(s.__qualname__.startswith("Plan._kernel_step")
                                for s in kernel_steps)
    run(3)
    assert list(interp._plans.values()) == [plan]
    run(5)  # unk__1 is 5 now: interpreted, and the plan dropped
    assert not interp._plans
    run(5)  # learned again
    (plan,) = interp._plans.values()
    assert plan.symbols["unk__1"] == 5
    run(5)
    run(2)


def test_a_step_a_learned_dim_sizes_checks_that_this_run_bound_it():
    # a run binds a learned dim where a reference rule makes the value that shows it; a run
    # that took another path (an nn.if's other branch) may never bind it, and a kernel it
    # sizes must then not take the learning run's size but stop (and the run interpreted)
    module = _sliced_program(_SLICE)
    fn = module.funcs[0]
    interp = TvmInterpreter(module)
    for _ in range(2):
        interp.run(fn, {"x": np.ones((8, 4), np.float32), "n": np.array([3], np.int64),
                        "c": np.array(True)})
    (plan,) = interp._plans.values()
    kernel = next(s for op, s in plan.steps if isinstance(op, TvmKernelOp))
    interp.symbols.clear()
    with pytest.raises(DimConflict, match="unk__1 is unbound in this run, 3 in the run"):
        kernel()
    interp.symbols["unk__1"] = 4
    with pytest.raises(DimConflict, match="unk__1 is 4 in this run, 3 in the run"):
        kernel()


def _pool_switches(monkeypatch, plan_mod) -> list[int]:
    """The thread counts a plan switches TVM's pool to, as use_threads would switch it
    (only when the count changes), with four threads allowed; the pool starts on four."""
    pool, calls = [4], []

    def use_threads(n: int) -> None:
        if pool[0] != n:
            calls.append(n)
            pool[0] = n
    monkeypatch.setattr(plan_mod, "threads", lambda: 4)
    monkeypatch.setattr(plan_mod, "use_threads", use_threads)
    return calls


def test_small_kernels_run_on_one_thread_and_big_ones_get_the_threads_back(monkeypatch):
    # waking the pool's other threads for a parallel loop costs more than a small kernel
    # takes on one: with several threads, a run switches to one over each stretch of small
    # kernel steps (one switch for a model of small kernels), and back for a big one; after
    # a step that raised with the pool on one thread, the next big kernel gets them back
    import pir.runtimes.tvm.plan as plan_mod

    calls = _pool_switches(monkeypatch, plan_mod)
    text = """
module @m {
  func.func @main(%x: tensor<8x16xf32>, %big: tensor<512x256xf32>) -> (tensor<8x16xf32>, tensor<512x256xf32>) {
    %e = prim.exp(%x) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %t = prim.tanh(%e) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %b = prim.exp(%big) : (tensor<512x256xf32>) -> tensor<512x256xf32>
    func.return(%t, %b) : (tensor<8x16xf32>, tensor<512x256xf32>) -> ()
  }
}
"""
    module = parse_module(text)
    PassManager(parse_pipeline("fuse{disable=horizontal}")).run(module)
    codegen_module(module, "llvm")
    fn = module.funcs[0]
    interp = TvmInterpreter(module)
    rng = np.random.default_rng(9)
    feeds = {"x": rng.standard_normal((8, 16)).astype(np.float32),
             "big": rng.standard_normal((512, 256)).astype(np.float32)}
    got = interp.run(fn, feeds)
    np.testing.assert_allclose(got["t"], np.tanh(np.exp(feeds["x"])), rtol=1e-6)
    np.testing.assert_allclose(got["b"], np.exp(feeds["big"]), rtol=1e-6)
    (plan,) = interp._plans.values()
    assert plan.small == [True, False]  # exp-tanh on [8, 16], then exp on [512, 256]
    assert calls == [1, 4]  # one thread for the small kernel, four again for the big one
    calls.clear()
    small = plan.fast[0]

    def fails():
        raise RuntimeError("boom")
    plan.fast[0] = (fails, True)  # raises while the pool is on one thread
    with pytest.raises(RuntimeError, match="boom"):
        interp.run(fn, feeds)
    assert calls == [1]
    plan.fast[0] = small
    calls.clear()
    got = interp.run(fn, feeds)
    assert calls == [4]  # the small kernel found one thread, the big one got four back
    np.testing.assert_allclose(got["b"], np.exp(feeds["big"]), rtol=1e-6)


def test_a_loop_of_small_kernels_runs_on_one_thread_without_switching_per_iteration(
        monkeypatch):
    # a recurrent step's kernels are small: the scan as a whole runs on one thread, rather
    # than its body's plan switching the pool to one thread and back on every iteration
    import pir.runtimes.tvm.plan as plan_mod

    calls = _pool_switches(monkeypatch, plan_mod)
    f32 = onnx.TensorProto.FLOAT
    body = oh.make_graph(
        [oh.make_node("Add", ["s_in", "e"], ["s_out"]), oh.make_node("Tanh", ["s_out"], ["o"])],
        "body", [oh.make_tensor_value_info("s_in", f32, [4]),
                 oh.make_tensor_value_info("e", f32, [4])],
        [oh.make_tensor_value_info("s_out", f32, [4]), oh.make_tensor_value_info("o", f32, [4])])
    nodes = [oh.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1),
             oh.make_node("Exp", ["big"], ["b"])]
    graph = oh.make_graph(
        nodes, "g", [oh.make_tensor_value_info("s0", f32, [4]),
                     oh.make_tensor_value_info("x", f32, [6, 4]),
                     oh.make_tensor_value_info("big", f32, [512, 256])],
        [oh.make_tensor_value_info(n, f32, None) for n in ("s", "ys", "b")])
    module = import_model(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 16)]))
    PassManager(parse_pipeline("decompose,canonicalize,fold,cse,dce,shapes,fuse")).run(module)
    codegen_module(module, "llvm")
    fn = module.funcs[0]
    interp = TvmInterpreter(module)
    rng = np.random.default_rng(12)
    feeds = {"s0": rng.standard_normal(4).astype(np.float32),
             "x": rng.standard_normal((6, 4)).astype(np.float32),
             "big": rng.standard_normal((512, 256)).astype(np.float32)}
    for _ in range(2):  # the first run makes the body's plan, the second follows it
        calls.clear()
        got = interp.run(fn, feeds)
        assert calls == [1, 4], calls  # once around the scan, not once per step
    want, s = [], feeds["s0"]
    for row in feeds["x"]:
        s = s + row
        want.append(np.tanh(s))
    np.testing.assert_allclose(got["s"], s, rtol=1e-6)
    np.testing.assert_allclose(got["ys"], np.stack(want), rtol=1e-6)
    np.testing.assert_allclose(got["b"], np.exp(feeds["big"]), rtol=1e-6)


def test_a_value_a_region_reads_keeps_its_slot_until_the_region_has_run():
    # an nn.if branch reads %a from the enclosing block without naming it as an operand of
    # the nn.if; the plan must count that use, or %d (same size, made after %a's last
    # operand use) takes %a's slot and the branch reads %d (Silero VAD op15 gave wrong
    # results from its second run on)
    dot = ("prim.dot_general(LHS, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = "
           "[], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : "
           "(tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>")
    text = f"""
module @m {{
  func.func @main(%x: tensor<16x16xf32>, %w: tensor<16x16xf32>, %c: tensor<i1>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {{
    %a = {dot.replace("LHS", "%x")}
    %b = {dot.replace("LHS", "%a")}
    %d = {dot.replace("LHS", "%b")}
    %e = {dot.replace("LHS", "%d")}
    %r = nn.if(%c) ({{
      %t = prim.exp(%a) : (tensor<16x16xf32>) -> tensor<16x16xf32>
      nn.yield(%t) : (tensor<16x16xf32>) -> ()
    }}, {{
      nn.yield(%a) : (tensor<16x16xf32>) -> ()
    }}) : (tensor<i1>) -> tensor<16x16xf32>
    func.return(%r, %e) : (tensor<16x16xf32>, tensor<16x16xf32>) -> ()
  }}
}}
"""
    module = parse_module(text)
    PassManager(parse_pipeline("decompose,canonicalize,fold,cse,dce,shapes,fuse")).run(module)
    codegen_module(module, "llvm")
    fn = module.funcs[0]
    interp = TvmInterpreter(module)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((16, 16)).astype(np.float32)
    w = (rng.standard_normal((16, 16)) / 4).astype(np.float32)
    a = x @ w
    for cond, want in [(True, np.exp(a)), (False, a), (True, np.exp(a)), (False, a)]:
        got = interp.run(fn, {"x": x, "w": w, "c": np.array(cond)})
        np.testing.assert_allclose(got["r"], want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["e"], a @ w @ w @ w, rtol=1e-4, atol=1e-5)
    assert interp._plans  # the later runs followed the plan
