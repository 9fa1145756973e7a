// RUN: pir codegen %s --target 'llvm -mcpu=skylake-avx512 -num-cores=4' | filecheck %s
// RUN: pir codegen %s --target 'llvm -mcpu=skylake-avx512 -num-cores=4' | pir verify -
// An elementwise group (bias add, then GELU in erf form, as `decompose` writes it) becomes
// one kernel.tvm whose TIR is one loop nest: the rows run in parallel, the 256 columns are
// split into 16 chunks of 16 float32 lanes (one AVX-512 vector), vectorised; every op is
// inlined into one block that reads x and the bias (per column) and stores y once, and the
// splat constants are immediates, not kernel parameters.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %y = kernel.tvm(%x, %b) ({
// CHECK-NEXT:    ^bb0(%x_1: tensor<Nx256xf32>, %b_1: tensor<256xf32>):
// CHECK:           fusion.yield(%y_1)
// CHECK-NEXT:    }) {kind = "elementwise", symbol = "y",
// CHECK-SAME:      source = "{{.*}}def y(x_1: T.Buffer((\"N\", 256), \"float32\"), b_1: T.Buffer((256,), \"float32\"), y_1: T.Buffer((N, 256), \"float32\")):
// CHECK-SAME:      for i0 in T.parallel(N):\n
// CHECK-SAME:      for i1_0 in range(16):\n
// CHECK-SAME:      for i1_1 in T.vectorized(16):\n
// CHECK-SAME:      with T.sblock(\"y_1\"):\n
// CHECK-SAME:      T.reads(x_1[v_i0, v_i1], b_1[v_i1])\n
// CHECK-SAME:      T.writes(y_1[v_i0, v_i1])\n
// the one store: 0.5 * h * (1 + erf(h * 0.70710677)), h = x + b, erf as TVM's rational form
// CHECK-SAME:      y_1[v_i0, v_i1] = T.float32(0.5) * (x_1[v_i0, v_i1] + b_1[v_i1]) * (T.float32(1.0) +
// CHECK-SAME:      (x_1[v_i0, v_i1] + b_1[v_i1]) * T.float32(0.70710676908493042)
// CHECK-SAME:      target = "llvm -mcpu=skylake-avx512 -num-cores=4", pir.name = "y"} : (tensor<Nx256xf32>, tensor<256xf32>) -> tensor<Nx256xf32>
// CHECK-NEXT:    func.return(%y)

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
