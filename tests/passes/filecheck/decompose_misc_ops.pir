// RUN: pir optimize %s -p decompose | filecheck %s
// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=NONN
// Quantising divides, rounds half to even, adds the zero point and clamps to [0, 255] before
// the cast; dequantising per axis (-1 is axis 1) lays scale and zero point along it.  A Hann
// window of a constant size is an iota and a cosine in f64.  Dropout outside training is its
// input, copied so the output keeps its name (its mask, unused, is dead); a seeded draw
// becomes the prim draw with that seed.

// NONN-NOT: = nn.

// CHECK:      %ql.2 = prim.div(%x, %ql.1) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
// CHECK-NEXT: %ql.3 = prim.round(%ql.2)
// CHECK-NEXT: %ql.4 = prim.cast(%zp) {dtype = f32} : (tensor<ui8>) -> tensor<f32>
// CHECK:      %ql.6 = prim.add(%ql.3, %ql.5)
// CHECK-NEXT: %ql.7 = builtin.constant() {value = dense<0.0> : tensor<f32>}
// CHECK:      %ql.9 = prim.max(%ql.6, %ql.8)
// CHECK-NEXT: %ql.10 = builtin.constant() {value = dense<255.0> : tensor<f32>}
// CHECK:      %ql.12 = prim.min(%ql.9, %ql.11)
// CHECK-NEXT: %ql = prim.cast(%ql.12) {dtype = ui8} : (tensor<Bx3xf32>) -> tensor<Bx3xui8>

// CHECK-NEXT: %dq.1 = prim.cast(%q) {dtype = f32}
// CHECK-NEXT: %dq.2 = prim.cast(%z) {dtype = f32}
// CHECK-NEXT: %dq.3 = prim.broadcast_in_dim(%dq.2) {broadcast_dimensions = [1]} : (tensor<3xf32>) -> tensor<Bx3xf32>
// CHECK-NEXT: %dq.4 = prim.sub(%dq.1, %dq.3)
// CHECK-NEXT: %dq.5 = prim.broadcast_in_dim(%s) {broadcast_dimensions = [1]}
// CHECK-NEXT: %dq = prim.mul(%dq.4, %dq.5)

// CHECK-NEXT: %hann.1 = prim.iota() {dimension = 0} : () -> tensor<5xf64>
// CHECK-NEXT: %hann.2 = builtin.constant() {value = dense<6.283185307179586> : tensor<f64>}
// CHECK:      %hann.10 = prim.cos(%hann.7)
// CHECK:      %hann.14 = prim.add(%hann.9, %hann.13)
// CHECK-NEXT: %hann = prim.cast(%hann.14) {dtype = f32} : (tensor<5xf64>) -> tensor<5xf32>

// CHECK-NEXT: %drop = prim.reshape(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
// CHECK-NEXT: %r = prim.random_normal() {seed = 7, mean = 0.0, scale = 1.0} : () -> tensor<2x2xf32>
module {
  func.func @main(%x: tensor<Bx3xf32>, %q: tensor<Bx3xi8>, %s: tensor<3xf32>, %z: tensor<3xi8>) -> (tensor<Bx3xui8>, tensor<Bx3xf32>, tensor<5xf32>, tensor<Bx3xf32>, tensor<2x2xf32>) {
    %scale = builtin.constant() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %zp = builtin.constant() {value = dense<128> : tensor<ui8>} : () -> tensor<ui8>
    %n = builtin.constant() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %ql = nn.quantize_linear(%x, %scale, %zp) : (tensor<Bx3xf32>, tensor<f32>, tensor<ui8>) -> tensor<Bx3xui8>
    %dq = nn.dequantize_linear(%q, %s, %z) {axis = -1} : (tensor<Bx3xi8>, tensor<3xf32>, tensor<3xi8>) -> tensor<Bx3xf32>
    %hann = nn.hann_window(%n) : (tensor<i64>) -> tensor<5xf32>
    %drop, %mask = nn.dropout(%x) : (tensor<Bx3xf32>) -> (tensor<Bx3xf32>, tensor<Bx3xi1>)
    %r = nn.random_normal() {shape = [2, 2], seed = 7.0} : () -> tensor<2x2xf32>
    func.return(%ql, %dq, %hann, %drop, %r) : (tensor<Bx3xui8>, tensor<Bx3xf32>, tensor<5xf32>, tensor<Bx3xf32>, tensor<2x2xf32>) -> ()
  }
}
