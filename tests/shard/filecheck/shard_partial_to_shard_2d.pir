// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), S(1)]' --global-view -o - | filecheck %s
// Data parallel on dp, row-parallel on tp: the partial sum is all-reduced along tp only;
// the output stays split on dp (outputs leave the program split only along the axes
// inputs are split on).

// CHECK:       prim.dot_general{{.*}} -> !dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), P(sum)]>
// CHECK-NEXT:  %y = dist.all_reduce(%y.local) {mesh_axis = "tp", {{.*}}} : ({{.*}}) -> !dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NOT:   mesh_axis = "dp"
module {
  func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x6xf32>) {
    %w = builtin.constant() {value = dense<0.5> : tensor<8x6xf32>} : () -> tensor<8x6xf32>
    %y = prim.dot_general(%x, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    func.return(%y) : (tensor<4x6xf32>) -> ()
  }
}
