// RUN: pir codegen %s --target llvm | filecheck %s
// RUN: pir codegen %s --target llvm | pir verify -
// An rms_norm group (as `decompose` and `fuse` write it, with its count and epsilon copied
// in as tiny constants) becomes one row kernel: the rows run in parallel; each row first
// prefetches the row two ahead (one prefetch per 64-byte line: 16 lines of 256 float32),
// then sums the squares in four accumulators of 16 lanes (rfactor; a symbolic N is taken to
// fit in the caches, where independent adds pay), folds them into one vector and adds its
// lanes, computes rsqrt once per row, and writes x * r * g with vector stores.  The count
// and epsilon are immediates: the
// kernel takes only x and g.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %y = kernel.tvm(%x, %g) ({
// CHECK:         }) {kind = "reduction", symbol = "y",
// CHECK-SAME:      def y(x_1: T.Buffer((\"N\", 256), \"float32\"), g_1: T.Buffer((256,), \"float32\"), y_1: T.Buffer((N, 256), \"float32\")):
// CHECK-SAME:      ss_rf = T.sblock_alloc_buffer((64, N, 1))\n
// CHECK-SAME:      for i0 in T.parallel(N):\n
// CHECK-SAME:      for line in range(16):\n
// CHECK-SAME:      T.call_llvm_intrin(\"void\", \"llvm.prefetch\", T.address_of(x_1[T.min(i0 + 2, N - 1) % N, line * 16 % 256]), 0, 3, 1)\n
// CHECK-SAME:      for ax0_0 in T.unroll(4):\n
// CHECK-SAME:      for ax0_1 in T.vectorized(16):\n
// CHECK-SAME:      ss_rf[vss_k1_1, v_i0, v_i1] = ss_rf[vss_k1_1, v_i0, v_i1] + x_1[v_i0, vss_k1_0 * 64 + vss_k1_1] * x_1[v_i0, vss_k1_0 * 64 + vss_k1_1]\n
// CHECK-SAME:      for ax0 in T.vectorized(16):\n
// CHECK-SAME:      ss_rf_1[vss_k1_1_1, v_i0, v_i1] = ss_rf_1[vss_k1_1_1, v_i0, v_i1] + ss_rf[vss_k1_1_0 * 16 + vss_k1_1_1, v_i0, v_i1]\n
// CHECK-SAME:      ss[v_i0, v_i1] = ss[v_i0, v_i1] + ss_rf_1[vss_k1_1_1, v_i0, v_i1]\n
// CHECK-SAME:      ms[v_i0, v_i1] = ss[v_i0, v_i1] / T.float32(256.0)\n
// CHECK-SAME:      T.rsqrt(
// CHECK-SAME:      for i1_1 in T.vectorized(16):\n
// CHECK-SAME:      y_1[v_i0, v_i1] = x_1[v_i0, v_i1] * r[v_i0, 0] * g_1[v_i1]
// CHECK-NEXT:    func.return(%y)

module @test_rms_norm {
  func.func @main(%x: tensor<Nx256xf32>, %g: tensor<256xf32>) -> (tensor<Nx256xf32>) {
    %y = fusion.group(%x, %g) ({
    ^bb0(%x_1: tensor<Nx256xf32>, %g_1: tensor<256xf32>):
      %n = builtin.constant() {value = dense<256.0> : tensor<f32>} : () -> tensor<f32>
      %eps = builtin.constant() {value = dense<1e-05> : tensor<f32>} : () -> tensor<f32>
      %sq = prim.mul(%x_1, %x_1) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %ss = prim.reduce_sum(%sq) {axes = [1], keepdims = true} : (tensor<Nx256xf32>) -> tensor<Nx1xf32>
      %nb = prim.broadcast_in_dim(%n) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Nx1xf32>
      %ms = prim.div(%ss, %nb) : (tensor<Nx1xf32>, tensor<Nx1xf32>) -> tensor<Nx1xf32>
      %eb = prim.broadcast_in_dim(%eps) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Nx1xf32>
      %me = prim.add(%ms, %eb) : (tensor<Nx1xf32>, tensor<Nx1xf32>) -> tensor<Nx1xf32>
      %r = prim.rsqrt(%me) : (tensor<Nx1xf32>) -> tensor<Nx1xf32>
      %rb = prim.broadcast_in_dim(%r) {broadcast_dimensions = [0, 1]} : (tensor<Nx1xf32>) -> tensor<Nx256xf32>
      %xn = prim.mul(%x_1, %rb) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %gb = prim.broadcast_in_dim(%g_1) {broadcast_dimensions = [1]} : (tensor<256xf32>) -> tensor<Nx256xf32>
      %y_1 = prim.mul(%xn, %gb) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      fusion.yield(%y_1) : (tensor<Nx256xf32>) -> ()
    }) {kind = "reduction"} : (tensor<Nx256xf32>, tensor<256xf32>) -> tensor<Nx256xf32>
    func.return(%y) : (tensor<Nx256xf32>) -> ()
  }
}
