module {
  func.func @main(%x: tensor<3x3xf32>, %u: tensor<?x3xf32>, %q: tensor<1x2x3x4xbf16>) -> (tensor<f32>, tensor<?x3xf32>, tensor<1x2x3x4xbf16>) {
    %d = nn.det(%x) : (tensor<3x3xf32>) -> tensor<f32>
    %m = nn.matmul(%u, %x) : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
    %y, %pk, %pv, %qk = nn.attention(%q, %q, %q) : (tensor<1x2x3x4xbf16>, tensor<1x2x3x4xbf16>, tensor<1x2x3x4xbf16>) -> (tensor<1x2x3x4xbf16>, tensor<1x2x3x4xbf16>, tensor<1x2x3x4xbf16>, tensor<1x2x3x3xbf16>)
    func.return(%d, %m, %y) : (tensor<f32>, tensor<?x3xf32>, tensor<1x2x3x4xbf16>) -> ()
  }
}
