module {
  func.func @main(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
    %e = nn.elu(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    %t = nn.tanh(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    %c = nn.clip(%x) {operand_segments = [1, 0, 0]} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    func.return(%e, %t, %c) : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> ()
  }
}
