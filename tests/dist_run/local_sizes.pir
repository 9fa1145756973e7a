// A global-view program on dp=2,tp=2 whose per-rank form needs local sizes in attributes
// (slice limits, dynamic_slice sizes, declared types of reshape, iota, broadcast_in_dim)
// and uses every collective but send/recv.
module @local_sizes {
  func.func @main(%x: !dist.tensor<8x12xf32, mesh<dp=2,tp=2>, [S(0), R]>, %s: tensor<3xi32>) -> (!dist.tensor<8x3x4xf32, mesh<dp=2,tp=2>, [R, R]>, !dist.tensor<8x3xf32, mesh<dp=2,tp=2>, [S(0), R]>) {
    %a = prim.slice(%x) {limit_indices = [8, 10], start_indices = [0, 2]} : (!dist.tensor<8x12xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> !dist.tensor<8x8xf32, mesh<dp=2,tp=2>, [S(0), R]>
    %b = prim.reshape(%a) : (!dist.tensor<8x8xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> !dist.tensor<8x2x4xf32, mesh<dp=2,tp=2>, [S(0), R]>
    %c = prim.iota() {dimension = 1} : () -> !dist.tensor<8x2x4xf32, mesh<dp=2,tp=2>, [S(0), R]>
    %d = prim.add(%b, %c) : (!dist.tensor<8x2x4xf32, mesh<dp=2,tp=2>, [S(0), R]>, !dist.tensor<8x2x4xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> !dist.tensor<8x2x4xf32, mesh<dp=2,tp=2>, [S(0), R]>
    %e = dist.all_to_all(%d) {dim = 2, mesh_axis = "dp"} : (!dist.tensor<8x2x4xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> !dist.tensor<8x2x4xf32, mesh<dp=2,tp=2>, [S(2), R]>
    %f = prim.dynamic_slice(%e, %s) {slice_sizes = [8, 1, 4]} : (!dist.tensor<8x2x4xf32, mesh<dp=2,tp=2>, [S(2), R]>, tensor<3xi32>) -> !dist.tensor<8x1x4xf32, mesh<dp=2,tp=2>, [S(2), R]>
    %g = prim.broadcast_in_dim(%f) {broadcast_dimensions = [0, 1, 2]} : (!dist.tensor<8x1x4xf32, mesh<dp=2,tp=2>, [S(2), R]>) -> !dist.tensor<8x3x4xf32, mesh<dp=2,tp=2>, [S(2), R]>
    %h = dist.all_gather(%g) {mesh_axis = "dp"} : (!dist.tensor<8x3x4xf32, mesh<dp=2,tp=2>, [S(2), R]>) -> !dist.tensor<8x3x4xf32, mesh<dp=2,tp=2>, [R, R]>
    %y = dist.broadcast(%h) {mesh_axis = "tp", root = 1} : (!dist.tensor<8x3x4xf32, mesh<dp=2,tp=2>, [R, R]>) -> !dist.tensor<8x3x4xf32, mesh<dp=2,tp=2>, [R, R]>
    %r = prim.reduce_sum(%g) {axes = [2]} : (!dist.tensor<8x3x4xf32, mesh<dp=2,tp=2>, [S(2), R]>) -> !dist.tensor<8x3xf32, mesh<dp=2,tp=2>, [P(sum), R]>
    %z = dist.reduce_scatter(%r) {dim = 0, mesh_axis = "dp"} : (!dist.tensor<8x3xf32, mesh<dp=2,tp=2>, [P(sum), R]>) -> !dist.tensor<8x3xf32, mesh<dp=2,tp=2>, [S(0), R]>
    func.return(%y, %z) : (!dist.tensor<8x3x4xf32, mesh<dp=2,tp=2>, [R, R]>, !dist.tensor<8x3xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> ()
  }
}
