// RUN: pir optimize %s -p cse | not pir diff %s - | filecheck %s
// RUN: pir optimize %s -p cse,dce | not pir diff %s - --stat | filecheck %s --check-prefix=STAT
// CSE merges the second relu into the first: the diff names the removed op, then the op
// whose operand now reads the survivor, in program order.  The dead exp stays until dce.

// CHECK:      --- {{.*}}cse_stage.pir
// CHECK-NEXT: +++ -
// CHECK-NEXT: @main
// CHECK-NEXT: - %b = nn.relu(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/b")
// CHECK-NEXT: ~ %c = nn.add: operand 1: %b -> %a loc("/c")
// CHECK-NOT:  {{.}}

// STAT:      op       removed  added  changed
// STAT-NEXT: nn.add         0      0        1
// STAT-NEXT: nn.exp         1      0        0
// STAT-NEXT: nn.relu        1      0        0
// STAT-NEXT: dialect
// STAT-NEXT:   nn           2      0        1
// STAT-NEXT: total          2      0        1
module @m {
  func.func @main(%x: tensor<Bx4xf32>) -> (tensor<Bx4xf32>) {
    %a = nn.relu(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/a")
    %b = nn.relu(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/b")
    %dead = nn.exp(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/dead")
    %c = nn.add(%a, %b) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/c")
    func.return(%c) : (tensor<Bx4xf32>) -> ()
  }
}
