// RUN: not pir verify %s 2>&1 | filecheck %s
// Two mesh axes split dim 0 (dp outer, tp inner): gathering along dp first would interleave
// the blocks, so only the innermost axis may be gathered.

// CHECK: pir: error: {{.*}}:[[# @LINE + 3]]:10: dist.all_gather: x: dim 0 is split by mesh axes dp, tp; a collective may act only on the innermost one (tp), not on 'dp'
module {
  func.func @main(%x: !dist.tensor<8x2xf32, mesh<dp=2,tp=2>, [S(0), S(0)]>) -> (!dist.tensor<8x2xf32, mesh<dp=2,tp=2>, [R, S(0)]>) {
    %y = dist.all_gather(%x) {mesh_axis = "dp"} : (!dist.tensor<8x2xf32, mesh<dp=2,tp=2>, [S(0), S(0)]>) -> !dist.tensor<8x2xf32, mesh<dp=2,tp=2>, [R, S(0)]>
    func.return(%y) : (!dist.tensor<8x2xf32, mesh<dp=2,tp=2>, [R, S(0)]>) -> ()
  }
}
