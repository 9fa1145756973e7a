module {
  func.func @main(%x: tensor<Bx3x4xf32>, %n: tensor<2x5xi32>) -> (tensor<3xf32>, tensor<Bx3xf32>, tensor<Bx1x4xf32>, tensor<Bx4xi64>, tensor<2x5xi32>, tensor<Bx3x2xf32>, tensor<Bx3x2xi64>) {
    %a02 = builtin.constant() {value = dense<[0, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %a2 = builtin.constant() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
    %a1 = builtin.constant() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
    %ax = builtin.constant() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %two = builtin.constant() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
    %mean = nn.reduce_mean(%x, %a02) {keepdims = false} : (tensor<Bx3x4xf32>, tensor<2xi64>) -> tensor<3xf32>
    %l2 = nn.reduce_l2(%x, %a2) {keepdims = false} : (tensor<Bx3x4xf32>, tensor<1xi64>) -> tensor<Bx3xf32>
    %lse = nn.reduce_log_sum_exp(%x, %a1) : (tensor<Bx3x4xf32>, tensor<1xi64>) -> tensor<Bx1x4xf32>
    %am = nn.arg_max(%x) {axis = -2, keepdims = false, select_last_index = true} : (tensor<Bx3x4xf32>) -> tensor<Bx4xi64>
    %cp = nn.cum_prod(%n, %ax) {exclusive = true} : (tensor<2x5xi32>, tensor<i64>) -> tensor<2x5xi32>
    %v, %i = nn.top_k(%x, %two) {largest = false} : (tensor<Bx3x4xf32>, tensor<1xi64>) -> (tensor<Bx3x2xf32>, tensor<Bx3x2xi64>)
    func.return(%mean, %l2, %lse, %am, %cp, %v, %i) : (tensor<3xf32>, tensor<Bx3xf32>, tensor<Bx1x4xf32>, tensor<Bx4xi64>, tensor<2x5xi32>, tensor<Bx3x2xf32>, tensor<Bx3x2xi64>) -> ()
  }
}
