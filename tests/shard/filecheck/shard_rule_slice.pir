// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), S(1)]' --global-view -o - | filecheck %s
// slice: a dim taken whole keeps its split (dim 0, on dp); a dim the slice cuts must be
// whole (the window would cross the blocks), so dim 1 is gathered on tp first.

// CHECK:       %x.all_gather = dist.all_gather(%x) {mesh_axis = "tp", shard.why = "%x is [S(0), S(1)]; prim.slice operand 0 needs [S(0), R]"} : (!dist.tensor<8x12xf32, mesh<dp=2,tp=2>, [S(0), S(1)]>) -> !dist.tensor<8x12xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  %a = prim.slice(%x.all_gather) {limit_indices = [8, 10], start_indices = [0, 2]} : (!dist.tensor<8x12xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> !dist.tensor<8x8xf32, mesh<dp=2,tp=2>, [S(0), R]>
// CHECK-NEXT:  func.return(%a)
module {
  func.func @main(%x: tensor<8x12xf32>) -> (tensor<8x8xf32>) {
    %a = prim.slice(%x) {limit_indices = [8, 10], start_indices = [0, 2]} : (tensor<8x12xf32>) -> tensor<8x8xf32>
    func.return(%a) : (tensor<8x8xf32>) -> ()
  }
}
