// RUN: pir shard %s --mesh tp=2 --place 'x=[S(1)]' --global-view -o - | filecheck %s
// A split contracting dim gives a partial sum (P(sum)); the output leaves the program
// reduced: Partial -> Replicate is an all-reduce.  The constant enters by a local slice.

// CHECK:       %w.reshard = dist.reshard(%w) {shard.why = "%w is whole (a constant); prim.dot_general operand 1 needs [S(0)]"} : (tensor<8x6xf32>) -> !dist.tensor<8x6xf32, mesh<tp=2>, [S(0)]>
// CHECK-NEXT:  %y.local = prim.dot_general(%x, %w.reshard) {{.*}} -> !dist.tensor<4x6xf32, mesh<tp=2>, [P(sum)]>
// CHECK-NEXT:  %y = dist.all_reduce(%y.local) {mesh_axis = "tp", shard.why = "%y is [P(sum)]; func.return needs [R]"} : (!dist.tensor<4x6xf32, mesh<tp=2>, [P(sum)]>) -> !dist.tensor<4x6xf32, mesh<tp=2>, [R]>
// CHECK-NEXT:  func.return(%y)
module {
  func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x6xf32>) {
    %w = builtin.constant() {value = dense<0.5> : tensor<8x6xf32>} : () -> tensor<8x6xf32>
    %y = prim.dot_general(%x, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    func.return(%y) : (tensor<4x6xf32>) -> ()
  }
}
