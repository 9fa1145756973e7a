module @g attributes {pir.source = "seed"} {
  func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>) {
    %zero = builtin.constant() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32> loc("zero")
    %trip = builtin.constant() {value = dense<3> : tensor<i64>} : () -> tensor<i64> loc("trip")
    %s = nn.reduce_sum(%x) {keepdims = false} : (tensor<2xf32>) -> tensor<f32> loc("sum")
    %c = nn.greater(%s, %zero) : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("gt")
    %y = nn.if(%c) ({
      %a = nn.neg(%x) : (tensor<2xf32>) -> tensor<2xf32> loc("neg")
      nn.yield(%a) : (tensor<2xf32>) -> () loc("if")
    }, {
      %b = nn.abs(%x) : (tensor<2xf32>) -> tensor<2xf32> loc("abs")
      nn.yield(%b) : (tensor<2xf32>) -> () loc("if")
    }) : (tensor<i1>) -> tensor<2xf32> loc("if")
    %z = nn.loop(%trip, %y) ({
    ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %acc: tensor<2xf32>):
      %acc2 = nn.add(%acc, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("body_add")
      nn.yield(%cond, %acc2) : (tensor<i1>, tensor<2xf32>) -> () loc("loop")
    }) {operand_segments = [1, 0, 1]} : (tensor<i64>, tensor<2xf32>) -> tensor<2xf32> loc("loop")
    func.return(%z) : (tensor<2xf32>) -> ()
  }
}
