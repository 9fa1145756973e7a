// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), S(1)]' --global-view -o - | filecheck %s
// dynamic_slice and dynamic_update_slice: a dim the window (or the update) covers whole
// keeps its split (dim 0, on dp); a dim it cuts must be whole, since the start is known
// only at run time (dim 1 is gathered on tp); the start indices are whole.

// CHECK:       %x.all_gather = dist.all_gather(%x) {mesh_axis = "tp", shard.why = "%x is [S(0), S(1)]; prim.dynamic_slice operand 0 needs [S(0), R]"} {{.*}} -> !dist.tensor<8x6xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  %d = prim.dynamic_slice(%x.all_gather, %s) {slice_sizes = [8, 2]} : ({{.*}}, !dist.tensor<2xi64, mesh<dp=2,tp=2>, [R, R]>) -> !dist.tensor<8x2xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  %u.reshard = dist.reshard(%u) {{.*}} -> !dist.tensor<8x2xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  %e = prim.dynamic_update_slice(%x.all_gather, %u.reshard, %s) {{.*}} -> !dist.tensor<8x6xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NOT:   dist.all_
module {
  func.func @main(%x: tensor<8x6xf32>, %s: tensor<2xi64>, %u: tensor<8x2xf32>) -> (tensor<8x2xf32>, tensor<8x6xf32>) {
    %d = prim.dynamic_slice(%x, %s) {slice_sizes = [8, 2]} : (tensor<8x6xf32>, tensor<2xi64>) -> tensor<8x2xf32>
    %e = prim.dynamic_update_slice(%x, %u, %s) : (tensor<8x6xf32>, tensor<8x2xf32>, tensor<2xi64>) -> tensor<8x6xf32>
    func.return(%d, %e) : (tensor<8x2xf32>, tensor<8x6xf32>) -> ()
  }
}
