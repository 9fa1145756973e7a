// RUN: not pir verify %s 2>&1 | filecheck %s
// Shapes that do not broadcast fail the type rule, with the op's location.

// CHECK: pir: error: {{.*}}:[[# @LINE + 3]]:10: nn.mul "/mul": dims 3 and 4 do not broadcast
module {
  func.func @main(%x: tensor<3xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>) {
    %z = nn.mul(%x, %y) : (tensor<3xf32>, tensor<4xf32>) -> tensor<4xf32> loc("/mul")
    func.return(%z) : (tensor<4xf32>) -> ()
  }
}
