// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), S(1)]' --global-view -o - | filecheck %s
// pad: a padded dim must be whole (the padding goes at the global edges, not at each
// block's), so dim 1 is gathered on tp; the unpadded dim 0 keeps its split on dp.  The
// padding value is a whole scalar constant.

// CHECK:       %x.all_gather = dist.all_gather(%x) {mesh_axis = "tp", shard.why = "%x is [S(0), S(1)]; prim.pad operand 0 needs [S(0), R]"} {{.*}} -> !dist.tensor<8x6xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  %p = prim.pad(%x.all_gather, %z) {{.*}} : (!dist.tensor<8x6xf32, mesh<dp=2,tp=2>, [S(0), R]>, tensor<f32>) -> !dist.tensor<8x8xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  func.return(%p)
module {
  func.func @main(%x: tensor<8x6xf32>) -> (tensor<8x8xf32>) {
    %z = builtin.constant() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %p = prim.pad(%x, %z) {edge_padding_low = [0, 1], edge_padding_high = [0, 1]} : (tensor<8x6xf32>, tensor<f32>) -> tensor<8x8xf32>
    func.return(%p) : (tensor<8x8xf32>) -> ()
  }
}
