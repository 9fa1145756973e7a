// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// A formula needs x's shape to broadcast its constants: with an unknown dim (?) the op stays,
// while a clip with no bounds that names a function output becomes a copy of x under the
// output's name (a same-type reshape).  tanh needs no shape.

// EXPLAIN:      decompose: nn.elu stays: needs a known shape: broadcast target
// EXPLAIN-NOT:  stays

// CHECK:      %e = nn.elu(%x)
// CHECK-NEXT: %t = prim.tanh(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-NEXT: %c = prim.reshape(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
module {
  func.func @main(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
    %e = nn.elu(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    %t = nn.tanh(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    %c = nn.clip(%x) {operand_segments = [1, 0, 0]} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    func.return(%e, %t, %c) : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> ()
  }
}
