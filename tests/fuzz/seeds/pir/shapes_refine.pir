module {
  func.func @main(%x: tensor<Bx4xf32>, %w: tensor<4x8xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
    %y = nn.matmul(%x, %w) : (tensor<Bx4xf32>, tensor<4x8xf32>) -> tensor<?x?xf32>
    %r = nn.relu(%y) : (tensor<?x?xf32>) -> tensor<?x?xf32>
    %t = nn.transpose(%r) {perm = [1, 0]} : (tensor<?x?xf32>) -> tensor<?x?xf32>
    func.return(%r, %t) : (tensor<?x?xf32>, tensor<?x?xf32>) -> ()
  }
  func.func @prims(%a: tensor<Sx3xf32>, %shape: tensor<2xi64>) -> (tensor<*xf32>, tensor<Bx3xf32>) {
    %e = prim.exp(%a) : (tensor<Sx3xf32>) -> tensor<*xf32>
    %n = prim.neg(%e) : (tensor<*xf32>) -> tensor<?x3xf32>
    %t = prim.transpose(%n) {permutation = [1, 0]} : (tensor<?x3xf32>) -> tensor<*xf32>
    %g = nn.reshape(%a, %shape) : (tensor<Sx3xf32>, tensor<2xi64>) -> tensor<Bx3xf32>
    func.return(%t, %g) : (tensor<*xf32>, tensor<Bx3xf32>) -> ()
  }
  func.func @backward(%data: tensor<3x4x5xf32>, %axes: tensor<2xi64>) -> (tensor<5xf32>) {
    %sum = nn.reduce_sum(%data, %axes) {keepdims = false} : (tensor<3x4x5xf32>, tensor<2xi64>) -> tensor<?xf32>
    %log = nn.log(%sum) : (tensor<?xf32>) -> tensor<5xf32>
    func.return(%log) : (tensor<5xf32>) -> ()
  }
}
