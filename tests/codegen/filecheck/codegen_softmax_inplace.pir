// RUN: pir codegen %s --target llvm | filecheck %s
// RUN: pir codegen %s --target llvm | pir verify -
// A softmax as `decompose` writes it (exp(x - max) * (1 / sum)): the row of exponentials is
// written into the output row, summed from there, then scaled in place, as ONNX Runtime's
// MLAS does; the kernel allocates no row buffer (the only buffers left are per-row scalars
// and the lanes of the two rfactor'ed reductions, four accumulators of 16 each), and it has
// no prefetch loop.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %y = kernel.tvm(%x) ({
// CHECK:         }) {kind = "reduction", symbol = "y",
// CHECK-SAME:      def y(x_1: T.Buffer((\"N\", 256), \"float32\"), out: T.Buffer((N, 256), \"float32\")):
// CHECK-NOT:       T.sblock_alloc_buffer((N, 256))
// CHECK-NOT:       llvm.prefetch
// CHECK-SAME:      for i0 in T.parallel(N):\n
// CHECK-SAME:      T.writes(out[v_i0, v_i1])\n
// CHECK-SAME:      out[v_i0, v_i1] = (
// CHECK-SAME:      s_rf[vs_k1_1, v_i0, v_i1] = s_rf[vs_k1_1, v_i0, v_i1] + out[v_i0, vs_k1_0 * 64 + vs_k1_1]\n
// CHECK-SAME:      out[v_i0, v_i1] = out[v_i0, v_i1] * r[v_i0, 0]
// CHECK-NEXT:    func.return(%y)

module @test_softmax_inplace {
  func.func @main(%x: tensor<Nx256xf32>) -> (tensor<Nx256xf32>) {
    %y = fusion.group(%x) ({
    ^bb0(%x_1: tensor<Nx256xf32>):
      %m = prim.reduce_max(%x_1) {axes = [1], keepdims = true} : (tensor<Nx256xf32>) -> tensor<Nx1xf32>
      %mb = prim.broadcast_in_dim(%m) {broadcast_dimensions = [0, 1]} : (tensor<Nx1xf32>) -> tensor<Nx256xf32>
      %d = prim.sub(%x_1, %mb) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %e = prim.exp(%d) : (tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %s = prim.reduce_sum(%e) {axes = [1], keepdims = true} : (tensor<Nx256xf32>) -> tensor<Nx1xf32>
      %r = prim.reciprocal(%s) : (tensor<Nx1xf32>) -> tensor<Nx1xf32>
      %rb = prim.broadcast_in_dim(%r) {broadcast_dimensions = [0, 1]} : (tensor<Nx1xf32>) -> tensor<Nx256xf32>
      %out = prim.mul(%e, %rb) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      fusion.yield(%out) : (tensor<Nx256xf32>) -> ()
    }) {kind = "reduction"} : (tensor<Nx256xf32>) -> tensor<Nx256xf32>
    func.return(%y) : (tensor<Nx256xf32>) -> ()
  }
}
