// RUN: pir optimize %s -p canonicalize | filecheck %s
// A per-row or per-column scale comes out in front of products, negations and sums, and a
// common factor out of two sums' terms (forward mode's second derivative of tanh; see
// patterns_factor.py).  The test runs each function before and after on random inputs too.

module {
  // A per-column scale (a computed vector) of an inner product comes out in front.
  // CHECK-LABEL: func.func @scale_out_of_product(
  // CHECK-NEXT:    %b = prim.broadcast_in_dim(%v)
  // CHECK-NEXT:    %p.1 = prim.mul(%s, %z)
  // CHECK-NEXT:    %p = prim.mul(%b, %p.1)
  // CHECK-NEXT:    func.return(%p)
  func.func @scale_out_of_product(%v: tensor<3xf32>, %s: tensor<4x3xf32>, %z: tensor<4x3xf32>) -> (tensor<4x3xf32>) {
    %b = prim.broadcast_in_dim(%v) {broadcast_dimensions = [1]} : (tensor<3xf32>) -> tensor<4x3xf32>
    %m = prim.mul(%b, %s) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %p = prim.mul(%m, %z) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    func.return(%p) : (tensor<4x3xf32>) -> ()
  }
  // ... and out of a negation (exact), over a symbolic number of rows too.
  // CHECK-LABEL: func.func @scale_out_of_neg(
  // CHECK-NEXT:    %b = prim.broadcast_in_dim(%v)
  // CHECK-NEXT:    %n.1 = prim.neg(%z)
  // CHECK-NEXT:    %n = prim.mul(%b, %n.1)
  func.func @scale_out_of_neg(%v: tensor<3xf32>, %z: tensor<Nx3xf32>) -> (tensor<Nx3xf32>) {
    %b = prim.broadcast_in_dim(%v) {broadcast_dimensions = [1]} : (tensor<3xf32>) -> tensor<Nx3xf32>
    %m = prim.mul(%z, %b) : (tensor<Nx3xf32>, tensor<Nx3xf32>) -> tensor<Nx3xf32>
    %n = prim.neg(%m) : (tensor<Nx3xf32>) -> tensor<Nx3xf32>
    func.return(%n) : (tensor<Nx3xf32>) -> ()
  }
  // ... and out of a product added to itself (tanh's second derivative: 2 a a'),
  // whichever operand of the product the scale is.
  // CHECK-LABEL: func.func @factor_scale_of_a_double(
  // CHECK-NEXT:    %b = prim.broadcast_in_dim(%v)
  // CHECK-NEXT:    %d.1 = prim.add(%z, %z)
  // CHECK-NEXT:    %d = prim.mul(%b, %d.1)
  func.func @factor_scale_of_a_double(%v: tensor<3xf32>, %z: tensor<4x3xf32>) -> (tensor<4x3xf32>) {
    %b = prim.broadcast_in_dim(%v) {broadcast_dimensions = [1]} : (tensor<3xf32>) -> tensor<4x3xf32>
    %m = prim.mul(%z, %b) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %d = prim.add(%m, %m) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    func.return(%d) : (tensor<4x3xf32>) -> ()
  }
  // Terms of two sums with a common factor (any value): factored, the other terms summed.
  // CHECK-LABEL: func.func @factor_across_two_sums(
  // CHECK-NEXT:    %s.1 = prim.add(%x, %y)
  // CHECK-NEXT:    %s.2 = prim.mul(%k, %s.1)
  // CHECK-NEXT:    %s.3 = prim.add(%b, %d)
  // CHECK-NEXT:    %s = prim.add(%s.2, %s.3)
  func.func @factor_across_two_sums(%k: tensor<4x3xf32>, %x: tensor<4x3xf32>, %y: tensor<4x3xf32>, %b: tensor<4x3xf32>, %d: tensor<4x3xf32>) -> (tensor<4x3xf32>) {
    %p = prim.mul(%x, %k) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %s1 = prim.add(%p, %b) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %q = prim.mul(%y, %k) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %s2 = prim.add(%d, %q) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %s = prim.add(%s1, %s2) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    func.return(%s) : (tensor<4x3xf32>) -> ()
  }
  // A scalar's broadcast is no scale to move; a plain sum of products is factored only for
  // a scale (reverse mode's g*d + d*g stays as the rules wrote it).
  // CHECK-LABEL: func.func @kept(
  // CHECK-NEXT:    %b = prim.broadcast_in_dim(%u)
  // CHECK-NEXT:    %m = prim.mul(%b, %x)
  // CHECK-NEXT:    %p = prim.mul(%m, %y)
  // CHECK-NEXT:    %q1 = prim.mul(%k, %x)
  // CHECK-NEXT:    %q2 = prim.mul(%k, %y)
  // CHECK-NEXT:    %q = prim.add(%q1, %q2)
  func.func @kept(%u: tensor<f32>, %k: tensor<4x3xf32>, %x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
    %b = prim.broadcast_in_dim(%u) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<4x3xf32>
    %m = prim.mul(%b, %x) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %p = prim.mul(%m, %y) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %q1 = prim.mul(%k, %x) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %q2 = prim.mul(%k, %y) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %q = prim.add(%q1, %q2) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    func.return(%p, %q) : (tensor<4x3xf32>, tensor<4x3xf32>) -> ()
  }
}
