// RUN: pir shard %s --mesh tp=2 --auto --global-view -o - | filecheck %s
// --auto on an MLP finds Megatron's tensor parallelism: fc1 split by columns, fc2 by rows
// (its weight takes the layout the split activations need), and exactly one all-reduce.

// CHECK:       %w1.reshard = dist.reshard(%w1) {{.*}} -> !dist.tensor<8x16xf32, mesh<tp=2>, [S(1)]>
// CHECK:       %h = prim.tanh(%a) : ({{.*}}) -> !dist.tensor<4x16xf32, mesh<tp=2>, [S(1)]>
// CHECK:       %w2.reshard = dist.reshard(%w2) {{.*}} -> !dist.tensor<16x8xf32, mesh<tp=2>, [S(0)]>
// CHECK:       -> !dist.tensor<4x8xf32, mesh<tp=2>, [P(sum)]>
// CHECK:       dist.all_reduce
// CHECK-NOT:   dist.all_
module {
  func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
    %w1 = builtin.constant() {value = dense<0.5> : tensor<8x16xf32>} : () -> tensor<8x16xf32>
    %w2 = builtin.constant() {value = dense<0.25> : tensor<16x8xf32>} : () -> tensor<16x8xf32>
    %a = prim.dot_general(%x, %w1) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %h = prim.tanh(%a) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %y = prim.dot_general(%h, %w2) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    func.return(%y) : (tensor<4x8xf32>) -> ()
  }
}
