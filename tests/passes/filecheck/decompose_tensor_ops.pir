// RUN: pir optimize %s -p decompose | filecheck %s
// Data movement becomes prim shape ops: reshapes take their result type (symbols kept),
// negative axes become non-negative, a slice with a negative step gathers at constant
// indices, a tile broadcasts a new dim of copies and merges it, reflect padding gathers
// numpy's pad of arange(d).

module {
// CHECK-LABEL: func.func @reshape
// CHECK-NEXT:  %y = prim.reshape(%x) : (tensor<Bx3x4xf32>) -> tensor<Bx12xf32>
// CHECK-NEXT:  %z = prim.transpose(%y) {permutation = [1, 0]} : (tensor<Bx12xf32>) -> tensor<12xBxf32>
// CHECK-NEXT:  %w = prim.concat(%y, %y) {dimension = 1} : (tensor<Bx12xf32>, tensor<Bx12xf32>) -> tensor<Bx24xf32>
// CHECK-NEXT:  func.return(%z, %w)
  func.func @reshape(%x: tensor<Bx3x4xf32>) -> (tensor<12xBxf32>, tensor<Bx24xf32>) {
    %s = builtin.constant() {value = dense<[0, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %y = nn.reshape(%x, %s) : (tensor<Bx3x4xf32>, tensor<2xi64>) -> tensor<Bx12xf32>
    %z = nn.transpose(%y) : (tensor<Bx12xf32>) -> tensor<12xBxf32>
    %w = nn.concat(%y, %y) {axis = -1} : (tensor<Bx12xf32>, tensor<Bx12xf32>) -> tensor<Bx24xf32>
    func.return(%z, %w) : (tensor<12xBxf32>, tensor<Bx24xf32>) -> ()
  }

// CHECK-LABEL: func.func @slice
// CHECK-NEXT:  %y.1 = prim.slice(%x) {start_indices = [1], limit_indices = [3], axes = [1]} : (tensor<Bx3x4xf32>) -> tensor<Bx2x4xf32>
// CHECK-NEXT:  %y.2 = builtin.constant() {value = dense<[3, 1]> : tensor<2xi64>}
// CHECK-NEXT:  %y = prim.gather(%y.1, %y.2) {axis = 2} : (tensor<Bx2x4xf32>, tensor<2xi64>) -> tensor<Bx2x2xf32>
  func.func @slice(%x: tensor<Bx3x4xf32>) -> (tensor<Bx2x2xf32>) {
    %a = builtin.constant() {value = dense<[1, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %b = builtin.constant() {value = dense<[3, -100]> : tensor<2xi64>} : () -> tensor<2xi64>
    %c = builtin.constant() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
    %d = builtin.constant() {value = dense<[1, -2]> : tensor<2xi64>} : () -> tensor<2xi64>
    %y = nn.slice(%x, %a, %b, %c, %d) {operand_segments = [1, 1, 1, 1, 1]} : (tensor<Bx3x4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<Bx2x2xf32>
    func.return(%y) : (tensor<Bx2x2xf32>) -> ()
  }

// CHECK-LABEL: func.func @split
// CHECK-NEXT:  %a = prim.slice(%x) {start_indices = [0], limit_indices = [1], axes = [1]} : (tensor<Bx3xf32>) -> tensor<Bx1xf32>
// CHECK-NEXT:  %b = prim.slice(%x) {start_indices = [1], limit_indices = [3], axes = [1]} : (tensor<Bx3xf32>) -> tensor<Bx2xf32>
  func.func @split(%x: tensor<Bx3xf32>) -> (tensor<Bx1xf32>, tensor<Bx2xf32>) {
    %s = builtin.constant() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
    %a, %b = nn.split(%x, %s) {axis = -1} : (tensor<Bx3xf32>, tensor<2xi64>) -> (tensor<Bx1xf32>, tensor<Bx2xf32>)
    func.return(%a, %b) : (tensor<Bx1xf32>, tensor<Bx2xf32>) -> ()
  }

// CHECK-LABEL: func.func @repeat
// CHECK-NEXT:  %e = prim.broadcast_in_dim(%x) {broadcast_dimensions = [1, 2]} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:  %t.1 = prim.broadcast_in_dim(%x) {broadcast_dimensions = [1, 2]} : (tensor<3x1xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:  %t = prim.reshape(%t.1) : (tensor<2x3x5xf32>) -> tensor<6x5xf32>
  func.func @repeat(%x: tensor<3x1xf32>) -> (tensor<2x3x4xf32>, tensor<6x5xf32>) {
    %s = builtin.constant() {value = dense<[2, 3, 4]> : tensor<3xi64>} : () -> tensor<3xi64>
    %e = nn.expand(%x, %s) : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
    %r = builtin.constant() {value = dense<[2, 5]> : tensor<2xi64>} : () -> tensor<2xi64>
    %t = nn.tile(%x, %r) : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<6x5xf32>
    func.return(%e, %t) : (tensor<2x3x4xf32>, tensor<6x5xf32>) -> ()
  }

// CHECK-LABEL: func.func @pad
// CHECK:       %c = prim.pad(%x, %v) {edge_padding_low = [0, 0, 1], edge_padding_high = [0, 0, -1]} : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:  %r.1 = builtin.constant() {value = dense<[1, 0, 1, 2, 3, 2, 1]> : tensor<7xi64>}
// CHECK-NEXT:  %r = prim.gather(%x, %r.1) {axis = 2} : (tensor<2x3x4xf32>, tensor<7xi64>) -> tensor<2x3x7xf32>
  func.func @pad(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x7xf32>) {
    %p = builtin.constant() {value = dense<[1, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %v = builtin.constant() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %ax = builtin.constant() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
    %c = nn.pad(%x, %p, %v, %ax) {operand_segments = [1, 1, 1, 1]} : (tensor<2x3x4xf32>, tensor<2xi64>, tensor<f32>, tensor<1xi64>) -> tensor<2x3x4xf32>
    %q = builtin.constant() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
    %r = nn.pad(%x, %q, %v, %ax) {mode = "reflect", operand_segments = [1, 1, 1, 1]} : (tensor<2x3x4xf32>, tensor<2xi64>, tensor<f32>, tensor<1xi64>) -> tensor<2x3x7xf32>
    func.return(%c, %r) : (tensor<2x3x4xf32>, tensor<2x3x7xf32>) -> ()
  }
}
