// RUN: pir shard %s --mesh tp=2 --place 'x=[S(0)]' --place 'y=[S(1)]' --global-view -o - | filecheck %s
// Shard(0) -> Shard(1) is an all-to-all.

// CHECK:       %y.local = prim.neg(%x) : ({{.*}}[S(0)]>) -> !dist.tensor<8x4xf32, mesh<tp=2>, [S(0)]>
// CHECK-NEXT:  %y = dist.all_to_all(%y.local) {mesh_axis = "tp", dim = 1, shard.why = "%y is [S(0)]; its annotation needs [S(1)]"} : ({{.*}}) -> !dist.tensor<8x4xf32, mesh<tp=2>, [S(1)]>
// CHECK-NOT:   dist.all_gather
module {
  func.func @main(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>) {
    %y = prim.neg(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    func.return(%y) : (tensor<8x4xf32>) -> ()
  }
}
