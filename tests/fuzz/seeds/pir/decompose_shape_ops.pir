module {
  func.func @shape(%x: tensor<Bx3xSxf32>) -> (tensor<3xi64>, tensor<Sxi64>) {
    %s = nn.shape(%x) : (tensor<Bx3xSxf32>) -> tensor<3xi64>
    %zero = builtin.constant() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %one = builtin.constant() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %two = builtin.constant() {value = dense<2> : tensor<1xi64>} : () -> tensor<1xi64>
    %n = nn.gather(%s, %two) : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
    %m = nn.squeeze(%n) : (tensor<1xi64>) -> tensor<i64>
    %r = nn.range(%zero, %m, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<Sxi64>
    func.return(%s, %r) : (tensor<3xi64>, tensor<Sxi64>) -> ()
  }
  func.func @trilu(%x: tensor<Bx4x5xf32>) -> (tensor<Bx4x5xf32>) {
    %t = nn.trilu(%x) {upper = false} : (tensor<Bx4x5xf32>) -> tensor<Bx4x5xf32>
    func.return(%t) : (tensor<Bx4x5xf32>) -> ()
  }
  func.func @nonzero(%x: tensor<4xf32>) -> (tensor<1x?xi64>) {
    %z = nn.non_zero(%x) : (tensor<4xf32>) -> tensor<1x?xi64>
    func.return(%z) : (tensor<1x?xi64>) -> ()
  }
}
