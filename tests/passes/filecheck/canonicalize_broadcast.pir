// RUN: pir optimize %s -p canonicalize | filecheck %s
// A pad or a product of a broadcast value is computed on the value itself, then broadcast
// (reverse mode's seeds: every row the same).  Each function has one; the test runs each
// before and after on random inputs too.

module {
  // The pad touches dim 1 only: dim 0, which the broadcast makes, is added after it.
  // CHECK-LABEL: func.func @pad_of_broadcast(
  // CHECK-NEXT:    %p.1 = prim.broadcast_in_dim(%s) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<1xf32>
  // CHECK-NEXT:    %p.2 = prim.pad(%p.1, %z) {edge_padding_low = [0], edge_padding_high = [1]} : (tensor<1xf32>, tensor<f32>) -> tensor<2xf32>
  // CHECK-NEXT:    %p = prim.broadcast_in_dim(%p.2) {broadcast_dimensions = [1]} : (tensor<2xf32>) -> tensor<4x2xf32>
  func.func @pad_of_broadcast(%s: tensor<f32>, %z: tensor<f32>) -> (tensor<4x2xf32>) {
    %b = prim.broadcast_in_dim(%s) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<4x1xf32>
    %p = prim.pad(%b, %z) {edge_padding_low = [0, 0], edge_padding_high = [0, 1]} : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x2xf32>
    func.return(%p) : (tensor<4x2xf32>) -> ()
  }
  // A pad of the dim the broadcast makes stays as it is.
  // CHECK-LABEL: func.func @pad_of_made_dim(
  // CHECK-NEXT:    %b = prim.broadcast_in_dim(%v)
  // CHECK-NEXT:    %p = prim.pad(%b, %z)
  func.func @pad_of_made_dim(%v: tensor<3xf32>, %z: tensor<f32>) -> (tensor<5x3xf32>) {
    %b = prim.broadcast_in_dim(%v) {broadcast_dimensions = [1]} : (tensor<3xf32>) -> tensor<4x3xf32>
    %p = prim.pad(%b, %z) {edge_padding_low = [1, 0], edge_padding_high = [0, 0]} : (tensor<4x3xf32>, tensor<f32>) -> tensor<5x3xf32>
    func.return(%p) : (tensor<5x3xf32>) -> ()
  }
  // [4, 2] rows all v, times w: v times w, broadcast to 4 rows.
  // CHECK-LABEL: func.func @dot_of_broadcast_lhs(
  // CHECK-NEXT:    %d.1 = prim.dot_general(%v, %w) {lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]} : (tensor<2xf32>, tensor<2x5xf32>) -> tensor<5xf32>
  // CHECK-NEXT:    %d = prim.broadcast_in_dim(%d.1) {broadcast_dimensions = [1]} : (tensor<5xf32>) -> tensor<4x5xf32>
  func.func @dot_of_broadcast_lhs(%v: tensor<2xf32>, %w: tensor<2x5xf32>) -> (tensor<4x5xf32>) {
    %b = prim.broadcast_in_dim(%v) {broadcast_dimensions = [1]} : (tensor<2xf32>) -> tensor<4x2xf32>
    %d = prim.dot_general(%b, %w) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x2xf32>, tensor<2x5xf32>) -> tensor<4x5xf32>
    func.return(%d) : (tensor<4x5xf32>) -> ()
  }
  // The right operand a broadcast of a scalar ([5, 1] of ones, contracted on its dim 1).
  // CHECK-LABEL: func.func @dot_of_broadcast_rhs(
  // CHECK-NEXT:    %d.1 = prim.broadcast_in_dim(%s) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<1xf32>
  // CHECK-NEXT:    %d.2 = prim.dot_general(%x, %d.1) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<Nx1xf32>, tensor<1xf32>) -> tensor<Nxf32>
  // CHECK-NEXT:    %d = prim.broadcast_in_dim(%d.2) {broadcast_dimensions = [0]} : (tensor<Nxf32>) -> tensor<Nx5xf32>
  func.func @dot_of_broadcast_rhs(%x: tensor<Nx1xf32>, %s: tensor<f32>) -> (tensor<Nx5xf32>) {
    %b = prim.broadcast_in_dim(%s) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<5x1xf32>
    %d = prim.dot_general(%x, %b) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]} : (tensor<Nx1xf32>, tensor<5x1xf32>) -> tensor<Nx5xf32>
    func.return(%d) : (tensor<Nx5xf32>) -> ()
  }
  // A broadcast along a contracted dim only (no free dim made by it) stays.
  // CHECK-LABEL: func.func @dot_of_row_broadcast(
  // CHECK-NEXT:    %b = prim.broadcast_in_dim(%v)
  // CHECK-NEXT:    %d = prim.dot_general(%b, %w)
  func.func @dot_of_row_broadcast(%v: tensor<4xf32>, %w: tensor<3x5xf32>) -> (tensor<4x5xf32>) {
    %b = prim.broadcast_in_dim(%v) {broadcast_dimensions = [0]} : (tensor<4xf32>) -> tensor<4x3xf32>
    %d = prim.dot_general(%b, %w) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    func.return(%d) : (tensor<4x5xf32>) -> ()
  }
  // A scale per contracted element moves onto the smaller operand (the weights).
  // CHECK-LABEL: func.func @dot_of_scaled(
  // CHECK-NEXT:    %d.1 = prim.broadcast_in_dim(%v) {broadcast_dimensions = [0]} : (tensor<3xf32>) -> tensor<3x5xf32>
  // CHECK-NEXT:    %d.2 = prim.mul(%w, %d.1)
  // CHECK-NEXT:    %d = prim.dot_general(%x, %d.2) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<Nx3xf32>, tensor<3x5xf32>) -> tensor<Nx5xf32>
  func.func @dot_of_scaled(%x: tensor<Nx3xf32>, %v: tensor<3xf32>, %w: tensor<3x5xf32>) -> (tensor<Nx5xf32>) {
    %b = prim.broadcast_in_dim(%v) {broadcast_dimensions = [1]} : (tensor<3xf32>) -> tensor<Nx3xf32>
    %s = prim.mul(%x, %b) : (tensor<Nx3xf32>, tensor<Nx3xf32>) -> tensor<Nx3xf32>
    %d = prim.dot_general(%s, %w) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<Nx3xf32>, tensor<3x5xf32>) -> tensor<Nx5xf32>
    func.return(%d) : (tensor<Nx5xf32>) -> ()
  }
  // A scale per row (a free dim) stays, and so does one onto a larger operand.
  // CHECK-LABEL: func.func @dot_of_row_scaled(
  // CHECK-NEXT:    %b = prim.broadcast_in_dim(%v)
  // CHECK-NEXT:    %s = prim.mul(%x, %b)
  // CHECK-NEXT:    %d = prim.dot_general(%s, %w)
  // CHECK-NEXT:    %b2 = prim.broadcast_in_dim(%u)
  // CHECK-NEXT:    %s2 = prim.mul(%w2, %b2)
  // CHECK-NEXT:    %d2 = prim.dot_general(%x2, %s2)
  func.func @dot_of_row_scaled(%x: tensor<4x3xf32>, %v: tensor<4xf32>, %w: tensor<3x5xf32>, %x2: tensor<Nx3xf32>, %w2: tensor<3x5xf32>, %u: tensor<3xf32>) -> (tensor<4x5xf32>, tensor<Nx5xf32>) {
    %b = prim.broadcast_in_dim(%v) {broadcast_dimensions = [0]} : (tensor<4xf32>) -> tensor<4x3xf32>
    %s = prim.mul(%x, %b) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %d = prim.dot_general(%s, %w) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %b2 = prim.broadcast_in_dim(%u) {broadcast_dimensions = [0]} : (tensor<3xf32>) -> tensor<3x5xf32>
    %s2 = prim.mul(%w2, %b2) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    %d2 = prim.dot_general(%x2, %s2) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<Nx3xf32>, tensor<3x5xf32>) -> tensor<Nx5xf32>
    func.return(%d, %d2) : (tensor<4x5xf32>, tensor<Nx5xf32>) -> ()
  }
  // Every operand a broadcast that makes dim 0: the concat is built on one row, then
  // broadcast (forward mode's seed of [x, y], rows [1, 0]).
  // CHECK-LABEL: func.func @concat_of_broadcasts(
  // CHECK-NEXT:    %c.1 = prim.broadcast_in_dim(%s) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<1xf32>
  // CHECK-NEXT:    %c.2 = prim.concat(%c.1, %v) {dimension = 0} : (tensor<1xf32>, tensor<2xf32>) -> tensor<3xf32>
  // CHECK-NEXT:    %c = prim.broadcast_in_dim(%c.2) {broadcast_dimensions = [1]} : (tensor<3xf32>) -> tensor<4x3xf32>
  func.func @concat_of_broadcasts(%s: tensor<f32>, %v: tensor<2xf32>) -> (tensor<4x3xf32>) {
    %a = prim.broadcast_in_dim(%s) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<4x1xf32>
    %b = prim.broadcast_in_dim(%v) {broadcast_dimensions = [1]} : (tensor<2xf32>) -> tensor<4x2xf32>
    %c = prim.concat(%a, %b) {dimension = 1} : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x3xf32>
    func.return(%c) : (tensor<4x3xf32>) -> ()
  }
  // An operand that is not a broadcast, or no dim made by every operand: the concat stays.
  // CHECK-LABEL: func.func @concat_of_some_broadcasts(
  // CHECK-NEXT:    %a = prim.broadcast_in_dim(%s)
  // CHECK-NEXT:    %c = prim.concat(%a, %x)
  // CHECK-NEXT:    %b = prim.broadcast_in_dim(%u)
  // CHECK-NEXT:    %c2 = prim.concat(%a, %b)
  func.func @concat_of_some_broadcasts(%s: tensor<f32>, %x: tensor<4x1xf32>, %u: tensor<4xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
    %a = prim.broadcast_in_dim(%s) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<4x1xf32>
    %c = prim.concat(%a, %x) {dimension = 1} : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
    %b = prim.broadcast_in_dim(%u) {broadcast_dimensions = [0]} : (tensor<4xf32>) -> tensor<4x1xf32>
    %c2 = prim.concat(%a, %b) {dimension = 1} : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
    func.return(%c, %c2) : (tensor<4x2xf32>, tensor<4x2xf32>) -> ()
  }
  // The scaled value has another use: the product reads x all the same (so that a scaled
  // product and an unscaled one of scaled weights, as forward mode makes them, are one
  // product for cse); the scaled value stays for its other use.
  // CHECK-LABEL: func.func @dot_of_scaled_used_twice(
  // CHECK-NEXT:    %b = prim.broadcast_in_dim(%v)
  // CHECK-NEXT:    %s = prim.mul(%x, %b)
  // CHECK-NEXT:    %d.1 = prim.broadcast_in_dim(%v) {broadcast_dimensions = [0]} : (tensor<3xf32>) -> tensor<3x5xf32>
  // CHECK-NEXT:    %d.2 = prim.mul(%w, %d.1)
  // CHECK-NEXT:    %d = prim.dot_general(%x, %d.2)
  func.func @dot_of_scaled_used_twice(%x: tensor<Nx3xf32>, %v: tensor<3xf32>, %w: tensor<3x5xf32>) -> (tensor<Nx5xf32>, tensor<Nx3xf32>) {
    %b = prim.broadcast_in_dim(%v) {broadcast_dimensions = [1]} : (tensor<3xf32>) -> tensor<Nx3xf32>
    %s = prim.mul(%x, %b) : (tensor<Nx3xf32>, tensor<Nx3xf32>) -> tensor<Nx3xf32>
    %d = prim.dot_general(%s, %w) {lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<Nx3xf32>, tensor<3x5xf32>) -> tensor<Nx5xf32>
    func.return(%d, %s) : (tensor<Nx5xf32>, tensor<Nx3xf32>) -> ()
  }
}
