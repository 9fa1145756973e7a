// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// What prim cannot say stays, and `explain` says why: string casts and compares; nn.bit_cast
// is declared kept.  An inner identity disappears; one that gives a function output its own
// name (a function input here) becomes a copy under that name (a same-type reshape).

// EXPLAIN:      decompose: nn.bit_cast stays: reinterprets bits
// EXPLAIN-NEXT: decompose: nn.cast stays: prim.cast has no strings
// EXPLAIN-NEXT: decompose: nn.equal stays: prim ops do not take strings
// EXPLAIN-NOT:  stays

// CHECK:      %s = nn.cast(%x) {to = str}
// CHECK-NEXT: %e = nn.equal(%s, %s)
// CHECK-NEXT: %b = nn.bit_cast(%x) {to = i32}
// CHECK-NEXT: %n = prim.neg(%x)
// CHECK-NEXT: %out = prim.reshape(%x) : (tensor<3xf32>) -> tensor<3xf32>
module {
  func.func @main(%x: tensor<3xf32>) -> (tensor<3xi1>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>) {
    %s = nn.cast(%x) {to = str} : (tensor<3xf32>) -> tensor<3xstr>
    %e = nn.equal(%s, %s) : (tensor<3xstr>, tensor<3xstr>) -> tensor<3xi1>
    %b = nn.bit_cast(%x) {to = i32} : (tensor<3xf32>) -> tensor<3xi32>
    %i = nn.identity(%x) : (tensor<3xf32>) -> tensor<3xf32>
    %n = nn.neg(%i) : (tensor<3xf32>) -> tensor<3xf32>
    %out = nn.identity(%x) : (tensor<3xf32>) -> tensor<3xf32>
    func.return(%e, %b, %n, %out) : (tensor<3xi1>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>) -> ()
  }
}
