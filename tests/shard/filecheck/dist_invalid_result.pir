// RUN: not pir verify %s 2>&1 | filecheck %s
// A collective's result layout is its meaning: a declared one that differs is rejected.

// CHECK: pir: error: {{.*}}:[[# @LINE + 3]]:10: dist.reduce_scatter: result 0 is declared !dist.tensor<4x8xf32, mesh<tp=2>, [S(0)]>, but the op gives !dist.tensor<4x8xf32, mesh<tp=2>, [S(1)]>
module {
  func.func @main(%x: !dist.tensor<4x8xf32, mesh<tp=2>, [P(avg)]>) -> (!dist.tensor<4x8xf32, mesh<tp=2>, [S(0)]>) {
    %y = dist.reduce_scatter(%x) {mesh_axis = "tp", dim = 1} : (!dist.tensor<4x8xf32, mesh<tp=2>, [P(avg)]>) -> !dist.tensor<4x8xf32, mesh<tp=2>, [S(0)]>
    func.return(%y) : (!dist.tensor<4x8xf32, mesh<tp=2>, [S(0)]>) -> ()
  }
}
