module {
  func.func @main(%c: tensor<i1>, %a: tensor<3x3xf32>, %b: tensor<3x3xf32>, %q: tensor<3x4xi8>, %s: tensor<3x2xf32>) -> (tensor<3x3xf32>, tensor<2xf32>, tensor<3x4xf32>) {
    %r = nn.if(%c) ({
      %p = nn.matmul(%a, %b) : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
      nn.yield(%p) : (tensor<3x3xf32>) -> ()
    }, {
      nn.yield(%a) : (tensor<3x3xf32>) -> ()
    }) : (tensor<i1>) -> tensor<3x3xf32>
    %u = nn.random_uniform() {shape = [2]} : () -> tensor<2xf32>
    %d = nn.dequantize_linear(%q, %s) {block_size = 2} : (tensor<3x4xi8>, tensor<3x2xf32>) -> tensor<3x4xf32>
    func.return(%r, %u, %d) : (tensor<3x3xf32>, tensor<2xf32>, tensor<3x4xf32>) -> ()
  }
}
