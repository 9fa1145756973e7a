// RUN: pir optimize %s -p fuse | filecheck %s
// RUN: pir optimize %s -p fuse | pir verify -
// RMSNormalization: one reduction, the rsqrt on the reduced values, the broadcast back, the
// division and the scale: ONE group.

// CHECK-LABEL: func.func @main(
// CHECK:         %y = fusion.group(%x) ({
// CHECK:           prim.mul(%x_1, %x_1)
// CHECK-NEXT:      prim.reduce_sum
// CHECK:           prim.sqrt
// CHECK:           fusion.yield(%y_1)
// CHECK-NEXT:    }) {kind = "reduction"}
// CHECK-NEXT:    func.return(%y)

module @test_rmsnormalization attributes {pir.source = "<model>"} {
  func.func @main(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>) {
    %g = builtin.constant() {value = dense<[-0.544259, -0.31630015, 0.41163054, 1.0425134, -0.12853466, 1.3664634, -0.6651947, 0.35151008]> : tensor<8xf32>} : () -> tensor<8xf32> loc("g")
    %y.1 = prim.mul(%x, %x) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/rmsnormalization")
    %y.2 = prim.reduce_sum(%y.1) {axes = [1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/rmsnormalization")
    %y.3 = builtin.constant() {value = dense<8.0> : tensor<f32>} : () -> tensor<f32> loc("/rmsnormalization")
    %y.4 = prim.broadcast_in_dim(%y.3) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<2x1xf32> loc("/rmsnormalization")
    %y.5 = prim.div(%y.2, %y.4) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32> loc("/rmsnormalization")
    %y.6 = builtin.constant() {value = dense<1e-05> : tensor<f32>} : () -> tensor<f32> loc("/rmsnormalization")
    %y.7 = prim.broadcast_in_dim(%y.6) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<2x1xf32> loc("/rmsnormalization")
    %y.8 = prim.add(%y.5, %y.7) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32> loc("/rmsnormalization")
    %y.9 = prim.sqrt(%y.8) : (tensor<2x1xf32>) -> tensor<2x1xf32> loc("/rmsnormalization")
    %y.10 = prim.broadcast_in_dim(%y.9) {broadcast_dimensions = [0, 1]} : (tensor<2x1xf32>) -> tensor<2x8xf32> loc("/rmsnormalization")
    %y.11 = prim.div(%x, %y.10) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/rmsnormalization")
    %y.12 = prim.broadcast_in_dim(%g) {broadcast_dimensions = [1]} : (tensor<8xf32>) -> tensor<2x8xf32> loc("/rmsnormalization")
    %y = prim.mul(%y.11, %y.12) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/rmsnormalization")
    func.return(%y) : (tensor<2x8xf32>) -> ()
  }
}
