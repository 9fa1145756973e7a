module {
  func.func @main(%x: tensor<8x6xf32>) -> (tensor<8x6xf32>) {
    %r = prim.random_uniform() {seed = 7} : () -> tensor<8x6xf32>
    %y = prim.add(%x, %r) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
    func.return(%y) : (tensor<8x6xf32>) -> ()
  }
}
