// RUN: pir optimize %s -p fuse | filecheck %s
// RUN: pir optimize %s -p fuse | pir verify -
// Gelu after a matmul with a bias: the matmul stays outside (a library call); the bias add
// and the whole gelu form one elementwise group marked as the matmul's epilogue; the bias
// and the gelu's scalars are tiny constants, copied into the group.

// CHECK-LABEL: func.func @main(
// CHECK:         %mm = prim.dot_general(%x, %w)
// CHECK:         %y = fusion.group(%mm) ({
// CHECK-COUNT-4:   builtin.constant()
// CHECK:           prim.broadcast_in_dim
// CHECK-NEXT:      prim.add
// CHECK:           prim.erf
// CHECK:           fusion.yield(%y_1)
// CHECK-NEXT:    }) {kind = "elementwise", epilogue_of = "mm"}
// CHECK-NEXT:    func.return(%y)

module @gelu_mm attributes {pir.source = "<model>"} {
  func.func @main(%x: tensor<Bx8xf32>) -> (tensor<Bx4xf32>) {
    %w = builtin.constant() {value = resource<"w">} : () -> tensor<8x4xf32> loc("w")
    %bias = builtin.constant() {value = dense<[0.32896963, -0.25857255, 1.5834728, 1.320361]> : tensor<4xf32>} : () -> tensor<4xf32> loc("bias")
    %mm = prim.dot_general(%x, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<Bx8xf32>, tensor<8x4xf32>) -> tensor<Bx4xf32> loc("/mm")
    %h.1 = prim.broadcast_in_dim(%bias) {broadcast_dimensions = [1]} : (tensor<4xf32>) -> tensor<Bx4xf32> loc("/bias")
    %h = prim.add(%mm, %h.1) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/bias")
    %y.1 = builtin.constant() {value = dense<0.70710677> : tensor<f32>} : () -> tensor<f32> loc("/gelu")
    %y.2 = prim.broadcast_in_dim(%y.1) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx4xf32> loc("/gelu")
    %y.3 = prim.mul(%h, %y.2) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/gelu")
    %y.4 = prim.erf(%y.3) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/gelu")
    %y.5 = builtin.constant() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32> loc("/gelu")
    %y.6 = prim.broadcast_in_dim(%y.5) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx4xf32> loc("/gelu")
    %y.7 = prim.mul(%y.6, %h) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/gelu")
    %y.8 = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32> loc("/gelu")
    %y.9 = prim.broadcast_in_dim(%y.8) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx4xf32> loc("/gelu")
    %y.10 = prim.add(%y.9, %y.4) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/gelu")
    %y = prim.mul(%y.7, %y.10) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/gelu")
    func.return(%y) : (tensor<Bx4xf32>) -> ()
  }
}
resources {
  "w": f32[8,4] sha256=8509a895e7889e9de09f183e139f419f30930e30bb314978c403cc2f7362d73d base64"26dDvdQlJj724oM9S1faPS3bSL7sRB+9V9ZwPhpk5T55ZMG+6InoPvq5zj7UBHA+RnuiPcrfwL21898+P4wWP5VdCj/8/8k+FJPbPQaZub7GJK+6SqtJPm/kxb5Uw/I92w0EPgfTVT5q4bW+aEZLvqoSBr58rrO+XZUFPwJYGL4="
}
