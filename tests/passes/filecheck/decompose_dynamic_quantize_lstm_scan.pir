// RUN: pir optimize %s -p decompose | filecheck %s
// The recurrence of onnxruntime's DynamicQuantizeLSTM over a run-time length: one nn.scan
// per direction, whose body quantises H by its range, takes the centred i32 product with the
// constant R (centred once, outside the scan), rescales it by the f32 product of the scales
// and adds it to this step's projection before the gates, as the reference rule does.

// CHECK:      %[[RC:.*]] = prim.sub(%{{.*}}, %{{.*}}) : (tensor<3x12xi32>, tensor<3x12xi32>) -> tensor<3x12xi32>
// CHECK:      nn.scan(
// CHECK-NEXT: ^bb0(%[[H:.*]]: tensor<2x3xf32>, %[[C:.*]]: tensor<2x3xf32>, %[[XT:.*]]: tensor<2x12xf32>):
// CHECK:      prim.reduce_max(%[[H]]) {axes = [0, 1], keepdims = false}
// CHECK:      prim.reduce_min(%[[H]]) {axes = [0, 1], keepdims = false}
// CHECK:      %[[Q:.*]] = prim.cast(%{{.*}}) {dtype = ui8} : (tensor<2x3xf32>) -> tensor<2x3xui8>
// CHECK:      %[[ACC:.*]] = prim.dot_general(%{{.*}}, %[[RC]]) {{.*}} : (tensor<2x3xi32>, tensor<3x12xi32>) -> tensor<2x12xi32>
// CHECK:      %[[ACCF:.*]] = prim.cast(%[[ACC]]) {dtype = f32}
// CHECK:      %[[HR:.*]] = prim.mul(%[[ACCF]],
// CHECK-NEXT: %[[G:.*]] = prim.add(%[[XT]], %[[HR]])
// CHECK-COUNT-3: prim.logistic
// CHECK:      prim.tanh
// CHECK:      nn.yield(
// CHECK-NOT:  nn.dynamic_quantize_lstm_recurrence
module {
  func.func @main(%xw: tensor<Tx2x1x12xf32>, %r: tensor<1x3x12xi8>, %rs: tensor<1xf32>, %rz: tensor<1xi8>) -> (tensor<Tx1x2x3xf32>) {
    %y, %y_h, %y_c = nn.dynamic_quantize_lstm_recurrence(%xw, %r, %rs, %rz) {operand_segments = [1, 1, 0, 0, 0, 0, 0, 1, 1]} : (tensor<Tx2x1x12xf32>, tensor<1x3x12xi8>, tensor<1xf32>, tensor<1xi8>) -> (tensor<Tx1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
    func.return(%y) : (tensor<Tx1x2x3xf32>) -> ()
  }
}
