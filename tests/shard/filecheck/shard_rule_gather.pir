// RUN: pir shard %s --mesh dp=2,tp=2 --place 'w=[R, S(1)]' --place 'i=[S(0), R]' --global-view -o - | filecheck %s
// RUN: pir shard %s --mesh tp=2 --place 'w=[S(0)]' --global-view -o - | filecheck %s --check-prefix INDEXED
// gather (an embedding lookup): the indices' dims and x's other dims carry their splits to
// the result (indices on dp -> result dim 0; table columns on tp -> result dim 2); the
// indexed dim of x must be whole, since any rank may need any row.

// CHECK:       %g = prim.gather(%w, %i) {axis = 0} : (!dist.tensor<10x6xf32, mesh<dp=2,tp=2>, [R, S(1)]>, !dist.tensor<4x2xi64, mesh<dp=2,tp=2>, [S(0), R]>) -> !dist.tensor<4x2x6xf32, mesh<dp=2,tp=2>, [S(0), S(2)]>
// CHECK-NEXT:  func.return(%g)
// CHECK-NOT:   = dist.

// INDEXED:       %w.all_gather = dist.all_gather(%w) {mesh_axis = "tp", shard.why = "%w is [S(0)]; prim.gather operand 0 needs [R]"}
// INDEXED-NEXT:  %g = prim.gather(%w.all_gather, %i) {axis = 0} : (!dist.tensor<10x6xf32, mesh<tp=2>, [R]>, !dist.tensor<4x2xi64, mesh<tp=2>, [R]>) -> !dist.tensor<4x2x6xf32, mesh<tp=2>, [R]>
module {
  func.func @main(%w: tensor<10x6xf32>, %i: tensor<4x2xi64>) -> (tensor<4x2x6xf32>) {
    %g = prim.gather(%w, %i) {axis = 0} : (tensor<10x6xf32>, tensor<4x2xi64>) -> tensor<4x2x6xf32>
    func.return(%g) : (tensor<4x2x6xf32>) -> ()
  }
}
