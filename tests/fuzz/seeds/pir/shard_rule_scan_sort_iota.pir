module {
  func.func @main(%x: tensor<8x6xf32>) -> (tensor<8x6xf32>, tensor<8xi64>, tensor<8x6xf32>, tensor<8x6xi64>, tensor<8x6xf32>) {
    %c = prim.cumsum(%x) {axis = 1} : (tensor<8x6xf32>) -> tensor<8x6xf32>
    %a = prim.argmax(%x) {axis = 1} : (tensor<8x6xf32>) -> tensor<8xi64>
    %v, %vi = prim.sort(%x) {axis = 1} : (tensor<8x6xf32>) -> (tensor<8x6xf32>, tensor<8x6xi64>)
    %k = prim.iota() {dimension = 1} : () -> tensor<8x6xf32>
    func.return(%c, %a, %v, %vi, %k) : (tensor<8x6xf32>, tensor<8xi64>, tensor<8x6xf32>, tensor<8x6xi64>, tensor<8x6xf32>) -> ()
  }
}
