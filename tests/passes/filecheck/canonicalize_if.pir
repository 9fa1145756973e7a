// RUN: pir optimize %s -p canonicalize | filecheck %s
// An nn.if whose condition is a constant is the branch it takes: its ops move before the
// if, in order, and the value it yields takes the if's place (and, being a function
// output, its name).

// CHECK:      func.func @main(
// CHECK-NEXT:   %n = nn.neg(%x)
// CHECK-NEXT:   %r = nn.tanh(%n)
// CHECK-NEXT:   %s = nn.relu(%r)
// CHECK-NEXT:   func.return(%r, %s)
// CHECK-NOT:  nn.if
module {
  func.func @main(%x: tensor<Bx4xf32>) -> (tensor<Bx4xf32>, tensor<Bx4xf32>) {
    %c = builtin.constant() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
    %r = nn.if(%c) ({
      %a = nn.exp(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
      nn.yield(%a) : (tensor<Bx4xf32>) -> ()
    }, {
      %n = nn.neg(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
      %t = nn.tanh(%n) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
      nn.yield(%t) : (tensor<Bx4xf32>) -> ()
    }) : (tensor<i1>) -> tensor<Bx4xf32>
    %s = nn.relu(%r) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
    func.return(%r, %s) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> ()
  }
}
