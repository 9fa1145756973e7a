"""How many vector accumulators a row reduction keeps (schedule.row_accumulators): four for
rows the caches hold; for rows streamed from memory one on the pass that brings a row in
(half-width when the kernel is light), and the kernels compute the same values either way."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest

pytest.importorskip("tvm")

from pir.codegen.tvm import compile_block  # noqa: E402
from pir.codegen.tvm.schedule import LIGHT_OPS, STREAMING_BYTES, row_accumulators  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.core import OPS, Block  # noqa: E402
from pir.ir.dialects import load_dialects  # noqa: E402
from pir.ir.dialects.func import ReturnOp  # noqa: E402
from pir.ir.types import DType, TensorType  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.reference.interpreter import evaluate_op  # noqa: E402
from helpers import node_model  # noqa: E402


def test_policy():
    big = STREAMING_BYTES + 1
    for first in (True, False):
        assert row_accumulators(None, 7, 16, first) == (4, 16)  # symbolic rows: taken to fit
        assert row_accumulators(STREAMING_BYTES, 7, 16, first) == (4, 16)
        assert row_accumulators(big, LIGHT_OPS + 1, 16, first) == (1, 16)  # heavy, streamed
    # light, streamed: the pass that brings the row in, then the passes over it in L1
    assert row_accumulators(big, 7, 16, True) == (1, 8)
    assert row_accumulators(big, 7, 16, False) == (4, 16)


def _kernel(kind: str, rows: int, d: int):
    rng = np.random.default_rng(d)
    x = np.zeros((2, d), np.float32)
    shapes = {"x": [rows, d]}
    if kind == "rms":
        model = node_model("RMSNormalization", {"x": x}, ["y"], opset=23, axis=-1,
                           initializers={"s": rng.standard_normal(d).astype(np.float32)},
                           shapes=shapes)
    elif kind == "softmax":
        model = node_model("Softmax", {"x": x}, ["y"], axis=-1, shapes=shapes)
    else:
        model = node_model("LayerNormalization", {"x": x}, ["y"], axis=-1, shapes=shapes,
                           initializers={"s": rng.standard_normal(d).astype(np.float32),
                                         "b": rng.standard_normal(d).astype(np.float32)})
    module = import_model(model)
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(module)
    return module, compile_block(module.funcs[0].entry, kind)


def _partials(tir: str) -> list[int]:
    """The sizes of the rfactor partial-result buffers (lanes x accumulators), in order."""
    return [int(n) for n in re.findall(r"_rf = T\.sblock_alloc_buffer\(\((\d+),", tir)]


def _matches_reference(module, kernel, x) -> None:
    (got,) = kernel(x)
    want = run_function(module, {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["rms", "softmax", "layernorm"])
@pytest.mark.parametrize("d, partials", [(768, 64), (96, 32), (48, 16), (32, 16)])
def test_accumulators_in_cache(kind, d, partials):
    # four accumulators of 16 lanes where 64 divides the row; two where only 32 does; one
    # where the row holds two vectors or fewer than one per accumulator
    module, kernel = _kernel(kind, 5, d)
    tir = kernel.mod.script()
    assert set(_partials(tir)) == {partials}
    if partials > 16:  # the accumulators are added lane by lane before the lanes
        assert f"T.unroll({partials // 16})" in tir
        assert re.search(r"_rf_1 = T\.sblock_alloc_buffer\(\(16,", tir)
    x = np.random.default_rng(0).standard_normal((5, d)).astype(np.float32) * 3
    _matches_reference(module, kernel, x)


@pytest.mark.parametrize("kind, partials", [("rms", [8]), ("softmax", [16, 16]),
                                             ("layernorm", [8, 64])])
def test_streamed_rows(kind, partials):
    rows, d = 11008, 768  # 2 x 32.25 MiB: over STREAMING_BYTES
    assert 2 * rows * d * 4 > STREAMING_BYTES
    module, kernel = _kernel(kind, rows, d)
    tir = kernel.mod.script()
    assert _partials(tir) == partials
    assert ("T.unroll(4)" in tir) == (64 in partials)
    x = np.random.default_rng(1).standard_normal((rows, d)).astype(np.float32)
    _matches_reference(module, kernel, x)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"])
@pytest.mark.parametrize("dtype, lanes", [(DType.F32, 16), (DType.F64, 8), (DType.I32, 16)])
def test_row_reductions_of_each_reducer_and_dtype(name, dtype, lanes):
    # a row reduction alone, 256 wide: four accumulators of a vector each, folded, whatever
    # the reducer and the element type
    load_dialects()  # the prim ops in OPS
    t = TensorType(dtype, (3, 256))
    block = Block([t], ["x"])
    op = block.append(OPS[f"prim.{name}"].build(block.args[0], axes=[1], keepdims=True))
    block.append(ReturnOp.build([op.results[0]]))
    kernel = compile_block(block)
    assert set(_partials(kernel.mod.script())) == {4 * lanes}
    rng = np.random.default_rng(3)
    if dtype == DType.I32:
        x = rng.integers(-3, 4, (3, 256)).astype(np.int32)
        x[:, 8:] = np.where(name == "reduce_prod", 1, x[:, 8:])  # a product that fits
    else:
        x = rng.uniform(0.9, 1.1, (3, 256)).astype(dtype.numpy)
    (want,) = evaluate_op(op, [x])
    (got,) = kernel(x)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max"])
@pytest.mark.parametrize("shape", [(1, 64, 7, 7), (2, 16, 14, 14), (1, 32, 3, 5)])
def test_a_window_reduction_adds_its_rows_as_short_vectors(name, shape):
    # a global pool: the innermost reduced dim (7, 14, 5 <= 16 lanes) is rfactor'ed whole
    load_dialects()
    block = Block([TensorType(DType.F32, shape)], ["x"])
    op = block.append(OPS[f"prim.{name}"].build(block.args[0], axes=[2, 3], keepdims=True))
    block.append(ReturnOp.build([op.results[0]]))
    kernel = compile_block(block)
    assert f"T.vectorized({shape[3]})" in kernel.mod.script()
    assert set(_partials(kernel.mod.script())) == {shape[3]}
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    (want,) = evaluate_op(op, [x])
    (got,) = kernel(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(3, 7, 5), (64, 3)])
def test_a_reduction_of_everything_read_by_another_block_still_compiles(shape):
    # sum over every axis to a 0-d value that exp(s) * s reads: no short-window rfactor
    # (TVM's rfactor fails an internal check there), the kernel still built
    load_dialects()
    block = Block([TensorType(DType.F32, shape)], ["x"])
    s = block.append(OPS["prim.reduce_sum"].build(block.args[0], axes=list(range(len(shape))),
                                                  keepdims=False)).results[0]
    e = block.append(OPS["prim.exp"].build(s)).results[0]
    y = block.append(OPS["prim.mul"].build(e, s)).results[0]
    block.append(ReturnOp.build([y, s]))
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32) * 0.1
    got_y, got_s = compile_block(block)(x)
    np.testing.assert_allclose(got_s, x.sum(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_y, np.exp(x.sum()) * x.sum(), rtol=1e-5, atol=1e-6)


def test_counting_ops_walks_a_chain_deeper_than_the_recursion_limit():
    import sys

    from tvm import tirx

    from pir.codegen.tvm.schedule import _count_ops

    x = tirx.Var("x", "float32")
    e = x
    for i in range(sys.getrecursionlimit() + 500):
        e = e * tirx.const(1.001, "float32") + x if i % 2 else e + x
    assert _count_ops(e, set()) == (sys.getrecursionlimit() + 500) * 3 // 2


@pytest.mark.parametrize("d", [6906, 1000, 100])
def test_a_row_max_the_vectors_do_not_divide_is_vectors_then_the_rest(d):
    """A softmax over 6906 classes: its max over the first 6896 columns in vector lanes (an
    rfactor needs whole vectors) and over the last 10 scalar, combined; NaN still reaches
    the max from either part."""
    module, kernel = _kernel("softmax", 3, d)
    tir = kernel.mod.script()
    lanes = re.search(r"_1_vectors_rf = T\.sblock_alloc_buffer\(\((\d+),", tir)
    assert lanes and int(lanes.group(1)) % 16 == 0, tir  # the max's partials: whole vectors
    assert f"T.axis.reduce({d % 16}," in tir  # the rest: d % 16 columns
    x = np.random.default_rng(1).standard_normal((3, d)).astype(np.float32) * 3
    _matches_reference(module, kernel, x)
    x[1, -1] = np.nan  # in the rest
    x[2, 0] = np.nan  # in the vectors
    (got,) = kernel(x)
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all() and not np.isnan(got[0]).any()


def _executions(stmt, outer: int = 1, found=None) -> dict[str, int]:
    """How many times each block of a scheduled function's body runs: the product of the
    static extents of the loops around it."""
    from tvm import tirx
    from tvm.s_tir.stmt import SBlockRealize

    found = {} if found is None else found
    if isinstance(stmt, tirx.For):
        _executions(stmt.body, outer * int(stmt.extent.value), found)
    elif isinstance(stmt, tirx.SeqStmt):
        for s in stmt.seq:
            _executions(s, outer, found)
    elif isinstance(stmt, SBlockRealize):
        name = stmt.block.name_hint
        found[name] = found.get(name, 0) + outer
        _executions(stmt.block.body, outer, found)
    elif hasattr(stmt, "body"):
        _executions(stmt.body, outer, found)
    return found


def test_a_softmax_written_transposed_is_not_recomputed_per_output_row():
    """YOLOv8's PSA attention (captcha-recognizer's slider detector): softmax over the last
    axis, then a transpose of the last two.  Row-fused over the output's rows, each row needed
    every softmax row, and the kernel computed the [4, 400, 400] softmax 400 times (331 ms;
    0.6 ms as separate passes)."""
    x = np.zeros((1, 4, 40, 40), np.float32)
    model = node_model("Softmax", {"x": x}, ["s"], axis=-1)
    model.graph.node.append(onnx.helper.make_node("Transpose", ["s"], ["y"],
                                                  perm=[0, 1, 3, 2]))
    del model.graph.output[:]
    model.graph.output.append(onnx.helper.make_tensor_value_info("y", 1, None))
    module = import_model(model)
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(module)
    kernel = compile_block(module.funcs[0].entry, "softmax_t")
    runs = _executions(kernel.mod["softmax_t"].body.block.body)
    assert runs and max(runs.values()) <= 2 * 4 * 40 * 40, runs
    x = np.random.default_rng(1).standard_normal((1, 4, 40, 40)).astype(np.float32)
    _matches_reference(module, kernel, x)
