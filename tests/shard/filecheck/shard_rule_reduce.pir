// RUN: pir shard %s --mesh tp=2 --place 'x=[S(1)]' --global-view -o - | filecheck %s
// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), S(1)]' --global-view -o - | filecheck %s --check-prefix MESH2
// A reduction over a split dim leaves each rank the reduction of its block: the result is
// Partial of the op's kind (reduce_sum: P(sum), reduce_max: P(max)), and the output,
// which leaves the program reduced, is all-reduced.  A kept dim keeps its split.

// CHECK:       %s.local = prim.reduce_sum(%x) {axes = [1]} : (!dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>) -> !dist.tensor<8xf32, mesh<tp=2>, [P(sum)]>
// CHECK-NEXT:  %m.local = prim.reduce_max(%x) {axes = [1]} : (!dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>) -> !dist.tensor<8xf32, mesh<tp=2>, [P(max)]>
// CHECK-NEXT:  %s = dist.all_reduce(%s.local) {mesh_axis = "tp", shard.why = "%s is [P(sum)]; func.return needs [R]"} : (!dist.tensor<8xf32, mesh<tp=2>, [P(sum)]>) -> !dist.tensor<8xf32, mesh<tp=2>, [R]>
// CHECK-NEXT:  %m = dist.all_reduce(%m.local) {mesh_axis = "tp", shard.why = "%m is [P(max)]; func.return needs [R]"} : (!dist.tensor<8xf32, mesh<tp=2>, [P(max)]>) -> !dist.tensor<8xf32, mesh<tp=2>, [R]>
// CHECK-NOT:   = dist.

// MESH2:       %s.local = prim.reduce_sum(%x) {{.*}} -> !dist.tensor<8xf32, mesh<dp=2,tp=2>, [S(0), P(sum)]>
// MESH2-NEXT:  %m.local = prim.reduce_max(%x) {{.*}} -> !dist.tensor<8xf32, mesh<dp=2,tp=2>, [S(0), P(max)]>
// MESH2-NEXT:  %s = dist.all_reduce(%s.local) {mesh_axis = "tp", {{.*}}} : ({{.*}}) -> !dist.tensor<8xf32, mesh<dp=2,tp=2>, [S(0), R]>
// MESH2-NEXT:  %m = dist.all_reduce(%m.local) {mesh_axis = "tp", {{.*}}} : ({{.*}}) -> !dist.tensor<8xf32, mesh<dp=2,tp=2>, [S(0), R]>
// MESH2-NOT:   = dist.
module {
  func.func @main(%x: tensor<8x6xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %s = prim.reduce_sum(%x) {axes = [1]} : (tensor<8x6xf32>) -> tensor<8xf32>
    %m = prim.reduce_max(%x) {axes = [1]} : (tensor<8x6xf32>) -> tensor<8xf32>
    func.return(%s, %m) : (tensor<8xf32>, tensor<8xf32>) -> ()
  }
}
