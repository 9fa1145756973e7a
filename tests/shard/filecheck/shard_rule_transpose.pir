// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), S(1)]' --global-view -o - | filecheck %s
// transpose permutes the dims and their splits with them: dim 0 (dp) moves to 1, dim 1
// (tp) to 2.  No communication.

// CHECK:       %t = prim.transpose(%x) {permutation = [2, 0, 1]} : (!dist.tensor<8x6x4xf32, mesh<dp=2,tp=2>, [S(0), S(1)]>) -> !dist.tensor<4x8x6xf32, mesh<dp=2,tp=2>, [S(1), S(2)]>
// CHECK-NEXT:  func.return(%t)
// CHECK-NOT:   = dist.
module {
  func.func @main(%x: tensor<8x6x4xf32>) -> (tensor<4x8x6xf32>) {
    %t = prim.transpose(%x) {permutation = [2, 0, 1]} : (tensor<8x6x4xf32>) -> tensor<4x8x6xf32>
    func.return(%t) : (tensor<4x8x6xf32>) -> ()
  }
}
