// RUN: pir shard %s --mesh tp=2 --place 'x=[R]' --place 'y=[S(1)]' --global-view -o - | filecheck %s
// Replicate -> Shard needs no communication: it stays a dist.reshard (each rank slices its
// block), here before the op, which then runs on the blocks.

// CHECK:       %x.reshard = dist.reshard(%x) {shard.why = "%x is [R]; prim.neg operand 0 needs [S(1)]"} : (!dist.tensor<8x4xf32, mesh<tp=2>, [R]>) -> !dist.tensor<8x4xf32, mesh<tp=2>, [S(1)]>
// CHECK-NEXT:  %y = prim.neg(%x.reshard) : ({{.*}}) -> !dist.tensor<8x4xf32, mesh<tp=2>, [S(1)]>
// CHECK-NOT:   dist.all_
module {
  func.func @main(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>) {
    %y = prim.neg(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    func.return(%y) : (tensor<8x4xf32>) -> ()
  }
}
