"""TVM lowering of prim blocks: the decomposed RMSNorm, softmax, LayerNorm and GELU, and single
prim ops, compiled for the CPU and compared with the reference runtime on the same function."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

from pir.codegen.tvm import build, compile_block, lower_block  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.core import OPS, Block  # noqa: E402
from pir.ir.dialects.func import ReturnOp  # noqa: E402
from pir.ir.dialects.prim.shape import (  # noqa: E402
    BroadcastInDimOp,
    ConcatOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
)
from pir.ir.types import DType, TensorType  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from helpers import node_model  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6


def _model(kind: str, d: int, rng, symbolic: bool):
    x = np.zeros((2, d), np.float32)
    s = rng.standard_normal(d).astype(np.float32)
    b = rng.standard_normal(d).astype(np.float32)
    shapes = {"x": ["N", d]} if symbolic else {"x": [{64: 4, 37: 3}.get(d, 7), d]}
    if kind == "rms":
        return node_model("RMSNormalization", {"x": x}, ["y"], opset=23, initializers={"s": s},
                          axis=-1, shapes=shapes)
    if kind == "softmax":
        return node_model("Softmax", {"x": x}, ["y"], axis=-1, shapes=shapes)
    if kind == "layernorm":
        return node_model("LayerNormalization", {"x": x}, ["y"], initializers={"s": s, "b": b},
                          axis=-1, shapes=shapes)
    return node_model("Gelu", {"x": x}, ["y"], opset=20, shapes=shapes)


def _prim_module(kind, d, rng, symbolic=False, pipeline="decompose,canonicalize,cse,dce"):
    module = import_model(_model(kind, d, rng, symbolic))
    PassManager(parse_pipeline(pipeline)).run(module)
    return module


def _check(kernel, module, x):
    (got,) = kernel(x)
    want = run_function(module, {"x": x})["y"]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


KINDS = ["rms", "softmax", "layernorm", "gelu"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(4, 64), (3, 37), (7, 256)])  # 256: rows are prefetched
def test_decomposed_ops_match_reference(kind, shape):
    rng = np.random.default_rng(0)
    module = _prim_module(kind, shape[1], rng)
    kernel = compile_block(module.funcs[0].entry, kind)
    _check(kernel, module, rng.standard_normal(shape).astype(np.float32) * 3)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("width", [64, 256])
def test_symbolic_rows_one_compile_two_sizes(kind, width):
    rng = np.random.default_rng(1)
    module = _prim_module(kind, width, rng, symbolic=True)
    kernel = compile_block(module.funcs[0].entry, kind)
    assert set(kernel.kernel.sizes) == {"N"}
    for n in (5, 13):
        _check(kernel, module, rng.standard_normal((n, width)).astype(np.float32))


def test_fold_pipeline_constants_become_parameters():
    # fold materialises broadcast constants ([4, 64] scale): they become kernel parameters
    rng = np.random.default_rng(2)
    module = _prim_module("rms", 64, rng, pipeline="decompose,canonicalize,fold,cse,dce")
    kernel = compile_block(module.funcs[0].entry)
    assert kernel.kernel.params, "the non-splat constant should be a parameter"
    _check(kernel, module, rng.standard_normal((4, 64)).astype(np.float32))


def test_row_schedule_computes_statistics_once_and_vectorises():
    rng = np.random.default_rng(3)
    module = _prim_module("layernorm", 64, rng, symbolic=True)
    kernel = compile_block(module.funcs[0].entry)
    tir = kernel.mod.script()
    assert "T.parallel(N)" in tir  # one parallel loop over the rows
    assert "T.vectorized(16)" in tir
    assert "_rf" in tir  # the reductions are rfactor'ed into vector lanes
    # rsqrt is applied once per row, not in the per-element loop of the output
    out_block = tir[tir.index('T.sblock("y")'):]
    assert "rsqrt" not in out_block


def test_unscheduled_build_matches_too():
    rng = np.random.default_rng(4)
    module = _prim_module("softmax", 37, rng)
    kernel = build(lower_block(module.funcs[0].entry), schedule=False)
    _check(kernel, module, rng.standard_normal((3, 37)).astype(np.float32))


# -- single ops ------------------------------------------------------------------------------

def _one_op(build_op, arg_types, names=None):
    block = Block(arg_types, names or [f"a{i}" for i in range(len(arg_types))])
    op = build_op(*block.args)
    block.append(op)
    block.append(ReturnOp.build([op.results[0]]))
    return block, op


def _run_one(block, op, arrays):
    from pir.runtimes.reference.interpreter import evaluate_op

    (want,) = evaluate_op(op, arrays)
    (got,) = compile_block(block)(*arrays)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


F32 = lambda *shape: TensorType(DType.F32, shape)  # noqa: E731


@pytest.mark.parametrize("name", ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "erf",
                                  "logistic", "sign", "floor", "ceil", "round", "reciprocal",
                                  "sin", "log1p"])
def test_unary(name):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 17)) * 4).astype(np.float32)
    if name in ("log", "sqrt", "rsqrt", "log1p"):
        x = np.abs(x) + 0.1
    x[0, :4] = [0.5, 1.5, 2.5, -0.5]  # round: ties to even
    block, op = _one_op(lambda a: OPS[f"prim.{name}"].build(a), [F32(3, 17)])
    _run_one(block, op, [x])


def test_exp_ends_and_nan():
    # the f32 exp gets its ends from a clamp, not from tests of its own: inf above 88.38,
    # 0 below -87.68, and a NaN that the clamp (constant first) lets through
    x = np.array([[np.nan, np.inf, -np.inf, 100.0, -100.0, 88.3, -87.0, 0.0, -1.5, 20.0]],
                 np.float32)
    block, op = _one_op(lambda a: OPS["prim.exp"].build(a), [F32(1, 10)])
    (got,) = compile_block(block)(x)
    assert np.isnan(got[0, 0]) and got[0, 1] == np.inf and got[0, 2] == 0.0
    assert got[0, 3] == np.inf and got[0, 4] == 0.0
    np.testing.assert_allclose(got[0, 5:], np.exp(x[0, 5:].astype(np.float64)), rtol=2e-7)


def test_exp_is_within_an_ulp_over_its_range():
    # the rounding-bias form of n and the polynomial taken to its constant term by Horner:
    # at most 0.89 ulp from the correctly rounded exp on a dense grid (the floor-and-cast
    # form before it reached 1.01)
    x = np.linspace(-87.3, 88.3, 1 << 18, dtype=np.float32).reshape(4, -1)
    block, op = _one_op(lambda a: OPS["prim.exp"].build(a), [F32(*x.shape)])
    (got,) = compile_block(block)(x)
    want = np.exp(x.astype(np.float64))
    ulps = np.abs(got - want) / np.spacing(want.astype(np.float32)).astype(np.float64)
    assert ulps.max() < 1.0


def test_logistic_is_vector_arithmetic_within_three_ulp_and_keeps_its_ends():
    # 1 / (1 + exp(-x)) through the polynomial exp, not TIR's sigmoid (a libm expf call per
    # lane): within 2.5 ulp where the result is a normal float, 0 and 1 at the ends, NaN kept
    x = np.linspace(-87.0, 100.0, 1 << 18, dtype=np.float32).reshape(4, -1)
    block, op = _one_op(lambda a: OPS["prim.logistic"].build(a), [F32(*x.shape)])
    kernel = compile_block(block)
    assert "sigmoid" not in kernel.mod.script() and "exp" not in kernel.mod.script()
    (got,) = kernel(x)
    want = 1 / (1 + np.exp(-x.astype(np.float64)))
    ulps = np.abs(got - want) / np.spacing(want.astype(np.float32)).astype(np.float64)
    assert ulps.max() < 3.0
    ends = np.array([[np.nan, np.inf, -np.inf, -100.0, 100.0, 0.0]], np.float32)
    block, op = _one_op(lambda a: OPS["prim.logistic"].build(a), [F32(1, 6)])
    (got,) = compile_block(block)(ends)
    assert np.isnan(got[0, 0]) and list(got[0, 1:]) == [1.0, 0.0, 0.0, 1.0, 0.5]


def test_relu_and_clip_pass_nan_without_a_nan_test():
    # max(x, 0) and min(6, max(x, 0)) with the number first: TIR's max is ``a > b ? a : b``,
    # so a NaN x comes out as itself with no isnan select in the kernel
    from pir.ir.parser import parse_module

    text = """module @m {
  func.func @main(%x: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
    %z = builtin.constant() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %zb = prim.broadcast_in_dim(%z) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<4x32xf32>
    %s = builtin.constant() {value = dense<6.0> : tensor<f32>} : () -> tensor<f32>
    %sb = prim.broadcast_in_dim(%s) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<4x32xf32>
    %r = prim.max(%x, %zb) : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
    %m = prim.min(%sb, %r) : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
    func.return(%r, %m) : (tensor<4x32xf32>, tensor<4x32xf32>) -> ()
  }
}"""
    kernel = compile_block(parse_module(text).funcs[0].entry)
    assert "isnan" not in kernel.mod.script()
    x = np.random.default_rng(6).standard_normal((4, 32)).astype(np.float32) * 10
    x[0, :3] = [np.nan, np.inf, -np.inf]
    relu, clip = kernel(x)
    np.testing.assert_array_equal(relu, np.maximum(x, 0))  # NaN where x is NaN
    np.testing.assert_array_equal(clip, np.minimum(6, np.maximum(x, 0)))
    assert np.isnan(relu[0, 0]) and np.isnan(clip[0, 0]) and relu[0, 1] == np.inf


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max", "min", "pow", "rem",
                                  "eq", "lt", "ge", "ne"])
def test_binary_and_compare(name):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((5, 8)).astype(np.float32)
    b = rng.standard_normal((5, 8)).astype(np.float32)
    if name == "pow":
        a = np.abs(a) + 0.1
    block, op = _one_op(lambda x, y: OPS[f"prim.{name}"].build(x, y), [F32(5, 8)] * 2)
    _run_one(block, op, [a, b])


def test_integer_div_rem_truncate():
    a = np.array([[7, -7, 7, -7]], np.int32)
    b = np.array([[2, 2, -2, -2]], np.int32)
    t = TensorType(DType.I32, (1, 4))
    for name in ("div", "rem"):
        block, op = _one_op(lambda x, y: OPS[f"prim.{name}"].build(x, y), [t, t])
        _run_one(block, op, [a, b])


def test_select_and_cast():
    rng = np.random.default_rng(7)
    p = rng.standard_normal((4, 6)) > 0
    a, b = (rng.standard_normal((2, 4, 6)) * 5).astype(np.float32)
    t = F32(4, 6)
    block, op = _one_op(lambda q, x, y: OPS["prim.select"].build(q, x, y),
                        [TensorType(DType.BOOL, (4, 6)), t, t])
    _run_one(block, op, [p, a, b])
    for dtype in (DType.I32, DType.BOOL, DType.F64):
        block, op = _one_op(lambda x: OPS["prim.cast"].build(x, dtype=dtype), [t])
        _run_one(block, op, [a])


def test_shape_ops():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    cases = [
        (lambda a: BroadcastInDimOp.build(a, broadcast_dimensions=[0, 2],
                                          result_types=[F32(2, 5, 3)]), F32(2, 3), x[:, :, 0]),
        (lambda a: BroadcastInDimOp.build(a, broadcast_dimensions=[1, 0],
                                          result_types=[F32(4, 3)]), F32(1, 4), x[:1, 0, :]),
        (lambda a: ReshapeOp.build(a, result_types=[F32(6, 4)]), F32(2, 3, 4), x),
        (lambda a: ReshapeOp.build(a, result_types=[F32(4, 3, 2)]), F32(2, 3, 4), x),
        (lambda a: TransposeOp.build(a, permutation=[2, 0, 1]), F32(2, 3, 4), x),
        (lambda a: SliceOp.build(a, start_indices=[1], limit_indices=[4], strides=[2],
                                 axes=[2]), F32(2, 3, 4), x),
    ]
    for make, t, arr in cases:
        block, op = _one_op(make, [t])
        _run_one(block, op, [np.ascontiguousarray(arr)])
    block, op = _one_op(lambda a, b: ConcatOp.build([a, b], dimension=1),
                        [F32(2, 3, 4), F32(2, 2, 4)])
    _run_one(block, op, [x, x[:, :2]])


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"])
@pytest.mark.parametrize("axes,keepdims", [([1], True), ([0], False), ([0, 1], False)])
def test_reductions(name, axes, keepdims):
    rng = np.random.default_rng(9)
    x = rng.uniform(0.5, 1.5, (6, 32)).astype(np.float32)
    block, op = _one_op(lambda a: OPS[f"prim.{name}"].build(a, axes=axes, keepdims=keepdims),
                        [F32(6, 32)])
    _run_one(block, op, [x])


def test_symbolic_elementwise_with_broadcast():
    # %y = x + broadcast(b): the B dim is a size variable, bound from the input at run time
    b_t = F32(4)
    block = Block([TensorType(DType.F32, ("B", 4)), b_t], ["x", "b"])
    bb = block.append(BroadcastInDimOp.build(block.args[1], broadcast_dimensions=[1],
                                             result_types=[TensorType(DType.F32, ("B", 4))]))
    add = block.append(OPS["prim.add"].build(block.args[0], bb.results[0]))
    block.append(ReturnOp.build([add.results[0]]))
    kernel = compile_block(block)
    b = np.arange(4, dtype=np.float32)
    for n in (1, 7):
        x = np.ones((n, 4), np.float32)
        (y,) = kernel(x, b)
        np.testing.assert_array_equal(y, x + b)


@pytest.mark.parametrize("kind", ["softmax", "logsoftmax"])
def test_softmax_shift_max_may_ignore_nan_and_rows_still_match(kind):
    """The max that shifts a softmax drops NaN (one vmaxps per vector): a NaN in a row
    still makes every output of that row NaN, through the sum, as the reference gives.
    (A max used otherwise keeps prim's NaN semantics: test_lower_semantics.)"""
    import re

    d = 64
    model = node_model("Softmax" if kind == "softmax" else "LogSoftmax",
                       {"x": np.zeros((2, d), np.float32)}, ["y"], axis=-1,
                       shapes={"x": [5, d]})
    module = import_model(model)
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(module)
    kernel = compile_block(module.funcs[0].entry, kind)
    assert re.search(r"_rf\[[^\]]*\] = T\.max\(", kernel.mod.script())
    x = np.random.default_rng(3).standard_normal((5, d)).astype(np.float32) * 3
    x[1, 7] = np.nan
    x[2, :] = -np.inf
    x[3, 4] = np.inf
    (got,) = kernel(x)
    want = run_function(module, {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all()


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16"])
def test_nan_guards_are_vector_code_and_keep_nan_and_inf(dtype):
    # erf, tanh and sign guard NaN, max of two computed values and the tests themselves
    # look for it: as bit tests, which TVM vectorises (its isnan intrinsic made the whole
    # statement one lane at a time, and `x != x` is folded to false), with NaN and the
    # infinities still told apart from the largest finite numbers
    from lanes import store_lanes

    from pir.ir.parser import parse_module
    from pir.runtimes.reference.interpreter import run_function

    t = f"tensor<4x32x{dtype}>"
    ops = {"erf": "prim.erf(%x)", "tanh": "prim.tanh(%x)", "sign": "prim.sign(%x)",
           "mx": "prim.max(%x, %y)", "nan": "prim.is_nan(%x)", "inf": "prim.is_inf(%x)"}
    out_t = {k: ("tensor<4x32xi1>" if k in ("nan", "inf") else t) for k in ops}
    body = "\n".join(f"    %{k} = {e} : ({t}{', ' + t if k == 'mx' else ''}) -> {out_t[k]}"
                     for k, e in ops.items())
    text = f"""module @m {{
  func.func @main(%x: {t}, %y: {t}) -> ({', '.join(out_t.values())}) {{
{body}
    func.return({', '.join('%' + k for k in ops)}) : ({', '.join(out_t.values())}) -> ()
  }}
}}"""
    module = parse_module(text)
    kernel = compile_block(module.funcs[0].entry)
    np_dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16}[dtype]
    big = np.finfo(np_dtype).max
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 32)) * 3).astype(np_dtype)
    y = (rng.standard_normal((4, 32)) * 3).astype(np_dtype)
    x[0, :6] = [np.nan, np.inf, -np.inf, big, -big, -0.0]
    y[1, :2] = [np.nan, np.inf]
    got = kernel(x, y)
    want = run_function(module, {"x": x, "y": y})
    for name, g in zip(ops, got):
        w = want[name]
        np.testing.assert_allclose(g, w, rtol=1e-3 if dtype == "f16" else 1e-6, atol=1e-6,
                                   equal_nan=True, err_msg=name)
        # (f16 is widened to f32 and rounded back per lane; f64 erf and tanh are libm calls)
        if dtype == "f32" or (dtype == "f64" and name not in ("erf", "tanh")):
            vector, scalar = store_lanes(kernel.mod, name)
            assert vector and not scalar, (name, vector, scalar)
