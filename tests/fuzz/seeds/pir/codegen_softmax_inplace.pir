module @test_softmax_inplace {
  func.func @main(%x: tensor<Nx256xf32>) -> (tensor<Nx256xf32>) {
    %y = fusion.group(%x) ({
    ^bb0(%x_1: tensor<Nx256xf32>):
      %m = prim.reduce_max(%x_1) {axes = [1], keepdims = true} : (tensor<Nx256xf32>) -> tensor<Nx1xf32>
      %mb = prim.broadcast_in_dim(%m) {broadcast_dimensions = [0, 1]} : (tensor<Nx1xf32>) -> tensor<Nx256xf32>
      %d = prim.sub(%x_1, %mb) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %e = prim.exp(%d) : (tensor<Nx256xf32>) -> tensor<Nx256xf32>
      %s = prim.reduce_sum(%e) {axes = [1], keepdims = true} : (tensor<Nx256xf32>) -> tensor<Nx1xf32>
      %r = prim.reciprocal(%s) : (tensor<Nx1xf32>) -> tensor<Nx1xf32>
      %rb = prim.broadcast_in_dim(%r) {broadcast_dimensions = [0, 1]} : (tensor<Nx1xf32>) -> tensor<Nx256xf32>
      %out = prim.mul(%e, %rb) : (tensor<Nx256xf32>, tensor<Nx256xf32>) -> tensor<Nx256xf32>
      fusion.yield(%out) : (tensor<Nx256xf32>) -> ()
    }) {kind = "reduction"} : (tensor<Nx256xf32>) -> tensor<Nx256xf32>
    func.return(%y) : (tensor<Nx256xf32>) -> ()
  }
}
