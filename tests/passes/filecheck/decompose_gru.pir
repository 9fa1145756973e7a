// RUN: pir optimize %s -p decompose | filecheck %s
// A GRU over a static sequence (2 steps), linear_before_reset: the projection with Wb and
// the z and r columns of Rb (Rbh stays for the candidate); per step H against R's z, r
// rows, then r (H Rh + Rbh), the candidate tanh, H = cand + z (H - cand).

// CHECK:      %[[XW:.*]] = prim.dot_general(%x, %{{.*}}) {{.*}} -> tensor<2x3x6xf32>
// CHECK:      %[[RB:.*]] = prim.slice(%{{.*}}) {start_indices = [6], limit_indices = [12], axes = [0]}
// CHECK:      %[[RBZR:.*]] = prim.slice(%[[RB]]) {start_indices = [0], limit_indices = [4], axes = [0]}
// CHECK:      prim.concat(%[[RBZR]], %{{.*}}) {dimension = 0} : (tensor<4xf32>, tensor<2xf32>) -> tensor<6xf32>
// CHECK:      %[[RBH:.*]] = prim.slice(%[[RB]]) {start_indices = [4], limit_indices = [6], axes = [0]}
// CHECK:      %[[RZR:.*]] = prim.slice(%{{.*}}) {start_indices = [0], limit_indices = [4], axes = [0]} : (tensor<6x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: %[[RH:.*]] = prim.slice(%{{.*}}) {start_indices = [4], limit_indices = [6], axes = [0]} : (tensor<6x2xf32>) -> tensor<2x2xf32>
// CHECK:      prim.dot_general(%{{.*}}, %[[RZR]])
// CHECK:      %[[Z:.*]] = prim.logistic(
// CHECK:      %[[R:.*]] = prim.logistic(
// CHECK-NEXT: %[[HRH:.*]] = prim.dot_general(%{{.*}}, %[[RH]])
// CHECK-NEXT: %[[RBHB:.*]] = prim.broadcast_in_dim(%[[RBH]])
// CHECK-NEXT: %[[HR:.*]] = prim.add(%[[HRH]], %[[RBHB]])
// CHECK-NEXT: %[[RHR:.*]] = prim.mul(%[[R]], %[[HR]])
// CHECK:      %[[CAND:.*]] = prim.tanh(
// CHECK-NEXT: %[[DIFF:.*]] = prim.sub(%{{.*}}, %[[CAND]])
// CHECK-NEXT: %[[ZD:.*]] = prim.mul(%[[Z]], %[[DIFF]])
// CHECK-NEXT: prim.add(%[[CAND]], %[[ZD]])
// CHECK-NOT:  nn.gru
module {
  func.func @main(%x: tensor<2x3x4xf32>, %w: tensor<1x6x4xf32>, %r: tensor<1x6x2xf32>, %b: tensor<1x12xf32>) -> (tensor<2x1x3x2xf32>, tensor<1x3x2xf32>) {
    %y, %y_h = nn.gru(%x, %w, %r, %b) {hidden_size = 2, linear_before_reset = true, operand_segments = [1, 1, 1, 1, 0, 0]} : (tensor<2x3x4xf32>, tensor<1x6x4xf32>, tensor<1x6x2xf32>, tensor<1x12xf32>) -> (tensor<2x1x3x2xf32>, tensor<1x3x2xf32>)
    func.return(%y, %y_h) : (tensor<2x1x3x2xf32>, tensor<1x3x2xf32>) -> ()
  }
}
