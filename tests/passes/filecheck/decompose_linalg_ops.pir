// RUN: pir optimize %s -p decompose | filecheck %s
// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=NONN
// Matrix products are one prim.dot_general each: weights contract in place ([B, S, 4] x
// [4, 5]), a 2-D left operand against a batch is a dot and a transpose, only batch dims that
// differ are broadcast, gemm's transposes are just its contracting dims, and einsum takes a
// diagonal with an iota compare.

// NONN-NOT: = nn.

// CHECK:      %y = prim.dot_general(%x, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]} : (tensor<BxSx4xf32>, tensor<4x5xf32>) -> tensor<BxSx5xf32> loc("/matmul")
// CHECK-NEXT: %left.1 = prim.dot_general(%m, %bw) {{.*}}lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]} : (tensor<3x4xf32>, tensor<Bx4x5xf32>) -> tensor<3xBx5xf32>
// CHECK-NEXT: %left = prim.transpose(%left.1) {permutation = [1, 0, 2]} : (tensor<3xBx5xf32>) -> tensor<Bx3x5xf32>
// CHECK-NEXT: %bc.1 = prim.broadcast_in_dim(%p) {broadcast_dimensions = [0, 1, 2, 3]} : (tensor<2x1x3x4xf32>) -> tensor<2x6x3x4xf32>
// CHECK-NEXT: %bc.2 = prim.broadcast_in_dim(%r) {broadcast_dimensions = [1, 2, 3]} : (tensor<6x4x2xf32>) -> tensor<2x6x4x2xf32>
// CHECK-NEXT: %bc = prim.dot_general(%bc.1, %bc.2) {lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2]}

// CHECK-NEXT: %g.1 = prim.dot_general(%a, %b) {{.*}}lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [1]} : (tensor<5x3xf32>, tensor<4x5xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %g.2 = builtin.constant() {value = dense<0.5> : tensor<f32>}
// CHECK:      %g.4 = prim.mul(%g.1, %g.3)
// CHECK-NEXT: %g.5 = builtin.constant() {value = dense<2.0> : tensor<f32>}
// CHECK:      %g.7 = prim.mul(%c, %g.6) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %g.8 = prim.broadcast_in_dim(%g.7) {broadcast_dimensions = [1]} : (tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %g = prim.add(%g.4, %g.8)

// CHECK-NEXT: %diag.1 = prim.iota() {dimension = 0} : () -> tensor<4x4xi64>
// CHECK-NEXT: %diag.2 = prim.iota() {dimension = 1} : () -> tensor<4x4xi64>
// CHECK-NEXT: %diag.3 = prim.eq(%diag.1, %diag.2)
// CHECK:      %diag.6 = prim.select(%diag.3, %d, %diag.5)
// CHECK-NEXT: %diag = prim.reduce_sum(%diag.6) {axes = [1], keepdims = false} : (tensor<4x4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %e = prim.dot_general(%x, %d) {{.*}}lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]} : (tensor<BxSx4xf32>, tensor<4x4xf32>) -> tensor<BxSx4xf32>
module {
  func.func @main(%x: tensor<BxSx4xf32>, %w: tensor<4x5xf32>, %m: tensor<3x4xf32>, %bw: tensor<Bx4x5xf32>, %p: tensor<2x1x3x4xf32>, %r: tensor<6x4x2xf32>, %a: tensor<5x3xf32>, %b: tensor<4x5xf32>, %c: tensor<4xf32>, %d: tensor<4x4xf32>) -> (tensor<BxSx5xf32>, tensor<Bx3x5xf32>, tensor<2x6x3x2xf32>, tensor<3x4xf32>, tensor<4xf32>, tensor<BxSx4xf32>) {
    %y = nn.matmul(%x, %w) : (tensor<BxSx4xf32>, tensor<4x5xf32>) -> tensor<BxSx5xf32> loc("/matmul")
    %left = nn.matmul(%m, %bw) : (tensor<3x4xf32>, tensor<Bx4x5xf32>) -> tensor<Bx3x5xf32>
    %bc = nn.matmul(%p, %r) : (tensor<2x1x3x4xf32>, tensor<6x4x2xf32>) -> tensor<2x6x3x2xf32>
    %g = nn.gemm(%a, %b, %c) {alpha = 0.5, beta = 2.0, trans_a = true, trans_b = true} : (tensor<5x3xf32>, tensor<4x5xf32>, tensor<4xf32>) -> tensor<3x4xf32> loc("/gemm")
    %diag = nn.einsum(%d) {equation = "ii->i"} : (tensor<4x4xf32>) -> tensor<4xf32>
    %e = nn.einsum(%x, %d) {equation = "bsi,ij->bsj"} : (tensor<BxSx4xf32>, tensor<4x4xf32>) -> tensor<BxSx4xf32>
    func.return(%y, %left, %bc, %g, %diag, %e) : (tensor<BxSx5xf32>, tensor<Bx3x5xf32>, tensor<2x6x3x2xf32>, tensor<3x4xf32>, tensor<4xf32>, tensor<BxSx4xf32>) -> ()
  }
}
