// RUN: pir optimize %s -p decompose | filecheck %s
// A shape query counts a symbolic dim at run time (prim has no shape op): the sum of ones
// broadcast to (S,); static dims are constants.  range(0, S, 1) of a sequence length is
// iota(S).  trilu keeps the places where col - row <= k (lower), an iota mask broadcast over
// the batch dims.  non_zero stays: its output size depends on the data.

// CHECK-LABEL: func.func @shape
// CHECK-NEXT:  %s.1 = builtin.constant() {value = dense<1> : tensor<i64>}
// CHECK-NEXT:  %s.2 = prim.broadcast_in_dim(%s.1) {broadcast_dimensions = []} : (tensor<i64>) -> tensor<Bxi64>
// CHECK-NEXT:  %s.3 = prim.reduce_sum(%s.2) {axes = [0], keepdims = false} : (tensor<Bxi64>) -> tensor<i64>
// CHECK-NEXT:  %s.4 = prim.reshape(%s.3) : (tensor<i64>) -> tensor<1xi64>
// CHECK-NEXT:  %s.5 = builtin.constant() {value = dense<[3]> : tensor<1xi64>}
// CHECK:       %s = prim.concat(%s.4, %s.5, %s.9) {dimension = 0} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
// CHECK-NEXT:  %r = prim.iota() {dimension = 0} : () -> tensor<Sxi64>
// CHECK-NEXT:  func.return(%s, %r)

// CHECK-LABEL: func.func @trilu
// CHECK-NEXT:  %t.1 = prim.iota() {dimension = 1} : () -> tensor<4x5xi64>
// CHECK-NEXT:  %t.2 = prim.iota() {dimension = 0} : () -> tensor<4x5xi64>
// CHECK-NEXT:  %t.3 = prim.sub(%t.1, %t.2)
// CHECK:       %t.6 = prim.le(%t.3, %t.5) : (tensor<4x5xi64>, tensor<4x5xi64>) -> tensor<4x5xi1>
// CHECK-NEXT:  %t.7 = prim.broadcast_in_dim(%t.6) {broadcast_dimensions = [1, 2]} : (tensor<4x5xi1>) -> tensor<Bx4x5xi1>
// CHECK:       %t = prim.select(%t.7, %x, %t.9)

// CHECK-LABEL: func.func @nonzero
// CHECK-NEXT:  %z = nn.non_zero(%x)
module {
  func.func @shape(%x: tensor<Bx3xSxf32>) -> (tensor<3xi64>, tensor<Sxi64>) {
    %s = nn.shape(%x) : (tensor<Bx3xSxf32>) -> tensor<3xi64>
    %zero = builtin.constant() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %one = builtin.constant() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %two = builtin.constant() {value = dense<2> : tensor<1xi64>} : () -> tensor<1xi64>
    %n = nn.gather(%s, %two) : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
    %m = nn.squeeze(%n) : (tensor<1xi64>) -> tensor<i64>
    %r = nn.range(%zero, %m, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<Sxi64>
    func.return(%s, %r) : (tensor<3xi64>, tensor<Sxi64>) -> ()
  }
  func.func @trilu(%x: tensor<Bx4x5xf32>) -> (tensor<Bx4x5xf32>) {
    %t = nn.trilu(%x) {upper = false} : (tensor<Bx4x5xf32>) -> tensor<Bx4x5xf32>
    func.return(%t) : (tensor<Bx4x5xf32>) -> ()
  }
  func.func @nonzero(%x: tensor<4xf32>) -> (tensor<1x?xi64>) {
    %z = nn.non_zero(%x) : (tensor<4xf32>) -> tensor<1x?xi64>
    func.return(%z) : (tensor<1x?xi64>) -> ()
  }
}
