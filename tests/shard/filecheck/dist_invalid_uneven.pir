// RUN: not pir verify %s 2>&1 | filecheck %s
// A static dim must divide evenly among the ranks that split it (no padding): the parser
// points at the type.

// CHECK: pir: error: {{.*}}dist_invalid_uneven.pir:[[# @LINE + 4]]:23: bad type '!dist.tensor<5x8xf32, mesh<dp=2,tp=2>, [S(0), R]>': dim 0 (5) is not divisible by 2, the ranks of mesh axes dp that shard it
// CHECK-NEXT: func.func @main(%x: !dist.tensor<5x8xf32
// CHECK-NEXT: {{^ *\^$}}
module {
  func.func @main(%x: !dist.tensor<5x8xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> (!dist.tensor<5x8xf32, mesh<dp=2,tp=2>, [S(0), R]>) {
    func.return(%x) : (!dist.tensor<5x8xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> ()
  }
}
