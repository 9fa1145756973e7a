// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// What prim cannot say stays, and `explain` says why: string casts and compares, an identity
// that gives a function output its own name (a function input here); nn.bit_cast is declared
// kept.  An inner identity disappears.

// EXPLAIN:      decompose: nn.cast stays: prim.cast has no strings
// EXPLAIN-NEXT: decompose: nn.equal stays: prim ops do not take strings
// EXPLAIN-NEXT: decompose: nn.identity stays: gives the function output %out its own name
// EXPLAIN-NOT:  stays

// CHECK:      %s = nn.cast(%x) {to = str}
// CHECK-NEXT: %e = nn.equal(%s, %s)
// CHECK-NEXT: %b = nn.bit_cast(%x) {to = i32}
// CHECK-NEXT: %n = prim.neg(%x)
// CHECK-NEXT: %out = nn.identity(%x)
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
