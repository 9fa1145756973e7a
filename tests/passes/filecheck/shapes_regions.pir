// RUN: pir optimize %s -p shapes | filecheck %s
// Ops inside regions are refined before the op that holds them, so a branch's refined
// yield refines the nn.if.  What an op in a branch requires gives no equality (the branch
// may never run): unk__5 stays, though the concat needs it equal to B, while the nn.if's
// result, which always exists, unifies its unk__6 with B.

// CHECK-LABEL: func.func @main
// CHECK-SAME:    -> (tensor<Bx8xf32>)
// CHECK-NOT:     pir.dim_constraints
// CHECK:         %z = nn.if(%c) ({
// CHECK-NEXT:      %e = nn.exp(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
// CHECK-NEXT:      %k = nn.concat(%e, %r) {axis = 1} : (tensor<Bx4xf32>, tensor<unk__5x4xf32>) -> tensor<Bx8xf32>
// CHECK-NEXT:      nn.yield(%k) : (tensor<Bx8xf32>) -> ()
// CHECK-NEXT:    }, {
// CHECK-NEXT:      %n = nn.concat(%x, %x) {axis = 1} : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx8xf32>
// CHECK-NEXT:      nn.yield(%n) : (tensor<Bx8xf32>) -> ()
// CHECK-NEXT:    }) : (tensor<i1>) -> tensor<Bx8xf32>
module {
  func.func @main(%c: tensor<i1>, %x: tensor<Bx4xf32>, %s: tensor<2xi64>) -> (tensor<unk__6x?xf32>) {
    %r = nn.reshape(%x, %s) : (tensor<Bx4xf32>, tensor<2xi64>) -> tensor<unk__5x4xf32>
    %z = nn.if(%c) ({
      %e = nn.exp(%x) : (tensor<Bx4xf32>) -> tensor<?x?xf32>
      %k = nn.concat(%e, %r) {axis = 1} : (tensor<?x?xf32>, tensor<unk__5x4xf32>) -> tensor<?x?xf32>
      nn.yield(%k) : (tensor<?x?xf32>) -> ()
    }, {
      %n = nn.concat(%x, %x) {axis = 1} : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<?x8xf32>
      nn.yield(%n) : (tensor<?x8xf32>) -> ()
    }) : (tensor<i1>) -> tensor<unk__6x?xf32>
    func.return(%z) : (tensor<unk__6x?xf32>) -> ()
  }
}
