// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// onnxruntime's DynamicQuantizeLSTM: the input projection of every step becomes prim ops
// (X quantised by the range of its first max(sequence_lens) steps, one i32 dot_general with
// the centred weights of every direction, the rescale by the f32 product of the scales);
// with sequence_lens the recurrence, which masks each step per batch entry, stays (without,
// it is a scan of prim steps: decompose_dynamic_quantize_lstm_scan.pir).

// EXPLAIN:      decompose: nn.dynamic_quantize_lstm_recurrence stays: sequence_lens masks each step per batch entry: not written in prim ops
// EXPLAIN-NOT:  stays

// CHECK:      %[[STEPS:.*]] = prim.reduce_max(%lens) {axes = [0], keepdims = false}
// CHECK-NEXT: %[[T:.*]] = prim.iota() {dimension = 0} : () -> tensor<5x2x4xi32>
// CHECK:      %[[VALID:.*]] = prim.lt(%[[T]],
// CHECK:      %[[SPAN:.*]] = prim.select(%[[VALID]], %x,
// CHECK:      prim.reduce_max(%[[SPAN]]) {axes = [0, 1, 2], keepdims = false}
// CHECK:      prim.reduce_min(%[[SPAN]]) {axes = [0, 1, 2], keepdims = false}
// CHECK:      %[[XS:.*]] = prim.div(%x,
// CHECK:      %[[XQ:.*]] = prim.cast(%{{.*}}) {dtype = ui8} : (tensor<5x2x4xf32>) -> tensor<5x2x4xui8>
// CHECK:      %[[XC:.*]] = prim.sub(
// CHECK:      %[[W32:.*]] = prim.cast(%w) {dtype = i32} : (tensor<1x4x12xi8>) -> tensor<1x4x12xi32>
// CHECK:      %[[WC:.*]] = prim.sub(%[[W32]],
// CHECK-NEXT: %[[ACC:.*]] = prim.dot_general(%[[XC]], %[[WC]]) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]} : (tensor<5x2x4xi32>, tensor<1x4x12xi32>) -> tensor<5x2x1x12xi32>
// CHECK:      %[[SCALE:.*]] = prim.mul(%{{.*}}, %ws) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
// CHECK-NEXT: %[[ACCF:.*]] = prim.cast(%[[ACC]]) {dtype = f32}
// CHECK-NEXT: %[[SB:.*]] = prim.broadcast_in_dim(%[[SCALE]]) {broadcast_dimensions = [2]} : (tensor<1xf32>) -> tensor<5x2x1x12xf32>
// CHECK-NEXT: %[[XW:.*]] = prim.mul(%[[ACCF]], %[[SB]])
// CHECK-NEXT: %y, %y_h, %y_c = nn.dynamic_quantize_lstm_recurrence(%[[XW]], %r, %lens, %rs, %rz) {operand_segments = [1, 1, 0, 1, 0, 0, 0, 1, 1]} : (tensor<5x2x1x12xf32>, tensor<1x3x12xi8>, tensor<2xi32>, tensor<1x12xf32>, tensor<1x12xi8>) -> (tensor<5x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
// CHECK-NEXT: func.return(%y, %y_h)
module {
  func.func @main(%x: tensor<5x2x4xf32>, %w: tensor<1x4x12xi8>, %r: tensor<1x3x12xi8>, %lens: tensor<2xi32>, %ws: tensor<1xf32>, %wz: tensor<1xi8>, %rs: tensor<1x12xf32>, %rz: tensor<1x12xi8>) -> (tensor<5x1x2x3xf32>, tensor<1x2x3xf32>) {
    %y, %y_h, %y_c = nn.dynamic_quantize_lstm(%x, %w, %r, %lens, %ws, %wz, %rs, %rz) {operand_segments = [1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1, 1]} : (tensor<5x2x4xf32>, tensor<1x4x12xi8>, tensor<1x3x12xi8>, tensor<2xi32>, tensor<1xf32>, tensor<1xi8>, tensor<1x12xf32>, tensor<1x12xi8>) -> (tensor<5x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
    func.return(%y, %y_h) : (tensor<5x1x2x3xf32>, tensor<1x2x3xf32>) -> ()
  }
}
