// RUN: pir optimize %s -p canonicalize | filecheck %s
// The sum of two products that share an operand is one product of the sum.  The test runs
// each function before and after on random inputs too.

module {
  // A shared rhs (a forward-mode Laplacian: two second derivatives times the last weights).
  // CHECK-LABEL: func.func @add_of_products_rhs(
  // CHECK-NEXT:    %s.1 = prim.add(%a, %b) : (tensor<Nx4xf32>, tensor<Nx4xf32>) -> tensor<Nx4xf32>
  // CHECK-NEXT:    %s = prim.dot_general(%s.1, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<Nx4xf32>, tensor<4x1xf32>) -> tensor<Nx1xf32>
  // CHECK-NEXT:    func.return(%s)
  func.func @add_of_products_rhs(%a: tensor<Nx4xf32>, %b: tensor<Nx4xf32>, %w: tensor<4x1xf32>) -> (tensor<Nx1xf32>) {
    %p = prim.dot_general(%a, %w) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<Nx4xf32>, tensor<4x1xf32>) -> tensor<Nx1xf32>
    %q = prim.dot_general(%b, %w) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<Nx4xf32>, tensor<4x1xf32>) -> tensor<Nx1xf32>
    %s = prim.add(%p, %q) : (tensor<Nx1xf32>, tensor<Nx1xf32>) -> tensor<Nx1xf32>
    func.return(%s) : (tensor<Nx1xf32>) -> ()
  }
  // A shared lhs, batched products.
  // CHECK-LABEL: func.func @add_of_products_lhs(
  // CHECK-NEXT:    %s.1 = prim.add(%u, %v) : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  // CHECK-NEXT:    %s = prim.dot_general(%x, %s.1) {lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]} : (tensor<2x4x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
  func.func @add_of_products_lhs(%x: tensor<2x4x3xf32>, %u: tensor<2x3x5xf32>, %v: tensor<2x3x5xf32>) -> (tensor<2x4x5xf32>) {
    %p = prim.dot_general(%x, %u) {lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]} : (tensor<2x4x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
    %q = prim.dot_general(%x, %v) {lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]} : (tensor<2x4x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
    %s = prim.add(%p, %q) : (tensor<2x4x5xf32>, tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
    func.return(%s) : (tensor<2x4x5xf32>) -> ()
  }
  // A product used elsewhere too, or an operand shared in different places: the sum stays.
  // CHECK-LABEL: func.func @add_of_products_kept(
  // CHECK-NEXT:    %p = prim.dot_general(%a, %w)
  // CHECK-NEXT:    %q = prim.dot_general(%b, %w)
  // CHECK-NEXT:    %s = prim.add(%p, %q)
  // CHECK-NEXT:    %t = prim.dot_general(%a, %w2)
  // CHECK-NEXT:    %t2 = prim.dot_general(%w2, %a)
  // CHECK-NEXT:    %s2 = prim.add(%t, %t2)
  func.func @add_of_products_kept(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %w: tensor<4x4xf32>, %w2: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
    %p = prim.dot_general(%a, %w) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %q = prim.dot_general(%b, %w) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %s = prim.add(%p, %q) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %t = prim.dot_general(%a, %w2) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %t2 = prim.dot_general(%w2, %a) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %s2 = prim.add(%t, %t2) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    func.return(%s, %p, %s2) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> ()
  }
}
