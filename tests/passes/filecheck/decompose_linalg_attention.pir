// RUN: pir optimize %s -p decompose | filecheck %s
// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=NONN
// Causal grouped-query attention over a symbolic sequence: the causal frontier is an iota
// compare (j - i <= 0) selecting 0 or -inf, the two kv heads are repeated for four q heads,
// q and k are each scaled by sqrt(1/sqrt(8)), the softmax guards its max against -inf and its
// sum against 0, and the (unused) present k and v are k and v themselves.  The rotary
// embedding rotates interleaved pairs of the first 4 dims; SwiGLU with alpha 1 needs no scale.

// NONN-NOT: = nn.

// CHECK:      %y.1 = prim.iota() {dimension = 0} : () -> tensor<SxSxi64> loc("/attn")
// CHECK-NEXT: %y.2 = prim.iota() {dimension = 1} : () -> tensor<SxSxi64> loc("/attn")
// CHECK-NEXT: %y.3 = prim.sub(%y.2, %y.1)
// CHECK:      %y.6 = prim.le(%y.3, %y.5) : (tensor<SxSxi64>, tensor<SxSxi64>) -> tensor<SxSxi1>
// CHECK:      %y.9 = builtin.constant() {value = dense<-inf> : tensor<f32>}
// CHECK:      %y.11 = prim.select(%y.6, %y.8, %y.10) : (tensor<SxSxi1>, tensor<SxSxf32>, tensor<SxSxf32>) -> tensor<SxSxf32>
// CHECK-NEXT: %y.12 = prim.broadcast_in_dim(%k) {broadcast_dimensions = [0, 1, 3, 4]} : (tensor<Bx2xSx8xf32>) -> tensor<Bx2x2xSx8xf32>
// CHECK-NEXT: %y.13 = prim.reshape(%y.12) : (tensor<Bx2x2xSx8xf32>) -> tensor<Bx4xSx8xf32>
// CHECK:      %y.16 = builtin.constant() {value = dense<0.59460354> : tensor<f32>}
// CHECK:      %y.18 = prim.mul(%q, %y.17)
// CHECK:      %y.20 = prim.mul(%y.13, %y.19)
// CHECK-NEXT: %qk = prim.dot_general(%y.18, %y.20) {lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [3]} : (tensor<Bx4xSx8xf32>, tensor<Bx4xSx8xf32>) -> tensor<Bx4xSxSxf32>
// CHECK-NEXT: %y.22 = prim.broadcast_in_dim(%y.11) {broadcast_dimensions = [2, 3]} : (tensor<SxSxf32>) -> tensor<Bx4xSxSxf32>
// CHECK-NEXT: %y.23 = prim.add(%qk, %y.22)
// CHECK-NEXT: %y.24 = prim.reduce_max(%y.23) {axes = [3], keepdims = true}
// CHECK:      %y.30 = prim.select(%y.27, %y.29, %y.24)
// CHECK:      %y.32 = prim.sub(%y.23, %y.31)
// CHECK-NEXT: %y.33 = prim.exp(%y.32)
// CHECK-NEXT: %y.34 = prim.reduce_sum(%y.33) {axes = [3], keepdims = true}
// CHECK:      %y.40 = prim.select(%y.37, %y.39, %y.34)
// CHECK:      %y.42 = prim.div(%y.33, %y.41)
// CHECK-NEXT: %y = prim.dot_general(%y.42, %y.15) {lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2]} : (tensor<Bx4xSxSxf32>, tensor<Bx4xSx8xf32>) -> tensor<Bx4xSx8xf32> loc("/attn")

// CHECK-NEXT: %r.1 = prim.broadcast_in_dim(%cos) {broadcast_dimensions = [0, 2, 3]} : (tensor<BxSx2xf32>) -> tensor<Bx2xSx2xf32>
// CHECK-NEXT: %r.2 = prim.broadcast_in_dim(%sin) {broadcast_dimensions = [0, 2, 3]}
// CHECK-NEXT: %r.3 = prim.slice(%x) {start_indices = [0], limit_indices = [4], strides = [2], axes = [3]}
// CHECK-NEXT: %r.4 = prim.slice(%x) {start_indices = [1], limit_indices = [4], strides = [2], axes = [3]}
// CHECK:      %r.13 = prim.concat(%r.11, %r.12) {dimension = 4} : (tensor<Bx2xSx2x1xf32>, tensor<Bx2xSx2x1xf32>) -> tensor<Bx2xSx2x2xf32>
// CHECK-NEXT: %r.14 = prim.reshape(%r.13) : (tensor<Bx2xSx2x2xf32>) -> tensor<Bx2xSx4xf32>
// CHECK-NEXT: %r.15 = prim.slice(%x) {start_indices = [4], limit_indices = [8], strides = [1], axes = [3]}
// CHECK-NEXT: %r = prim.concat(%r.14, %r.15) {dimension = 3}

// CHECK-NEXT: %s.1 = prim.logistic(%a)
// CHECK-NEXT: %s.2 = prim.mul(%a, %s.1)
// CHECK-NEXT: %s = prim.mul(%s.2, %b)
module {
  func.func @main(%q: tensor<Bx4xSx8xf32>, %k: tensor<Bx2xSx8xf32>, %v: tensor<Bx2xSx8xf32>, %x: tensor<Bx2xSx8xf32>, %cos: tensor<BxSx2xf32>, %sin: tensor<BxSx2xf32>, %a: tensor<Bx4xf32>, %b: tensor<Bx4xf32>) -> (tensor<Bx4xSx8xf32>, tensor<Bx2xSx8xf32>, tensor<Bx4xf32>) {
    %y, %pk, %pv, %qk = nn.attention(%q, %k, %v) {is_causal = true} : (tensor<Bx4xSx8xf32>, tensor<Bx2xSx8xf32>, tensor<Bx2xSx8xf32>) -> (tensor<Bx4xSx8xf32>, tensor<Bx2xSx8xf32>, tensor<Bx2xSx8xf32>, tensor<Bx4xSxSxf32>) loc("/attn")
    %r = nn.rotary_embedding(%x, %cos, %sin) {rotary_embedding_dim = 4, interleaved = true} : (tensor<Bx2xSx8xf32>, tensor<BxSx2xf32>, tensor<BxSx2xf32>) -> tensor<Bx2xSx8xf32>
    %s = nn.swiglu(%a, %b) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xf32>
    func.return(%y, %r, %s) : (tensor<Bx4xSx8xf32>, tensor<Bx2xSx8xf32>, tensor<Bx4xf32>) -> ()
  }
}
