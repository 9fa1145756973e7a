// RUN: not pir verify %s 2>&1 | filecheck %s
// The function's declared outputs must match what it returns.

// CHECK: pir: error: {{.*}}invalid_return.pir:[[# @LINE + 2]]:3: func.func: func.return returns (tensor<2xf32>) but @main declares (tensor<2xf32>) -> (tensor<3xf32>)
module {
  func.func @main(%x: tensor<2xf32>) -> (tensor<3xf32>) {
    func.return(%x) : (tensor<2xf32>) -> ()
  }
}
