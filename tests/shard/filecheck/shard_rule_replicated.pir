// RUN: pir shard %s --mesh dp=2 --place 'x=[S(0)]' --global-view -o - | filecheck %s
// The replicated fallback (random_uniform, random_normal): the seed fixes the values of the
// whole tensor, so every rank draws it whole (a rank drawing only its block would get other
// numbers than one device does); a split consumer then takes its block by a local slice.

// CHECK:       %r = prim.random_uniform() {seed = 7} : () -> !dist.tensor<8x6xf32, mesh<dp=2>, [R]>
// CHECK-NEXT:  %r.reshard = dist.reshard(%r) {shard.why = "%r is [R]; prim.add operand 1 needs [S(0)]"} : (!dist.tensor<8x6xf32, mesh<dp=2>, [R]>) -> !dist.tensor<8x6xf32, mesh<dp=2>, [S(0)]>
// CHECK-NEXT:  %y = prim.add(%x, %r.reshard) {{.*}} -> !dist.tensor<8x6xf32, mesh<dp=2>, [S(0)]>
// CHECK-NOT:   dist.all_
module {
  func.func @main(%x: tensor<8x6xf32>) -> (tensor<8x6xf32>) {
    %r = prim.random_uniform() {seed = 7} : () -> tensor<8x6xf32>
    %y = prim.add(%x, %r) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
    func.return(%y) : (tensor<8x6xf32>) -> ()
  }
}
