// RUN: pir optimize %s -p decompose | filecheck %s
// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=NONN
// Reductions over constant axes become one prim reduction with non-negative, sorted axes;
// a mean over a symbolic dim (B) divides by a count that is a sum of ones over B x 4;
// log-sum-exp subtracts the (finite) max first; cum_prod is a Hillis-Steele scan of
// pads (shift, filled with ones) and muls, log2(5) rounded up = 3 steps, then one more shift
// for `exclusive`; top_k is a sort and two slices.

// NONN-NOT: = nn.

// CHECK:      %mean.1 = prim.reduce_sum(%x) {axes = [0, 2], keepdims = false} : (tensor<Bx3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT: %mean.2 = builtin.constant() {value = dense<1.0> : tensor<f32>}
// CHECK-NEXT: %mean.3 = prim.broadcast_in_dim(%mean.2) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx4xf32>
// CHECK-NEXT: %mean.4 = prim.reduce_sum(%mean.3) {axes = [0, 1], keepdims = false} : (tensor<Bx4xf32>) -> tensor<f32>
// CHECK-NEXT: %mean.5 = prim.broadcast_in_dim(%mean.4) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<3xf32>
// CHECK-NEXT: %mean = prim.div(%mean.1, %mean.5)

// CHECK:      %l2.1 = prim.mul(%x, %x)
// CHECK-NEXT: %l2.2 = prim.reduce_sum(%l2.1) {axes = [2], keepdims = false}
// CHECK-NEXT: %l2 = prim.sqrt(%l2.2) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>

// CHECK:      %[[M:lse.[0-9]+]] = prim.reduce_max(%x) {axes = [1], keepdims = true} : (tensor<Bx3x4xf32>) -> tensor<Bx1x4xf32>
// CHECK-NEXT: %[[INF:lse.[0-9]+]] = prim.is_inf(%[[M]])
// CHECK:      %[[SAFE:lse.[0-9]+]] = prim.select(%[[INF]], %{{lse.[0-9]+}}, %[[M]])
// CHECK:      %[[D:lse.[0-9]+]] = prim.sub(%x, %{{lse.[0-9]+}})
// CHECK-NEXT: %[[E:lse.[0-9]+]] = prim.exp(%[[D]])
// CHECK-NEXT: %[[S:lse.[0-9]+]] = prim.reduce_sum(%[[E]]) {axes = [1], keepdims = true}
// CHECK-NEXT: %[[L:lse.[0-9]+]] = prim.log(%[[S]])
// CHECK-NEXT: %lse = prim.add(%[[L]], %[[SAFE]])

// CHECK:      %am = prim.argmax(%x) {axis = 1, keepdims = false, select_last_index = true} : (tensor<Bx3x4xf32>) -> tensor<Bx4xi64>

// CHECK:      %cp.1 = builtin.constant() {value = dense<1> : tensor<i32>}
// CHECK-NEXT: %cp.2 = prim.pad(%n, %cp.1) {edge_padding_low = [0, 1], edge_padding_high = [0, -1]}
// CHECK-NEXT: %cp.3 = prim.mul(%n, %cp.2)
// CHECK-NEXT: %cp.4 = prim.pad(%cp.3, %cp.1) {edge_padding_low = [0, 2], edge_padding_high = [0, -2]}
// CHECK-NEXT: %cp.5 = prim.mul(%cp.3, %cp.4)
// CHECK-NEXT: %cp.6 = prim.pad(%cp.5, %cp.1) {edge_padding_low = [0, 4], edge_padding_high = [0, -4]}
// CHECK-NEXT: %cp.7 = prim.mul(%cp.5, %cp.6)
// CHECK-NEXT: %cp = prim.pad(%cp.7, %cp.1) {edge_padding_low = [0, 1], edge_padding_high = [0, -1]}

// CHECK:      %v.1, %v.2 = prim.sort(%x) {axis = 2, descending = false} : (tensor<Bx3x4xf32>) -> (tensor<Bx3x4xf32>, tensor<Bx3x4xi64>)
// CHECK-NEXT: %v = prim.slice(%v.1) {start_indices = [0], limit_indices = [2], axes = [2]} : (tensor<Bx3x4xf32>) -> tensor<Bx3x2xf32>
// CHECK-NEXT: %i = prim.slice(%v.2) {start_indices = [0], limit_indices = [2], axes = [2]} : (tensor<Bx3x4xi64>) -> tensor<Bx3x2xi64>
module {
  func.func @main(%x: tensor<Bx3x4xf32>, %n: tensor<2x5xi32>) -> (tensor<3xf32>, tensor<Bx3xf32>, tensor<Bx1x4xf32>, tensor<Bx4xi64>, tensor<2x5xi32>, tensor<Bx3x2xf32>, tensor<Bx3x2xi64>) {
    %a02 = builtin.constant() {value = dense<[0, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %a2 = builtin.constant() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
    %a1 = builtin.constant() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
    %ax = builtin.constant() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %two = builtin.constant() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
    %mean = nn.reduce_mean(%x, %a02) {keepdims = false} : (tensor<Bx3x4xf32>, tensor<2xi64>) -> tensor<3xf32>
    %l2 = nn.reduce_l2(%x, %a2) {keepdims = false} : (tensor<Bx3x4xf32>, tensor<1xi64>) -> tensor<Bx3xf32>
    %lse = nn.reduce_log_sum_exp(%x, %a1) : (tensor<Bx3x4xf32>, tensor<1xi64>) -> tensor<Bx1x4xf32>
    %am = nn.arg_max(%x) {axis = -2, keepdims = false, select_last_index = true} : (tensor<Bx3x4xf32>) -> tensor<Bx4xi64>
    %cp = nn.cum_prod(%n, %ax) {exclusive = true} : (tensor<2x5xi32>, tensor<i64>) -> tensor<2x5xi32>
    %v, %i = nn.top_k(%x, %two) {largest = false} : (tensor<Bx3x4xf32>, tensor<1xi64>) -> (tensor<Bx3x2xf32>, tensor<Bx3x2xi64>)
    func.return(%mean, %l2, %lse, %am, %cp, %v, %i) : (tensor<3xf32>, tensor<Bx3xf32>, tensor<Bx1x4xf32>, tensor<Bx4xi64>, tensor<2x5xi32>, tensor<Bx3x2xf32>, tensor<Bx3x2xi64>) -> ()
  }
}
