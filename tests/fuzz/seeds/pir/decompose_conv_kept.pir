module {
  func.func @main(%x: tensor<1x2xHxWxf32>, %w: tensor<3x2x3x3xf32>, %s: tensor<1x2x4x4xf32>, %off: tensor<1x18x2x2xf32>) -> (tensor<1x3x?x?xf32>, tensor<1x2x?x?xf32>, tensor<1x2x3x3xi64>, tensor<1x3x2x2xf32>) {
    %c = nn.conv(%x, %w) {auto_pad = "SAME_UPPER"} : (tensor<1x2xHxWxf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x?x?xf32>
    %a = nn.average_pool(%x) {kernel_shape = [2, 2]} : (tensor<1x2xHxWxf32>) -> tensor<1x2x?x?xf32>
    %m, %i = nn.max_pool(%s) {kernel_shape = [2, 2]} : (tensor<1x2x4x4xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
    %d = nn.deform_conv(%s, %w, %off) : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<1x18x2x2xf32>) -> tensor<1x3x2x2xf32>
    func.return(%c, %a, %i, %d) : (tensor<1x3x?x?xf32>, tensor<1x2x?x?xf32>, tensor<1x2x3x3xi64>, tensor<1x3x2x2xf32>) -> ()
  }
}
