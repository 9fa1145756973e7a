module {
  func.func @main(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>, %keep: tensor<4xi1>, %b: tensor<Bx3xf32>, %j: tensor<Bx3xi64>) -> (tensor<4x3xf32>, tensor<?x3xf32>, tensor<Bx3xf32>) {
    %m = nn.scatter_elements(%x, %i, %u) {reduction = "max"} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
    %c = nn.compress(%x, %keep) {axis = 0} : (tensor<4x3xf32>, tensor<4xi1>) -> tensor<?x3xf32>
    %g = nn.gather_elements(%b, %j) : (tensor<Bx3xf32>, tensor<Bx3xi64>) -> tensor<Bx3xf32>
    func.return(%m, %c, %g) : (tensor<4x3xf32>, tensor<?x3xf32>, tensor<Bx3xf32>) -> ()
  }
}
