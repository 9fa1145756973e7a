// RUN: pir shard %s --mesh tp=2 --place 'x=[S(1)]' --place 'b=[S(0)]' --global-view -o - | filecheck %s --check-prefix SPLIT
// RUN: pir shard %s --mesh tp=2 --place 'x=[S(1)]' --global-view -o - | filecheck %s --check-prefix SLICE
// RUN: pir shard %s --mesh tp=2 --place 'x=[P(sum)]' --global-view -o - | filecheck %s --check-prefix PARTIAL
// Elementwise and broadcasting ops share one rule: every operand and result dim of an
// elementwise op has one letter, so they are split alike; broadcast_in_dim maps operand dim
// i to result dim broadcast_dimensions[i].  A split bias vector therefore broadcasts into
// the split column of x without communication.

// SPLIT:       %bb = prim.broadcast_in_dim(%b) {{.*}} : (!dist.tensor<6xf32, mesh<tp=2>, [S(0)]>) -> !dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>
// SPLIT-NEXT:  %y = prim.add(%x, %bb) : (!dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>, !dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>) -> !dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>
// SPLIT-NEXT:  %z = prim.tanh(%y) : (!dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>) -> !dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>
// SPLIT-NOT:   = dist.

// A whole operand joins a split one by a local slice (no communication).
// SLICE:       %bb = prim.broadcast_in_dim(%b) {{.*}} -> !dist.tensor<8x6xf32, mesh<tp=2>, [R]>
// SLICE-NEXT:  %bb.reshard = dist.reshard(%bb) {shard.why = "%bb is [R]; prim.add operand 1 needs [S(1)]"} {{.*}} -> !dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>
// SLICE-NEXT:  %y = prim.add(%x, %bb.reshard) {{.*}} -> !dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>
// SLICE-NOT:   dist.all_

// add is additive: a partial sum carries through it (the whole operand becomes P(sum)
// locally: zeros off rank 0); tanh is not linear, so its operand is all-reduced first.
// PARTIAL:       %bb.reshard = dist.reshard(%bb) {{.*}} -> !dist.tensor<8x6xf32, mesh<tp=2>, [P(sum)]>
// PARTIAL-NEXT:  %y = prim.add(%x, %bb.reshard) {{.*}} -> !dist.tensor<8x6xf32, mesh<tp=2>, [P(sum)]>
// PARTIAL-NEXT:  %y.all_reduce = dist.all_reduce(%y) {mesh_axis = "tp", shard.why = "%y is [P(sum)]; prim.tanh operand 0 needs [R]"}
// PARTIAL-NEXT:  %z = prim.tanh(%y.all_reduce) : (!dist.tensor<8x6xf32, mesh<tp=2>, [R]>) -> !dist.tensor<8x6xf32, mesh<tp=2>, [R]>
module {
  func.func @main(%x: tensor<8x6xf32>, %b: tensor<6xf32>) -> (tensor<8x6xf32>) {
    %bb = prim.broadcast_in_dim(%b) {broadcast_dimensions = [1]} : (tensor<6xf32>) -> tensor<8x6xf32>
    %y = prim.add(%x, %bb) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
    %z = prim.tanh(%y) : (tensor<8x6xf32>) -> tensor<8x6xf32>
    func.return(%z) : (tensor<8x6xf32>) -> ()
  }
}
