// RUN: d=$(mktemp -d) && pir codegen %s --target cuda --emit-sources $d -o $d/out.pir && filecheck %s < $d/k_y.cu && rm -r $d
// An rms_norm group on rows of 4096 float32: a block of 256 threads per row; each thread
// loads its 16 elements of x once, as 4 float4 loads into registers (c_in0), squares and sums
// them, the warps reduce by shuffles and then through shared memory, and the output pass
// reads x from those registers again: x is read from memory once.  The weight is read by
// 16-byte loads along the row.

// CHECK:      // pir kernel k_y: row reduction, a block of 256 per row, 4-wide vector loads, row kept in registers (input read once)
// CHECK:        const long long row = blockIdx.x;
// CHECK:        alignas(16) float c_in0[16];
// CHECK:        for (int it = 0; it < 4; ++it) {
// CHECK:          reinterpret_cast<uint4*>(c_in0 + it * 4)[0] = reinterpret_cast<const uint4*>(in0 + {{jb[0-9]+}})[0];
// CHECK:          const float [[X:v[0-9]+]] = c_in0[it * 4 + 0];
// CHECK-NEXT:     const float [[SQ:v[0-9]+]] = ([[X]] * [[X]]);
// CHECK-NEXT:     [[ACC:acc[0-9]+]] = ([[ACC]] + [[SQ]]);
// CHECK:        __shfl_xor_sync(0xffffffffu, [[ACC]], o);
// CHECK:        __shared__ float [[RED:red[0-9]+]][32];
// CHECK:        __syncthreads();
// CHECK:        for (int it = 0; it < 4; ++it) {
// CHECK-NOT:      {{[^_]in0}}
// CHECK:          reinterpret_cast<uint4*>(w_in3_0)[0] = reinterpret_cast<const uint4*>(in3 + j0)[0];
// CHECK-NOT:      {{[^_]in0}}
// CHECK:          c_in0[it * 4 + 0];
// CHECK:          rsqrtf(
// CHECK-NOT:      {{[^_]in0}}
// CHECK:          reinterpret_cast<uint4*>(out0 + {{jb[0-9]+}})[0] = reinterpret_cast<const uint4*>(o0)[0];
// CHECK-NOT:  {{[^_]in0}}

module @rms {
  func.func @main(%x: tensor<Nx4096xf32>, %w: tensor<4096xf32>) -> (tensor<Nx4096xf32>) {
    %y.3 = builtin.constant() {value = dense<4096.0> : tensor<f32>} : () -> tensor<f32>
    %y.6 = builtin.constant() {value = dense<1e-06> : tensor<f32>} : () -> tensor<f32>
    %y = fusion.group(%x, %y.3, %y.6, %w) ({
    ^bb0(%x_1: tensor<Nx4096xf32>, %y.3_1: tensor<f32>, %y.6_1: tensor<f32>, %w_1: tensor<4096xf32>):
      %y.1 = prim.mul(%x_1, %x_1) : (tensor<Nx4096xf32>, tensor<Nx4096xf32>) -> tensor<Nx4096xf32>
      %y.2 = prim.reduce_sum(%y.1) {axes = [1], keepdims = true} : (tensor<Nx4096xf32>) -> tensor<Nx1xf32>
      %y.4 = prim.broadcast_in_dim(%y.3_1) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Nx1xf32>
      %y.5 = prim.div(%y.2, %y.4) : (tensor<Nx1xf32>, tensor<Nx1xf32>) -> tensor<Nx1xf32>
      %y.7 = prim.broadcast_in_dim(%y.6_1) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Nx1xf32>
      %y.8 = prim.add(%y.5, %y.7) : (tensor<Nx1xf32>, tensor<Nx1xf32>) -> tensor<Nx1xf32>
      %y.9 = prim.rsqrt(%y.8) : (tensor<Nx1xf32>) -> tensor<Nx1xf32>
      %y.10 = prim.broadcast_in_dim(%y.9) {broadcast_dimensions = [0, 1]} : (tensor<Nx1xf32>) -> tensor<Nx4096xf32>
      %y.11 = prim.mul(%x_1, %y.10) : (tensor<Nx4096xf32>, tensor<Nx4096xf32>) -> tensor<Nx4096xf32>
      %y.12 = prim.broadcast_in_dim(%w_1) {broadcast_dimensions = [1]} : (tensor<4096xf32>) -> tensor<Nx4096xf32>
      %y_1 = prim.mul(%y.11, %y.12) : (tensor<Nx4096xf32>, tensor<Nx4096xf32>) -> tensor<Nx4096xf32>
      fusion.yield(%y_1) : (tensor<Nx4096xf32>) -> ()
    }) {kind = "reduction"} : (tensor<Nx4096xf32>, tensor<f32>, tensor<f32>, tensor<4096xf32>) -> tensor<Nx4096xf32>
    func.return(%y) : (tensor<Nx4096xf32>) -> ()
  }
}
