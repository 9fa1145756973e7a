// RUN: d=$(mktemp -d) && pir codegen %s --target cuda --emit-sources $d -o $d/out.pir && filecheck %s < $d/k_y.cu && rm -r $d
// RUN: pir codegen %s --target cuda | filecheck %s --check-prefix=IR
// An elementwise group (bias add, then GELU in erf form) becomes one CUDA kernel: a
// grid-stride loop over float4 vectors of x (one 16-byte load for 4 lanes), the bias read by
// one 16-byte load per 4 lanes (its index is the lane's column), every op inlined with the
// splat constants as literals, one 16-byte store; then a scalar loop for the tail.

// CHECK:      // pir kernel k_y: pointwise, 256 threads, 4-wide vector loads and stores
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(256) k_y(
// CHECK-NEXT:     const float* __restrict__ in0,
// CHECK-NEXT:     const float* __restrict__ in1,
// CHECK-NEXT:     float* __restrict__ out0,
// CHECK-NEXT:     long long d_N) {
// CHECK:        for (long long vi = gtid; vi < [[NV:nv[0-9]+]]; vi += gstride) {
// CHECK-NEXT:     const long long b = vi * 4;
// CHECK-NEXT:     alignas(16) float r_in0[4];
// CHECK-NEXT:     reinterpret_cast<uint4*>(r_in0)[0] = reinterpret_cast<const uint4*>(in0 + b)[0];
// CHECK:          reinterpret_cast<uint4*>(w_in1_0)[0] = reinterpret_cast<const uint4*>(in1 + [[COL:i[0-9]+]])[0];
// CHECK:          const float [[X:v[0-9]+]] = r_in0[0];
// CHECK-NEXT:     const float [[B:v[0-9]+]] = w_in1_0[0];
// CHECK-NEXT:     const float [[H:v[0-9]+]] = ([[X]] + [[B]]);
// CHECK:          erff(
// CHECK:          o0[3] =
// CHECK-NEXT:   }
// CHECK-NEXT:   reinterpret_cast<uint4*>(out0 + b)[0] = reinterpret_cast<const uint4*>(o0)[0];
// CHECK-NEXT: }
// CHECK-NEXT: for (long long i = [[NV]] * 4 + gtid; i < {{n[0-9]+}}; i += gstride) {
// CHECK:        out0[i] =
// CHECK-NOT:  in0[
// CHECK:      }

// IR:      %y = kernel.cuda(%x, %b) ({
// IR:      }) {kind = "elementwise", symbol = "k_y", source = "// pir kernel k_y:
// IR-SAME: arch = "sm_90", generator = "native", grid = "min(cdiv({N} * 256, 1024), 8192)", block = [256, 1, 1], shared_mem = 0, args = ["in:0", "in:1", "out:0", "dim:N:i64"], pir.name = "y"}

module @test_gelu {
  func.func @main(%x: tensor<Nx256xf32>, %b: tensor<256xf32>) -> (tensor<Nx256xf32>) {
    %y = fusion.group(%x, %b) ({
    ^bb0(%x_1: tensor<Nx256xf32>, %b_1: tensor<256xf32>):
      %bb = prim.broadcast_in_dim(%b_1) {broadcast_dimensions = [1]} : (tensor<256xf32>) -> tensor<Nx256xf32>
      %h = prim.add(%x_1, %bb) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %c = builtin.constant() {value = dense<0.70710677> : tensor<f32>} : () -> tensor<f32>
      %cb = prim.broadcast_in_dim(%c) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Nx256xf32>
      %s = prim.mul(%h, %cb) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %e = prim.erf(%s) : (tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %half = builtin.constant() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
      %halfb = prim.broadcast_in_dim(%half) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Nx256xf32>
      %hh = prim.mul(%halfb, %h) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %one = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
      %oneb = prim.broadcast_in_dim(%one) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Nx256xf32>
      %p = prim.add(%oneb, %e) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %y_1 = prim.mul(%hh, %p) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      fusion.yield(%y_1) : (tensor<Nx256xf32>) -> ()
    }) {kind = "elementwise"} : (tensor<Nx256xf32>, tensor<256xf32>) -> tensor<Nx256xf32>
    func.return(%y) : (tensor<Nx256xf32>) -> ()
  }
}
