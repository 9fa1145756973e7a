// RUN: pir optimize %s -p fuse | filecheck %s
// RUN: pir optimize %s -p fuse | pir verify -
// Softmax after decomposition: the two reductions (max, sum) over the same axis of the
// same input and every op around them, broadcasts back included, form ONE group.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %y = fusion.group(%x) ({
// CHECK-NEXT:    ^bb0(%x_1: tensor<2x8xf32>):
// CHECK-NEXT:      prim.reduce_max(%x_1)
// CHECK-NEXT:      prim.broadcast_in_dim
// CHECK-NEXT:      prim.sub
// CHECK-NEXT:      prim.exp
// CHECK-NEXT:      prim.reduce_sum
// CHECK-NEXT:      prim.broadcast_in_dim
// CHECK-NEXT:      %y_1 = prim.div
// CHECK-NEXT:      fusion.yield(%y_1)
// CHECK-NEXT:    }) {kind = "reduction"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    func.return(%y)

module @test_softmax attributes {pir.source = "<model>"} {
  func.func @main(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>) {
    %y.1 = prim.reduce_max(%x) {axes = [1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/softmax")
    %y.2 = prim.broadcast_in_dim(%y.1) {broadcast_dimensions = [0, 1]} : (tensor<2x1xf32>) -> tensor<2x8xf32> loc("/softmax")
    %y.3 = prim.sub(%x, %y.2) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/softmax")
    %y.4 = prim.exp(%y.3) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/softmax")
    %y.5 = prim.reduce_sum(%y.4) {axes = [1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/softmax")
    %y.6 = prim.broadcast_in_dim(%y.5) {broadcast_dimensions = [0, 1]} : (tensor<2x1xf32>) -> tensor<2x8xf32> loc("/softmax")
    %y = prim.div(%y.4, %y.6) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/softmax")
    func.return(%y) : (tensor<2x8xf32>) -> ()
  }
}
