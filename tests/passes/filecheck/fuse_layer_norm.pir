// RUN: pir optimize %s -p fuse | filecheck %s
// RUN: pir optimize %s -p fuse | pir verify -
// LayerNormalization: mean and variance (two reduce_sum over axis 1 of a 2x8 input), the
// normalisation, scale and shift: ONE group; the constants (the count, epsilon, and the
// 8 scales and shifts) are tiny, so the group holds copies of them and reads only x.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %y = fusion.group(%x) ({
// CHECK-NEXT:    ^bb0(%x_1: tensor<2x8xf32>):
// CHECK-COUNT-4:   builtin.constant()
// CHECK:           prim.reduce_sum(%x_1)
// CHECK:           prim.reduce_sum
// CHECK:           fusion.yield(%y_1)
// CHECK-NEXT:    }) {kind = "reduction"}
// CHECK-NEXT:    func.return(%y)
// CHECK-NOT:   fusion.group

module @test_layernormalization attributes {pir.source = "<model>"} {
  func.func @main(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>) {
    %g = builtin.constant() {value = dense<[-0.544259, -0.31630015, 0.41163054, 1.0425134, -0.12853466, 1.3664634, -0.6651947, 0.35151008]> : tensor<8xf32>} : () -> tensor<8xf32> loc("g")
    %b = builtin.constant() {value = dense<[0.90347016, 0.0940123, -0.7434993, -0.9217254, -0.45772582, 0.22019513, -1.0096182, -0.20917557]> : tensor<8xf32>} : () -> tensor<8xf32> loc("b")
    %y.1 = builtin.constant() {value = dense<8.0> : tensor<f32>} : () -> tensor<f32> loc("/layernormalization")
    %y.2 = prim.reduce_sum(%x) {axes = [1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/layernormalization")
    %y.3 = prim.broadcast_in_dim(%y.1) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<2x1xf32> loc("/layernormalization")
    %y.4 = prim.div(%y.2, %y.3) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32> loc("/layernormalization")
    %y.5 = prim.broadcast_in_dim(%y.4) {broadcast_dimensions = [0, 1]} : (tensor<2x1xf32>) -> tensor<2x8xf32> loc("/layernormalization")
    %y.6 = prim.sub(%x, %y.5) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/layernormalization")
    %y.7 = prim.mul(%y.6, %y.6) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/layernormalization")
    %y.8 = prim.reduce_sum(%y.7) {axes = [1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/layernormalization")
    %y.10 = prim.div(%y.8, %y.3) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32> loc("/layernormalization")
    %y.11 = builtin.constant() {value = dense<1e-05> : tensor<f32>} : () -> tensor<f32> loc("/layernormalization")
    %y.12 = prim.broadcast_in_dim(%y.11) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<2x1xf32> loc("/layernormalization")
    %y.13 = prim.add(%y.10, %y.12) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32> loc("/layernormalization")
    %y.14 = prim.rsqrt(%y.13) : (tensor<2x1xf32>) -> tensor<2x1xf32> loc("/layernormalization")
    %y.15 = prim.broadcast_in_dim(%y.14) {broadcast_dimensions = [0, 1]} : (tensor<2x1xf32>) -> tensor<2x8xf32> loc("/layernormalization")
    %y.16 = prim.mul(%y.6, %y.15) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/layernormalization")
    %y.17 = prim.broadcast_in_dim(%g) {broadcast_dimensions = [1]} : (tensor<8xf32>) -> tensor<2x8xf32> loc("/layernormalization")
    %y.18 = prim.mul(%y.16, %y.17) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/layernormalization")
    %y.19 = prim.broadcast_in_dim(%b) {broadcast_dimensions = [1]} : (tensor<8xf32>) -> tensor<2x8xf32> loc("/layernormalization")
    %y = prim.add(%y.18, %y.19) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/layernormalization")
    func.return(%y) : (tensor<2x8xf32>) -> ()
  }
}
