module {
  func.func @collectives(%x: !dist.tensor<8x4xf32, mesh<dp=2, tp=2>, [R,P]>) -> (!dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), S(0)]>) {
    %r = dist.all_reduce(%x) {mesh_axis = "tp"} : (!dist.tensor<8x4xf32, mesh<dp=2, tp=2>, [R,P]>) -> !dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [R, R]>
    %s = dist.reshard(%r) : (!dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [R, R]>) -> !dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [ S(0) , S(1) ]>
    %a = dist.all_to_all(%s) {mesh_axis = "tp", dim = 0} : (!dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), S(1)]>) -> !dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), S(0)]>
    %g = dist.all_gather(%a) {mesh_axis = "tp"} : (!dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), S(0)]>) -> !dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), R]>
    %p = dist.reshard(%g) : (!dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> !dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), P(max)]>
    %q = dist.reduce_scatter(%p) {mesh_axis = "tp", dim = 0} : (!dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), P(max)]>) -> !dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), S(0)]>
    func.return(%q) : (!dist.tensor<8x4xf32, mesh<dp=2,tp=2>, [S(0), S(0)]>) -> ()
  }

  func.func @entry_and_exit(%c: tensor<Bx6xf32>) -> (tensor<Bx6xf32>) {
    %w = dist.reshard(%c) : (tensor<Bx6xf32>) -> !dist.tensor<Bx6xf32, mesh<dp=2,tp=2>, [R, S(1)]>
    %b = dist.broadcast(%w) {mesh_axis = "dp", root = 1} : (!dist.tensor<Bx6xf32, mesh<dp=2,tp=2>, [R, S(1)]>) -> !dist.tensor<Bx6xf32, mesh<dp=2,tp=2>, [R, S(1)]>
    dist.send(%b) {dest = 1, mesh_axis = "dp", source = 0, tag = 0} : (!dist.tensor<Bx6xf32, mesh<dp=2,tp=2>, [R, S(1)]>) -> ()
    %v = dist.recv() {dest = 1, mesh_axis = "dp", source = 0, tag = 0} : () -> !dist.tensor<Bx6xf32, mesh<dp=2,tp=2>, [R, S(1)]>
    %y = dist.reshard(%v) : (!dist.tensor<Bx6xf32, mesh<dp=2,tp=2>, [R, S(1)]>) -> tensor<Bx6xf32>
    func.return(%y) : (tensor<Bx6xf32>) -> ()
  }
}
