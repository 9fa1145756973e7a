// RUN: pir shard %s --mesh tp=2 --place 'x=[S(0)]' --global-view -o - | filecheck %s
// RUN: pir shard %s --mesh tp=2 --place 'x=[S(1)]' --global-view -o - | filecheck %s --check-prefix INNER
// reshape groups dims into runs of equal element count: 4x2 -> 8 merges, 8 -> 2x4 splits.
// A run keeps the split of its outermost dim (when the split divides the outermost dim on
// both sides): each rank's rows stay contiguous, so merging and splitting are local.

// CHECK:       %m = prim.reshape(%x) : (!dist.tensor<4x2x6xf32, mesh<tp=2>, [S(0)]>) -> !dist.tensor<8x6xf32, mesh<tp=2>, [S(0)]>
// CHECK-NEXT:  %n = prim.neg(%m)
// CHECK-NEXT:  %s = prim.reshape(%n) : (!dist.tensor<8x6xf32, mesh<tp=2>, [S(0)]>) -> !dist.tensor<2x4x6xf32, mesh<tp=2>, [S(0)]>
// CHECK-NOT:   = dist.

// A split inner dim of a merged run would interleave the blocks: it is gathered first.
// INNER:       %x.all_gather = dist.all_gather(%x) {mesh_axis = "tp", shard.why = "%x is [S(1)]; prim.reshape operand 0 needs [R]"}
// INNER-NEXT:  %m = prim.reshape(%x.all_gather) : (!dist.tensor<4x2x6xf32, mesh<tp=2>, [R]>) -> !dist.tensor<8x6xf32, mesh<tp=2>, [R]>
module {
  func.func @main(%x: tensor<4x2x6xf32>) -> (tensor<2x4x6xf32>) {
    %m = prim.reshape(%x) : (tensor<4x2x6xf32>) -> tensor<8x6xf32>
    %n = prim.neg(%m) : (tensor<8x6xf32>) -> tensor<8x6xf32>
    %s = prim.reshape(%n) : (tensor<8x6xf32>) -> tensor<2x4x6xf32>
    func.return(%s) : (tensor<2x4x6xf32>) -> ()
  }
}
