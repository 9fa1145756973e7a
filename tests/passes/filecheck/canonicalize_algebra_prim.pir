// RUN: pir optimize %s -p canonicalize | filecheck %s
// The identities of canonicalize_algebra_nn.pir on prim ops (patterns prim-NAME).  prim ops
// do not broadcast, so a unit is a full constant or a broadcast_in_dim of a scalar one.

module {
  // CHECK-LABEL: func.func @add_zero(
  // CHECK-NEXT:    %r = prim.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @add_zero(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %c = builtin.constant() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %z = prim.broadcast_in_dim(%c) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx3xf32>
    %y = prim.add(%x, %z) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = prim.exp(%y) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @zero_add_sub_zero(
  // CHECK-NEXT:    %r = prim.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @zero_add_sub_zero(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
    %z = builtin.constant() {value = dense<0.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %a = prim.add(%z, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %y = prim.sub(%a, %z) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %r = prim.exp(%y) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return(%r) : (tensor<2x3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @mul_div_pow_one(
  // CHECK-NEXT:    %r = prim.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @mul_div_pow_one(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %c = builtin.constant() {value = dense<1.0> : tensor<3xf32>} : () -> tensor<3xf32>
    %one = prim.broadcast_in_dim(%c) {broadcast_dimensions = [1]} : (tensor<3xf32>) -> tensor<Bx3xf32>
    %a = prim.mul(%x, %one) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %b = prim.mul(%one, %a) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %d = prim.div(%b, %one) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %y = prim.pow(%d, %one) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = prim.exp(%y) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // Integers only; the zero of a symbolic shape is a broadcast scalar.
  // CHECK-LABEL: func.func @mul_by_zero(
  // CHECK-NOT:     prim.mul
  // CHECK:         %z = prim.broadcast_in_dim(
  // CHECK-NEXT:    %r = prim.abs(%z)
  // CHECK-NEXT:    %s = prim.abs(%z)
  func.func @mul_by_zero(%x: tensor<Bx3xi32>) -> (tensor<Bx3xi32>, tensor<Bx3xi32>) {
    %c = builtin.constant() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %z = prim.broadcast_in_dim(%c) {broadcast_dimensions = []} : (tensor<i32>) -> tensor<Bx3xi32>
    %a = prim.mul(%x, %z) : (tensor<Bx3xi32>, tensor<Bx3xi32>) -> tensor<Bx3xi32>
    %b = prim.mul(%z, %x) : (tensor<Bx3xi32>, tensor<Bx3xi32>) -> tensor<Bx3xi32>
    %r = prim.abs(%a) : (tensor<Bx3xi32>) -> tensor<Bx3xi32>
    %s = prim.abs(%b) : (tensor<Bx3xi32>) -> tensor<Bx3xi32>
    func.return(%r, %s) : (tensor<Bx3xi32>, tensor<Bx3xi32>) -> ()
  }
  // CHECK-LABEL: func.func @sub_self(
  // CHECK-NEXT:    %y.zero = builtin.constant() {value = dense<0> : tensor<i64>}
  // CHECK-NEXT:    %y = prim.broadcast_in_dim(%y.zero) {broadcast_dimensions = []} : (tensor<i64>) -> tensor<Bx4xi64>
  // CHECK-NEXT:    %r = prim.abs(%y)
  func.func @sub_self(%x: tensor<Bx4xi64>) -> (tensor<Bx4xi64>) {
    %y = prim.sub(%x, %x) : (tensor<Bx4xi64>, tensor<Bx4xi64>) -> tensor<Bx4xi64>
    %r = prim.abs(%y) : (tensor<Bx4xi64>) -> tensor<Bx4xi64>
    func.return(%r) : (tensor<Bx4xi64>) -> ()
  }
  // select(p, p, p) stays: its result is an output and p an input, which it would rename.
  // CHECK-LABEL: func.func @self_ops(
  // CHECK-NEXT:    %r = prim.add(%x, %x)
  // CHECK-NEXT:    %s = prim.select(%p, %p, %p)
  // CHECK-NEXT:    func.return(%r, %s)
  func.func @self_ops(%x: tensor<4xf32>, %p: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xi1>) {
    %a = prim.max(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b = prim.min(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %c = prim.select(%p, %a, %a) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %r = prim.add(%c, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %d = prim.and(%p, %p) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    %e = prim.or(%d, %d) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    %s = prim.select(%p, %e, %p) : (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    func.return(%r, %s) : (tensor<4xf32>, tensor<4xi1>) -> ()
  }
  // and(p, p) stays, as select(p, p, p) above.
  // CHECK-LABEL: func.func @involutions(
  // CHECK-NEXT:    %r = prim.abs(%x)
  // CHECK-NEXT:    %s = prim.and(%p, %p)
  // CHECK-NEXT:    func.return(%r, %s)
  func.func @involutions(%x: tensor<4xi32>, %p: tensor<4xi1>) -> (tensor<4xi32>, tensor<4xi1>) {
    %a = prim.neg(%x) : (tensor<4xi32>) -> tensor<4xi32>
    %b = prim.neg(%a) : (tensor<4xi32>) -> tensor<4xi32>
    %r = prim.abs(%b) : (tensor<4xi32>) -> tensor<4xi32>
    %c = prim.not(%p) : (tensor<4xi1>) -> tensor<4xi1>
    %d = prim.not(%c) : (tensor<4xi1>) -> tensor<4xi1>
    %s = prim.and(%d, %p) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    func.return(%r, %s) : (tensor<4xi32>, tensor<4xi1>) -> ()
  }
}
