// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// An LSTM over a static sequence (2 steps) is unrolled (rules_recurrence): one product of the
// whole input with W, then per step H R, the gates i, o, f (sigmoid) and the cell (tanh),
// C = f C + i g, H = o tanh(C); the steps' H stacked into Y.  Over a run-time length the
// steps are an nn.scan over the rows of the same projection, its body one step in prim ops.

// EXPLAIN:      decompose: nn.scan stays: control flow: the op keeps its regions
// EXPLAIN-NOT:  stays

// CHECK:      %[[W:.*]] = prim.reshape(%{{.*}}) : (tensor<1x8x4xf32>) -> tensor<8x4xf32>
// CHECK:      %[[R:.*]] = prim.reshape(%{{.*}}) : (tensor<1x8x2xf32>) -> tensor<8x2xf32>
// CHECK-NEXT: %[[XW:.*]] = prim.dot_general(%x, %[[W]]) {{.*}} lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]} : (tensor<2x3x4xf32>, tensor<8x4xf32>) -> tensor<2x3x8xf32>
// CHECK:      %[[XB:.*]] = prim.add(%[[XW]], %{{.*}}) : (tensor<2x3x8xf32>, tensor<2x3x8xf32>)
// CHECK:      prim.slice(%[[XB]]) {start_indices = [0], limit_indices = [1], axes = [0]}
// CHECK:      %[[HR:.*]] = prim.dot_general(%{{.*}}, %[[R]]) {{.*}} : (tensor<3x2xf32>, tensor<8x2xf32>) -> tensor<3x8xf32>
// CHECK-NEXT: %[[G:.*]] = prim.add(%{{.*}}, %[[HR]])
// CHECK:      %[[I:.*]] = prim.logistic(
// CHECK:      %[[O:.*]] = prim.logistic(
// CHECK:      %[[F:.*]] = prim.logistic(
// CHECK-NEXT: %[[FC:.*]] = prim.mul(%[[F]],
// CHECK:      %[[CELL:.*]] = prim.tanh(
// CHECK-NEXT: %[[IG:.*]] = prim.mul(%[[I]], %[[CELL]])
// CHECK-NEXT: %[[C:.*]] = prim.add(%[[FC]], %[[IG]])
// CHECK-NEXT: %[[TC:.*]] = prim.tanh(%[[C]])
// CHECK-NEXT: %[[H:.*]] = prim.mul(%[[O]], %[[TC]])
// CHECK:      prim.slice(%[[XB]]) {start_indices = [1], limit_indices = [2], axes = [0]}
// CHECK:      prim.dot_general(%[[H]], %[[R]])
// CHECK:      prim.concat(%{{.*}}, %{{.*}}) {dimension = 0} : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<2x3x2xf32>
// CHECK:      %[[XSW:.*]] = prim.dot_general(%xs, %{{.*}}) {{.*}} : (tensor<Sx3x4xf32>, tensor<8x4xf32>) -> tensor<Sx3x8xf32>
// CHECK:      %[[XSB:.*]] = prim.add(%[[XSW]], %{{.*}}) : (tensor<Sx3x8xf32>, tensor<Sx3x8xf32>)
// CHECK:      = nn.scan(%{{.*}}, %{{.*}}, %[[XSB]]) ({
// CHECK-NEXT: ^bb0(%[[SH:.*]]: tensor<3x2xf32>, %[[SC:.*]]: tensor<3x2xf32>, %[[SX:.*]]: tensor<3x8xf32>):
// CHECK-NEXT:   %[[SHR:.*]] = prim.dot_general(%[[SH]], %{{.*}})
// CHECK-NEXT:   prim.add(%[[SX]], %[[SHR]])
// CHECK:        nn.yield(%[[SHN:.*]], %{{.*}}, %[[SHN]])
// CHECK:      }) {num_scan_inputs = 1, scan_input_directions = [], scan_output_directions = []} : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<Sx3x8xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<Sx3x2xf32>)
// CHECK-NOT:  nn.lstm
module {
  func.func @main(%x: tensor<2x3x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x2xf32>, %b: tensor<1x16xf32>, %xs: tensor<Sx3x4xf32>) -> (tensor<2x1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<Sx1x3x2xf32>) {
    %y, %y_h, %y_c = nn.lstm(%x, %w, %r, %b) {hidden_size = 2, operand_segments = [1, 1, 1, 1, 0, 0, 0, 0]} : (tensor<2x3x4xf32>, tensor<1x8x4xf32>, tensor<1x8x2xf32>, tensor<1x16xf32>) -> (tensor<2x1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>)
    %ys, %ys_h, %ys_c = nn.lstm(%xs, %w, %r, %b) {hidden_size = 2, operand_segments = [1, 1, 1, 1, 0, 0, 0, 0]} : (tensor<Sx3x4xf32>, tensor<1x8x4xf32>, tensor<1x8x2xf32>, tensor<1x16xf32>) -> (tensor<Sx1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>)
    func.return(%y, %y_h, %y_c, %ys) : (tensor<2x1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<Sx1x3x2xf32>) -> ()
  }
}
