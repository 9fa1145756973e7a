module {
  func.func @main(%x: tensor<Bx3xf32>, %q: tensor<Bx3xi8>, %s: tensor<3xf32>, %z: tensor<3xi8>) -> (tensor<Bx3xui8>, tensor<Bx3xf32>, tensor<5xf32>, tensor<Bx3xf32>, tensor<2x2xf32>) {
    %scale = builtin.constant() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %zp = builtin.constant() {value = dense<128> : tensor<ui8>} : () -> tensor<ui8>
    %n = builtin.constant() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %ql = nn.quantize_linear(%x, %scale, %zp) : (tensor<Bx3xf32>, tensor<f32>, tensor<ui8>) -> tensor<Bx3xui8>
    %dq = nn.dequantize_linear(%q, %s, %z) {axis = -1} : (tensor<Bx3xi8>, tensor<3xf32>, tensor<3xi8>) -> tensor<Bx3xf32>
    %hann = nn.hann_window(%n) : (tensor<i64>) -> tensor<5xf32>
    %drop, %mask = nn.dropout(%x) : (tensor<Bx3xf32>) -> (tensor<Bx3xf32>, tensor<Bx3xi1>)
    %r = nn.random_normal() {shape = [2, 2], seed = 7.0} : () -> tensor<2x2xf32>
    func.return(%ql, %dq, %hann, %drop, %r) : (tensor<Bx3xui8>, tensor<Bx3xf32>, tensor<5xf32>, tensor<Bx3xf32>, tensor<2x2xf32>) -> ()
  }
}
