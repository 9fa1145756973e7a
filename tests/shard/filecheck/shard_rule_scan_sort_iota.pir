// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), S(1)]' --global-view -o - | filecheck %s
// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), S(1)]' --place 'k=[S(0), R]' --global-view -o - | filecheck %s --check-prefix IOTA
// Ops along one dim that reads the whole dim: cumsum (the scanned dim), argmax (the
// reduced dim: an index has no partial kind) and sort (the sorted dim) need it whole, so
// x is gathered on tp once for all three; the other dim keeps its split on dp.

// CHECK:       %x.all_gather = dist.all_gather(%x) {mesh_axis = "tp", shard.why = "%x is [S(0), S(1)]; prim.cumsum operand 0 needs [S(0), R]"}
// CHECK-NEXT:  %c = prim.cumsum(%x.all_gather) {axis = 1} : ({{.*}}) -> !dist.tensor<8x6xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  %a = prim.argmax(%x.all_gather) {axis = 1} : ({{.*}}) -> !dist.tensor<8xi64, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  %v, %vi = prim.sort(%x.all_gather) {axis = 1} : ({{.*}}) -> (!dist.tensor<8x6xf32, mesh<dp=2,tp=2>, [S(0), R]>, !dist.tensor<8x6xi64, mesh<dp=2,tp=2>, [S(0), R]>)
// CHECK-NOT:   dist.all_

// iota: the counted dim must be whole (its values are global positions); another dim may be
// split, each rank counting its own block alike.
// IOTA:       %k = prim.iota() {dimension = 1} : () -> !dist.tensor<8x6xf32, mesh<dp=2,tp=2>, [S(0), R]>
module {
  func.func @main(%x: tensor<8x6xf32>) -> (tensor<8x6xf32>, tensor<8xi64>, tensor<8x6xf32>, tensor<8x6xi64>, tensor<8x6xf32>) {
    %c = prim.cumsum(%x) {axis = 1} : (tensor<8x6xf32>) -> tensor<8x6xf32>
    %a = prim.argmax(%x) {axis = 1} : (tensor<8x6xf32>) -> tensor<8xi64>
    %v, %vi = prim.sort(%x) {axis = 1} : (tensor<8x6xf32>) -> (tensor<8x6xf32>, tensor<8x6xi64>)
    %k = prim.iota() {dimension = 1} : () -> tensor<8x6xf32>
    func.return(%c, %a, %v, %vi, %k) : (tensor<8x6xf32>, tensor<8xi64>, tensor<8x6xf32>, tensor<8x6xi64>, tensor<8x6xf32>) -> ()
  }
}
