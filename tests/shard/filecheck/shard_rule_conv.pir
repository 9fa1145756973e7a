// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), R]' --place 'k=[R, S(0)]' --global-view -o - | filecheck %s
// RUN: pir shard %s --mesh tp=2 --place 'x=[S(1)]' --global-view -o - | filecheck %s --check-prefix CHANNELS
// conv [N, C, H, W] * [O, C, KH, KW] -> [N, O, H', W']: the batch N (dp) and the output
// channels O (tp, the kernel split by its dim 0) carry to the result with no communication.

// CHECK:       %y = prim.conv(%x, %k) : (!dist.tensor<4x2x5x5xf32, mesh<dp=2,tp=2>, [S(0), R]>, !dist.tensor<4x2x3x3xf32, mesh<dp=2,tp=2>, [R, S(0)]>) -> !dist.tensor<4x4x3x3xf32, mesh<dp=2,tp=2>, [S(0), S(1)]>
// CHECK-NEXT:  func.return(%y)
// CHECK-NOT:   = dist.

// The input channels C contract: split, they give P(sum) (the kernel sliced alike).
// CHANNELS:       %k.reshard = dist.reshard(%k) {{.*}} -> !dist.tensor<4x2x3x3xf32, mesh<tp=2>, [S(1)]>
// CHANNELS-NEXT:  %y.local = prim.conv(%x, %k.reshard) {{.*}} -> !dist.tensor<4x4x3x3xf32, mesh<tp=2>, [P(sum)]>
// CHANNELS-NEXT:  %y = dist.all_reduce(%y.local) {mesh_axis = "tp", {{.*}}} : ({{.*}}) -> !dist.tensor<4x4x3x3xf32, mesh<tp=2>, [R]>
module {
  func.func @main(%x: tensor<4x2x5x5xf32>, %k: tensor<4x2x3x3xf32>) -> (tensor<4x4x3x3xf32>) {
    %y = prim.conv(%x, %k) : (tensor<4x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<4x4x3x3xf32>
    func.return(%y) : (tensor<4x4x3x3xf32>) -> ()
  }
}
