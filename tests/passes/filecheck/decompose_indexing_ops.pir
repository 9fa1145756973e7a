// RUN: pir optimize %s -p decompose | filecheck %s
// Gathers and scatters become prim's one-axis gather / scatter_add.  Negative indices known
// only at run time are wrapped with select(i < 0, i + n, i); constant ones are wrapped at
// compile time.  scatter_elements writes into the flattened data at the linear position
// index * 3 + column.

// CHECK-LABEL: func.func @gather
// CHECK:      %y.3 = prim.lt(%i, %y.2) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
// CHECK:      %y.6 = prim.add(%i, %y.5)
// CHECK-NEXT: %y.7 = prim.select(%y.3, %y.6, %i)
// CHECK-NEXT: %y = prim.gather(%x, %y.7) {axis = 1} : (tensor<Bx3x4xf32>, tensor<2xi64>) -> tensor<Bx2x4xf32>
// CHECK-NEXT: %z.1 = builtin.constant() {value = dense<[0, 2]> : tensor<2xi64>}
// CHECK-NEXT: %z = prim.gather(%x, %z.1) {axis = 1}

// CHECK-LABEL: func.func @scatter
// CHECK:      %y.7 = prim.select
// CHECK-NEXT: %y.8 = prim.iota() {dimension = 1} : () -> tensor<2x3xi64>
// CHECK:      %y.11 = prim.mul(%y.7, %y.10)
// CHECK-NEXT: %y.12 = prim.add(%y.11, %y.8)
// CHECK-NEXT: %y.13 = prim.reshape(%x) : (tensor<4x3xf32>) -> tensor<12xf32>
// CHECK-NEXT: %y.14 = prim.scatter_add(%y.13, %y.12, %u) {axis = 0} : (tensor<12xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<12xf32>
// CHECK-NEXT: %y = prim.reshape(%y.14) : (tensor<12xf32>) -> tensor<4x3xf32>
module {
  func.func @gather(%x: tensor<Bx3x4xf32>, %i: tensor<2xi64>) -> (tensor<Bx2x4xf32>, tensor<Bx2x4xf32>) {
    %y = nn.gather(%x, %i) {axis = -2} : (tensor<Bx3x4xf32>, tensor<2xi64>) -> tensor<Bx2x4xf32>
    %c = builtin.constant() {value = dense<[0, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %z = nn.gather(%x, %c) {axis = 1} : (tensor<Bx3x4xf32>, tensor<2xi64>) -> tensor<Bx2x4xf32>
    func.return(%y, %z) : (tensor<Bx2x4xf32>, tensor<Bx2x4xf32>) -> ()
  }
  func.func @scatter(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>) -> (tensor<4x3xf32>) {
    %y = nn.scatter_elements(%x, %i, %u) {reduction = "add"} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
    func.return(%y) : (tensor<4x3xf32>) -> ()
  }
}
