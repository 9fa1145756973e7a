// RUN: pir shard %s --mesh tp=2 --place 'x=[S(1)]' --place 'y=[S(0)]' --global-view -o - | filecheck %s
// Partial -> Shard is a reduce-scatter (cheaper here than moving x to rows first: y is
// smaller than x).

// CHECK:       %y.local = prim.dot_general{{.*}} -> !dist.tensor<4x2xf32, mesh<tp=2>, [P(sum)]>
// CHECK-NEXT:  %y = dist.reduce_scatter(%y.local) {mesh_axis = "tp", dim = 0, shard.why = "%y is [P(sum)]; its annotation needs [S(0)]"} : ({{.*}}) -> !dist.tensor<4x2xf32, mesh<tp=2>, [S(0)]>
// CHECK-NOT:   dist.all_
module {
  func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x2xf32>) {
    %w = builtin.constant() {value = dense<0.5> : tensor<8x2xf32>} : () -> tensor<8x2xf32>
    %y = prim.dot_general(%x, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    func.return(%y) : (tensor<4x2xf32>) -> ()
  }
}
