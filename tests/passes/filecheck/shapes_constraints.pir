// RUN: pir optimize %s -p shapes | filecheck %s
// RUN: pir optimize %s -p 'shapes{broadcast-equal}' | filecheck %s --check-prefix=EQ
// Input symbols are the function's interface and are never renamed: what the ops require of
// them is written to pir.dim_constraints.  Broadcasting needs dims equal or 1, which is
// recorded, not unified (a symbol may be 1 at run time), unless broadcast-equal assumes no
// symbol is 1 (as ONNX Runtime's symbolic shape inference does).

// CHECK-LABEL: func.func @main
// CHECK-SAME:    -> (tensor<Nx8xf32>, tensor<Nx3xf32>, tensor<?x4xf32>, tensor<Nx4xf32>)
// CHECK-SAME:    attributes {pir.dim_constraints = ["M == N", "K == 8", "broadcastable(M, S)"]}
// CHECK-NEXT:    %c = nn.concat(%a, %b) {axis = 1} : (tensor<Nx4xf32>, tensor<Mx4xf32>) -> tensor<Nx8xf32>
// CHECK-NEXT:    %m = nn.matmul(%c, %w) : (tensor<Nx8xf32>, tensor<Kx3xf32>) -> tensor<Nx3xf32>
// CHECK-NEXT:    %s = nn.add(%x, %b) : (tensor<Sx4xf32>, tensor<Mx4xf32>) -> tensor<?x4xf32>
// M and N are one class, so their broadcast is that class's dim.
// CHECK-NEXT:    %p = nn.mul(%a, %b) : (tensor<Nx4xf32>, tensor<Mx4xf32>) -> tensor<Nx4xf32>

// EQ-LABEL: func.func @main
// EQ-SAME:    -> (tensor<Nx8xf32>, tensor<Nx3xf32>, tensor<Nx4xf32>, tensor<Nx4xf32>)
// EQ-SAME:    attributes {pir.dim_constraints = ["M == N", "K == 8", "S == N"]}
// EQ:         %s = nn.add(%x, %b) : (tensor<Sx4xf32>, tensor<Mx4xf32>) -> tensor<Nx4xf32>
module {
  func.func @main(%a: tensor<Nx4xf32>, %b: tensor<Mx4xf32>, %w: tensor<Kx3xf32>, %x: tensor<Sx4xf32>) -> (tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
    %c = nn.concat(%a, %b) {axis = 1} : (tensor<Nx4xf32>, tensor<Mx4xf32>) -> tensor<?x8xf32>
    %m = nn.matmul(%c, %w) : (tensor<?x8xf32>, tensor<Kx3xf32>) -> tensor<?x3xf32>
    %s = nn.add(%x, %b) : (tensor<Sx4xf32>, tensor<Mx4xf32>) -> tensor<?x4xf32>
    %p = nn.mul(%a, %b) : (tensor<Nx4xf32>, tensor<Mx4xf32>) -> tensor<?x4xf32>
    func.return(%c, %m, %s, %p) : (tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> ()
  }
}
