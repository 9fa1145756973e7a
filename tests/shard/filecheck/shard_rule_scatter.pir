// RUN: pir shard %s --mesh dp=2,tp=2 --place 'i=[S(0), R]' --place 'u=[S(0), S(1)]' --global-view -o - | filecheck %s
// scatter_add: x's indexed dim must be whole (any update may land in any row).  With the
// indices (and updates) split on dp, each rank adds only its updates: the result is
// P(sum) on dp, so x must be P(sum) too (whole on dp coordinate 0, zeros elsewhere, a local
// step), and the output is all-reduced.  The updates' other dims follow x's (whole here), so
// u is gathered on tp.

// CHECK:       %x.reshard = dist.reshard(%x) {shard.why = "%x is [R, R]; prim.scatter_add operand 0 needs [P(sum), R]"} {{.*}} -> !dist.tensor<10x6xf32, mesh<dp=2,tp=2>, [P(sum), R]>
// CHECK-NEXT:  %u.all_gather = dist.all_gather(%u) {mesh_axis = "tp", {{.*}}} {{.*}} -> !dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  %y.local = prim.scatter_add(%x.reshard, %i, %u.all_gather) {axis = 0} : ({{.*}}, !dist.tensor<4xi64, mesh<dp=2,tp=2>, [S(0), R]>, {{.*}}) -> !dist.tensor<10x6xf32, mesh<dp=2,tp=2>, [P(sum), R]>
// CHECK-NEXT:  %y = dist.all_reduce(%y.local) {mesh_axis = "dp", shard.why = "%y is [P(sum), R]; func.return needs [R, R]"}
// CHECK-NEXT:  func.return(%y)
module {
  func.func @main(%x: tensor<10x6xf32>, %i: tensor<4xi64>, %u: tensor<4x6xf32>) -> (tensor<10x6xf32>) {
    %y = prim.scatter_add(%x, %i, %u) {axis = 0} : (tensor<10x6xf32>, tensor<4xi64>, tensor<4x6xf32>) -> tensor<10x6xf32>
    func.return(%y) : (tensor<10x6xf32>) -> ()
  }
}
