// RUN: not pir verify %s 2>&1 | filecheck %s
// A declared result type that contradicts the op's type rule is rejected, naming the op.

// CHECK: pir: error: {{.*}}invalid_type_rule.pir:7:10: nn.add "/add": result 0 is declared tensor<4x3xf32>, but the type rule infers tensor<2x3xf32>
module {
  func.func @main(%x: tensor<2x3xf32>) -> (tensor<4x3xf32>) {
    %y = nn.add(%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32> loc("/add")
    func.return(%y) : (tensor<4x3xf32>) -> ()
  }
}
