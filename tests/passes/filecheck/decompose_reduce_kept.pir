// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// What prim cannot say stays, and `explain` says why: axes and k known only at run time (prim
// takes them as attributes), a product scan along a symbolic dim (its step count depends on
// the size).  A reduction over no axes whose result is a function output becomes a copy
// under the output's name; a mean over static dims divides by a constant.

// EXPLAIN:      decompose: nn.cum_prod stays: the scanned dim must be static (it sets the number of steps)
// EXPLAIN-NEXT: decompose: nn.reduce_sum stays: the axes are known only at run time
// EXPLAIN-NEXT: decompose: nn.top_k stays: k is known only at run time
// EXPLAIN-NOT:  stays

// CHECK:      %s = nn.reduce_sum(%x, %axes)
// CHECK-NEXT: %v, %i = nn.top_k(%x, %k)
// CHECK-NEXT: %c = nn.cum_prod(%x, %one)
// CHECK-NEXT: %same = prim.reshape(%x) : (tensor<Sx3x4xf32>) -> tensor<Sx3x4xf32>
// CHECK:      %m.2 = builtin.constant() {value = dense<12.0> : tensor<f32>}
// CHECK:      %m = prim.div(%m.1, %m.3) : (tensor<Sx1x1xf32>, tensor<Sx1x1xf32>) -> tensor<Sx1x1xf32>
module {
  func.func @main(%x: tensor<Sx3x4xf32>, %axes: tensor<1xi64>, %k: tensor<1xi64>) -> (tensor<?x?x?xf32>, tensor<Sx3x?xf32>, tensor<Sx3x?xi64>, tensor<Sx3x4xf32>, tensor<Sx3x4xf32>, tensor<Sx1x1xf32>) {
    %one = builtin.constant() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %a12 = builtin.constant() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
    %s = nn.reduce_sum(%x, %axes) : (tensor<Sx3x4xf32>, tensor<1xi64>) -> tensor<?x?x?xf32>
    %v, %i = nn.top_k(%x, %k) : (tensor<Sx3x4xf32>, tensor<1xi64>) -> (tensor<Sx3x?xf32>, tensor<Sx3x?xi64>)
    %c = nn.cum_prod(%x, %one) : (tensor<Sx3x4xf32>, tensor<i64>) -> tensor<Sx3x4xf32>
    %same = nn.reduce_max(%x) {noop_with_empty_axes = true} : (tensor<Sx3x4xf32>) -> tensor<Sx3x4xf32>
    %m = nn.reduce_mean(%x, %a12) : (tensor<Sx3x4xf32>, tensor<2xi64>) -> tensor<Sx1x1xf32>
    func.return(%s, %v, %i, %c, %same, %m) : (tensor<?x?x?xf32>, tensor<Sx3x?xf32>, tensor<Sx3x?xi64>, tensor<Sx3x4xf32>, tensor<Sx3x4xf32>, tensor<Sx1x1xf32>) -> ()
  }
}
