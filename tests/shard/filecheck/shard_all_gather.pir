// RUN: pir shard %s --mesh tp=2 --place 'x=[S(0)]' --place 'y=[R]' --global-view -o - | filecheck %s
// Shard -> Replicate is an all-gather; it names the layouts that forced it, and the
// annotated value keeps its name (the op's own result becomes %y.local).

// CHECK-LABEL: func.func @main(%x: !dist.tensor<8x4xf32, mesh<tp=2>, [S(0)]>) -> (!dist.tensor<8x4xf32, mesh<tp=2>, [R]>)
// CHECK-NEXT:    %y.local = prim.neg(%x) : (!dist.tensor<8x4xf32, mesh<tp=2>, [S(0)]>) -> !dist.tensor<8x4xf32, mesh<tp=2>, [S(0)]>
// CHECK-NEXT:    %y = dist.all_gather(%y.local) {mesh_axis = "tp", shard.why = "%y is [S(0)]; its annotation needs [R]"} : (!dist.tensor<8x4xf32, mesh<tp=2>, [S(0)]>) -> !dist.tensor<8x4xf32, mesh<tp=2>, [R]>
// CHECK-NEXT:    func.return(%y)
module {
  func.func @main(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>) {
    %y = prim.neg(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    func.return(%y) : (tensor<8x4xf32>) -> ()
  }
}
