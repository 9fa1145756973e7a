// RUN: d=$(mktemp -d) && pir optimize %s -p 'shapes{explain}' -o $d/out.pir 2>&1 | filecheck %s && rm -r $d
// `explain` prints each equality with the op that requires it, then the renamings, the
// constraints on the inputs and how many result types were refined.

// CHECK:      shapes: @main: unk__1 == N: nn.transpose "/t": result 0 is declared with unk__1, its type rule gives N
// CHECK-NEXT: shapes: @main: N == M: nn.concat "/c": non-axis dim 1
// CHECK-NEXT: shapes: @main: renamed unk__1 -> N
// CHECK-NEXT: shapes: @main: requires M == N
// CHECK-NEXT: shapes: @main: refined 1 result type
// CHECK-EMPTY:
module {
  func.func @main(%a: tensor<4xNxf32>, %b: tensor<2xMxf32>) -> (tensor<unk__1x4xf32>, tensor<6x?xf32>) {
    %t = nn.transpose(%a) {perm = [1, 0]} : (tensor<4xNxf32>) -> tensor<unk__1x4xf32> loc("/t")
    %c = nn.concat(%a, %b) {axis = 0} : (tensor<4xNxf32>, tensor<2xMxf32>) -> tensor<6x?xf32> loc("/c")
    func.return(%t, %c) : (tensor<unk__1x4xf32>, tensor<6x?xf32>) -> ()
  }
}
