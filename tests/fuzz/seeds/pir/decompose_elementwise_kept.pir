module {
  func.func @main(%x: tensor<3xf32>) -> (tensor<3xi1>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>) {
    %s = nn.cast(%x) {to = str} : (tensor<3xf32>) -> tensor<3xstr>
    %e = nn.equal(%s, %s) : (tensor<3xstr>, tensor<3xstr>) -> tensor<3xi1>
    %b = nn.bit_cast(%x) {to = i32} : (tensor<3xf32>) -> tensor<3xi32>
    %i = nn.identity(%x) : (tensor<3xf32>) -> tensor<3xf32>
    %n = nn.neg(%i) : (tensor<3xf32>) -> tensor<3xf32>
    %out = nn.identity(%x) : (tensor<3xf32>) -> tensor<3xf32>
    func.return(%e, %b, %n, %out) : (tensor<3xi1>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>) -> ()
  }
}
