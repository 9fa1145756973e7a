// RUN: not pir verify %s 2>&1 | filecheck %s
// An all_reduce needs a partial operand on its mesh axis; the error names the op and its line.

// CHECK: pir: error: {{.*}}dist_invalid_all_reduce.pir:[[# @LINE + 3]]:10: dist.all_reduce "/ar": x is S(0) on mesh axis 'tp': all_reduce needs a partial (P) operand
module {
  func.func @main(%x: !dist.tensor<4x8xf32, mesh<tp=2>, [S(0)]>) -> (!dist.tensor<4x8xf32, mesh<tp=2>, [R]>) {
    %y = dist.all_reduce(%x) {mesh_axis = "tp"} : (!dist.tensor<4x8xf32, mesh<tp=2>, [S(0)]>) -> !dist.tensor<4x8xf32, mesh<tp=2>, [R]> loc("/ar")
    func.return(%y) : (!dist.tensor<4x8xf32, mesh<tp=2>, [R]>) -> ()
  }
}
