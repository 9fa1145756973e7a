// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), S(0)]' --place 'y=[R, R]' --global-view -o - | filecheck %s
// On a 2-d mesh a reshard goes axis by axis, the innermost axis (tp) first: dim 0 is split
// by dp then tp, so tp's blocks are gathered before dp's.

// CHECK:       %y.all_gather = dist.all_gather(%y.local) {mesh_axis = "tp", shard.why = "%y is [S(0), S(0)]; its annotation needs [R, R]"} : ({{.*}}) -> !dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  %y = dist.all_gather(%y.all_gather) {mesh_axis = "dp", {{.*}}} : ({{.*}}) -> !dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [R, R]>
// CHECK-NEXT:  func.return(%y)
module {
  func.func @main(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>) {
    %y = prim.neg(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    func.return(%y) : (tensor<8x4xf32>) -> ()
  }
}
