// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// prim has scatter_add only, so scatters that multiply or take the max stay; so does a
// compress whose condition is known only at run time (its output size depends on it), and
// a gather_elements whose data has a symbolic dim (the linear index needs its stride).

// EXPLAIN:      decompose: nn.compress stays: the output size depends on the condition's values
// EXPLAIN-NEXT: decompose: nn.gather_elements stays: data needs static dims, got [Bx3]
// EXPLAIN-NEXT: decompose: nn.scatter_elements stays: reduction 'max': prim has scatter_add only
// EXPLAIN-NOT:  stays

// CHECK:      %m = nn.scatter_elements(%x, %i, %u) {reduction = "max"}
// CHECK-NEXT: %c = nn.compress(%x, %keep) {axis = 0}
// CHECK-NEXT: %g = nn.gather_elements(%b, %j)
module {
  func.func @main(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>, %keep: tensor<4xi1>, %b: tensor<Bx3xf32>, %j: tensor<Bx3xi64>) -> (tensor<4x3xf32>, tensor<?x3xf32>, tensor<Bx3xf32>) {
    %m = nn.scatter_elements(%x, %i, %u) {reduction = "max"} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
    %c = nn.compress(%x, %keep) {axis = 0} : (tensor<4x3xf32>, tensor<4xi1>) -> tensor<?x3xf32>
    %g = nn.gather_elements(%b, %j) : (tensor<Bx3xf32>, tensor<Bx3xi64>) -> tensor<Bx3xf32>
    func.return(%m, %c, %g) : (tensor<4x3xf32>, tensor<?x3xf32>, tensor<Bx3xf32>) -> ()
  }
}
