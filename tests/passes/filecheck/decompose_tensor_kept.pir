// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// What the rules cannot tell stays: a slice of a symbolic dim at bounds computed at run
// time, a reshape to two dims nobody can size, pads computed at run time.  An identity
// transpose becomes its operand, except as a function output: a reshape to the same type
// carries the output's name.

// EXPLAIN:      decompose: nn.pad stays: pads is computed at run time
// EXPLAIN-NEXT: decompose: nn.reshape stays: the result shape [?x?] has dims only known at run time
// EXPLAIN-NEXT: decompose: nn.slice stays: axis 0: cannot tell the slice of a dim of B with bounds computed at run time
// EXPLAIN-NOT:  stays

// CHECK:      %s = nn.slice(%x, %i, %i)
// CHECK-NEXT: %r = nn.reshape(%x, %shape)
// CHECK-NEXT: %p = nn.pad(%x, %i)
// CHECK-NEXT: %t = prim.reshape(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
// CHECK-NEXT: %u = prim.add(%x, %x)
module {
  func.func @main(%x: tensor<Bx4xf32>, %i: tensor<1xi64>, %shape: tensor<2xi64>) -> (tensor<?x4xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<Bx4xf32>, tensor<Bx4xf32>) {
    %s = nn.slice(%x, %i, %i) : (tensor<Bx4xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4xf32>
    %r = nn.reshape(%x, %shape) : (tensor<Bx4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    %p = nn.pad(%x, %i) : (tensor<Bx4xf32>, tensor<1xi64>) -> tensor<?x?xf32>
    %t = nn.transpose(%x) {perm = [0, 1]} : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
    %i2 = nn.transpose(%x) {perm = [0, 1]} : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
    %u = prim.add(%i2, %i2) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xf32>
    func.return(%s, %r, %p, %t, %u) : (tensor<?x4xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<Bx4xf32>, tensor<Bx4xf32>) -> ()
  }
}
