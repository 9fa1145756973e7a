"""Row kernels that write a kept row into their output (``pir/codegen/tvm/inplace.py``): done
where no element is overwritten before it is read, left alone where one would be."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

from pir.codegen.tvm import compile_block  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402

# a softmax over the last two dims of [N, 16, 16]; OUT is the value the output scales: the
# exponentials themselves, or the exponentials transposed (each output element then reads
# another element of the row, which an in-place scale would already have overwritten)
SOFTMAX = """
module @m {
  func.func @main(%x: tensor<Nx16x16xf32>) -> (tensor<Nx16x16xf32>) {
    %m = prim.reduce_max(%x) {axes = [1, 2], keepdims = true} : (tensor<Nx16x16xf32>) -> tensor<Nx1x1xf32>
    %mb = prim.broadcast_in_dim(%m) {broadcast_dimensions = [0, 1, 2]} : (tensor<Nx1x1xf32>) -> tensor<Nx16x16xf32>
    %d = prim.sub(%x, %mb) : (tensor<Nx16x16xf32>, tensor<Nx16x16xf32>) -> tensor<Nx16x16xf32>
    %e = prim.exp(%d) : (tensor<Nx16x16xf32>) -> tensor<Nx16x16xf32>
    %t = prim.transpose(%e) {permutation = [0, 2, 1]} : (tensor<Nx16x16xf32>) -> tensor<Nx16x16xf32>
    %s = prim.reduce_sum(%e) {axes = [1, 2], keepdims = true} : (tensor<Nx16x16xf32>) -> tensor<Nx1x1xf32>
    %r = prim.reciprocal(%s) : (tensor<Nx1x1xf32>) -> tensor<Nx1x1xf32>
    %rb = prim.broadcast_in_dim(%r) {broadcast_dimensions = [0, 1, 2]} : (tensor<Nx1x1xf32>) -> tensor<Nx16x16xf32>
    %y = prim.mul(OUT, %rb) : (tensor<Nx16x16xf32>, tensor<Nx16x16xf32>) -> tensor<Nx16x16xf32>
    func.return(%y) : (tensor<Nx16x16xf32>) -> ()
  }
}
"""


def _compile_and_check(out: str) -> str:
    module = parse_module(SOFTMAX.replace("OUT", out))
    kernel = compile_block(module.funcs[0].entry)
    x = np.random.default_rng(0).standard_normal((5, 16, 16)).astype(np.float32) * 3
    (got,) = kernel(x)
    want = run_function(module, {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    return kernel.mod.script()


def test_exponentials_are_written_into_the_output_and_scaled_in_place():
    tir = _compile_and_check("%e")
    assert "T.sblock_alloc_buffer((N, 16, 16))" not in tir
    assert "y[v_i0, v_i1, v_i2] = y[v_i0, v_i1, v_i2] * r[v_i0, 0, 0]" in tir


def test_a_transposed_read_of_the_row_keeps_its_buffer():
    tir = _compile_and_check("%t")
    assert "e = T.sblock_alloc_buffer((N, 16, 16))" in tir
    assert "y[v_i0, v_i1, v_i2] = e[v_i0, v_i2, v_i1] * r[v_i0, 0, 0]" in tir


# each row also sums the previous row's exponentials: the row loop computes two rows of them
# per row, and written into the output they would overwrite the finished previous row
PREVIOUS_ROW = """
module @m {
  func.func @main(%x: tensor<6x32xf32>) -> (tensor<6x32xf32>) {
    %m = prim.reduce_max(%x) {axes = [1], keepdims = true} : (tensor<6x32xf32>) -> tensor<6x1xf32>
    %mb = prim.broadcast_in_dim(%m) {broadcast_dimensions = [0, 1]} : (tensor<6x1xf32>) -> tensor<6x32xf32>
    %d = prim.sub(%x, %mb) : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
    %e = prim.exp(%d) : (tensor<6x32xf32>) -> tensor<6x32xf32>
    %z = builtin.constant() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %es = prim.slice(%e) {start_indices = [0], limit_indices = [5], axes = [0]} : (tensor<6x32xf32>) -> tensor<5x32xf32>
    %prev = prim.pad(%es, %z) {edge_padding_low = [1, 0], edge_padding_high = [0, 0]} : (tensor<5x32xf32>, tensor<f32>) -> tensor<6x32xf32>
    %s = prim.reduce_sum(%e) {axes = [1], keepdims = true} : (tensor<6x32xf32>) -> tensor<6x1xf32>
    %s2 = prim.reduce_sum(%prev) {axes = [1], keepdims = true} : (tensor<6x32xf32>) -> tensor<6x1xf32>
    %t = prim.add(%s, %s2) : (tensor<6x1xf32>, tensor<6x1xf32>) -> tensor<6x1xf32>
    %r = prim.reciprocal(%t) : (tensor<6x1xf32>) -> tensor<6x1xf32>
    %rb = prim.broadcast_in_dim(%r) {broadcast_dimensions = [0, 1]} : (tensor<6x1xf32>) -> tensor<6x32xf32>
    %y = prim.mul(%e, %rb) : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
    func.return(%y) : (tensor<6x32xf32>) -> ()
  }
}
"""


def test_a_row_read_by_the_next_row_keeps_its_buffer():
    module = parse_module(PREVIOUS_ROW)
    kernel = compile_block(module.funcs[0].entry)
    tir = kernel.mod.script()
    assert "T.parallel(6)" in tir and "e = T.sblock_alloc_buffer((6, 32))" in tir
    x = np.random.default_rng(1).standard_normal((6, 32)).astype(np.float32)
    (got,) = kernel(x)
    np.testing.assert_allclose(got, run_function(module, {"x": x})["y"], rtol=1e-5, atol=1e-7)
