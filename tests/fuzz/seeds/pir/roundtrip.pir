module @roundtrip {
  func.func @main(%x: tensor<Bx3xf32>, %"onnx::y": tensor<3xf32>) -> (tensor<Bx3xf32>) {
    %c = builtin.constant() {value = dense<[2.0, 2.0, 2.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %s = nn.add(%x,   %"onnx::y") : (tensor<Bx3xf32>, tensor<3xf32>) -> tensor<Bx3xf32>   loc("/add")
    %0 = nn.mul(%s, %c) : (tensor<Bx3xf32>, tensor<3xf32>) -> tensor<Bx3xf32>
    func.return(%0) : (tensor<Bx3xf32>) -> ()
  }
}
