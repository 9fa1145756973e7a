// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), S(1)]' --global-view -o - | filecheck %s
// concat: the joined dim (0) must be whole, so x is gathered on dp; the other dims are
// split alike on every operand, so y (whole) is sliced locally on tp to match x.

// CHECK:       %x.all_gather = dist.all_gather(%x) {mesh_axis = "dp", shard.why = "%x is [S(0), S(1)]; prim.concat operand 0 needs [R, S(1)]"} {{.*}} -> !dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [R, S(1)]>
// CHECK-NEXT:  %y.reshard = dist.reshard(%y) {shard.why = "%y is [R, R]; prim.concat operand 1 needs [R, S(1)]"} {{.*}} -> !dist.tensor<2x6xf32, mesh<dp=2,tp=2>, [R, S(1)]>
// CHECK-NEXT:  %c = prim.concat(%x.all_gather, %y.reshard) {dimension = 0} : (!dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [R, S(1)]>, !dist.tensor<2x6xf32, mesh<dp=2,tp=2>, [R, S(1)]>) -> !dist.tensor<6x6xf32, mesh<dp=2,tp=2>, [R, S(1)]>
// CHECK-NEXT:  func.return(%c)
module {
  func.func @main(%x: tensor<4x6xf32>, %y: tensor<2x6xf32>) -> (tensor<6x6xf32>) {
    %c = prim.concat(%x, %y) {dimension = 0} : (tensor<4x6xf32>, tensor<2x6xf32>) -> tensor<6x6xf32>
    func.return(%c) : (tensor<6x6xf32>) -> ()
  }
}
