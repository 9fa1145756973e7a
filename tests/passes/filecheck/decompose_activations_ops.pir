// RUN: pir optimize %s -p decompose | filecheck %s
// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=NONN
// Activations as prim formulas: gelu with erf, softplus without overflow (max(x, 0) +
// log1p(exp(-|x|))), a half-precision hard_swish computed in f32 and rounded once, prelu as a
// select with the slope broadcast, sigmoid as prim.logistic, clip with only a lower bound.

// NONN-NOT: = nn.

// CHECK:      %g.1 = builtin.constant() {value = dense<0.70710677> : tensor<f32>}
// CHECK:      %g.3 = prim.mul(%x, %g.2)
// CHECK-NEXT: %g.4 = prim.erf(%g.3)
// CHECK:      %g.7 = prim.mul(%g.6, %x)
// CHECK:      %g.10 = prim.add(%g.9, %g.4)
// CHECK-NEXT: %g = prim.mul(%g.7, %g.10) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/gelu")

// CHECK-NEXT: %sp.1 = prim.abs(%x)
// CHECK-NEXT: %sp.2 = prim.neg(%sp.1)
// CHECK-NEXT: %sp.3 = prim.exp(%sp.2)
// CHECK-NEXT: %sp.4 = prim.log1p(%sp.3)
// CHECK:      %sp.7 = prim.max(%x, %sp.6)
// CHECK-NEXT: %sp = prim.add(%sp.7, %sp.4)

// CHECK-NEXT: %hs.1 = prim.cast(%h) {dtype = f32} : (tensor<3xf16>) -> tensor<3xf32>
// CHECK:      %hs.4 = prim.div(%hs.1, %hs.3)
// CHECK:      %hs.10 = prim.max(%hs.7, %hs.9)
// CHECK:      %hs.13 = prim.min(%hs.10, %hs.12)
// CHECK-NEXT: %hs.14 = prim.mul(%hs.1, %hs.13) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT: %hs = prim.cast(%hs.14) {dtype = f16} : (tensor<3xf32>) -> tensor<3xf16>

// CHECK:      %p.3 = prim.ge(%x, %p.2)
// CHECK-NEXT: %p.4 = prim.broadcast_in_dim(%s) {broadcast_dimensions = [1]} : (tensor<4xf32>) -> tensor<Bx4xf32>
// CHECK-NEXT: %p.5 = prim.mul(%x, %p.4)
// CHECK-NEXT: %p = prim.select(%p.3, %x, %p.5)

// CHECK-NEXT: %sg = prim.logistic(%x)
// CHECK-NEXT: %c.1 = prim.broadcast_in_dim(%lo) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx4xf32>
// CHECK-NEXT: %c = prim.max(%x, %c.1)
module {
  func.func @main(%x: tensor<Bx4xf32>, %h: tensor<3xf16>, %s: tensor<4xf32>, %lo: tensor<f32>) -> (tensor<Bx4xf32>, tensor<Bx4xf32>, tensor<3xf16>, tensor<Bx4xf32>, tensor<Bx4xf32>, tensor<Bx4xf32>) {
    %g = nn.gelu(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/gelu")
    %sp = nn.softplus(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/softplus")
    %hs = nn.hard_swish(%h) : (tensor<3xf16>) -> tensor<3xf16> loc("/hard_swish")
    %p = nn.p_relu(%x, %s) : (tensor<Bx4xf32>, tensor<4xf32>) -> tensor<Bx4xf32> loc("/prelu")
    %sg = nn.sigmoid(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/sigmoid")
    %c = nn.clip(%x, %lo) {operand_segments = [1, 1, 0]} : (tensor<Bx4xf32>, tensor<f32>) -> tensor<Bx4xf32> loc("/clip")
    func.return(%g, %sp, %hs, %p, %sg, %c) : (tensor<Bx4xf32>, tensor<Bx4xf32>, tensor<3xf16>, tensor<Bx4xf32>, tensor<Bx4xf32>, tensor<Bx4xf32>) -> ()
  }
}
