// RUN: not pir verify %s 2>&1 | filecheck %s
// A placement names a dim of the tensor, once per mesh axis.

// CHECK: pir: error: {{.*}}:[[# @LINE + 2]]:23: bad type '!dist.tensor<4x8xf32, mesh<dp=2,tp=2>, [R, S(2)]>': S(2) on mesh axis 'tp': the tensor has rank 2
module {
  func.func @main(%x: !dist.tensor<4x8xf32, mesh<dp=2,tp=2>, [R, S(2)]>) -> () {
    func.return() : () -> ()
  }
}
