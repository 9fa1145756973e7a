// RUN: pir optimize %s -p shapes | filecheck %s
// Unknown dims (?) take what each op's type rule knows, in program order, so a refined
// result refines its users; the function's result types follow the returned values.

// CHECK-LABEL: func.func @main(%x: tensor<Bx4xf32>, %w: tensor<4x8xf32>) -> (tensor<Bx8xf32>, tensor<8xBxf32>) {
// CHECK-NEXT:    %y = nn.matmul(%x, %w) : (tensor<Bx4xf32>, tensor<4x8xf32>) -> tensor<Bx8xf32>
// CHECK-NEXT:    %r = nn.relu(%y) : (tensor<Bx8xf32>) -> tensor<Bx8xf32>
// CHECK-NEXT:    %t = nn.transpose(%r) {perm = [1, 0]} : (tensor<Bx8xf32>) -> tensor<8xBxf32>
// CHECK-NEXT:    func.return(%r, %t) : (tensor<Bx8xf32>, tensor<8xBxf32>) -> ()

// Unranked results become ranked; prim ops (strict shapes) are refined the same way, and a
// declared dim the rule cannot know (%g's B) stays.
// CHECK-LABEL: func.func @prims(%a: tensor<Sx3xf32>, %shape: tensor<2xi64>) -> (tensor<3xSxf32>, tensor<Bx3xf32>) {
// CHECK-NEXT:    %e = prim.exp(%a) : (tensor<Sx3xf32>) -> tensor<Sx3xf32>
// CHECK-NEXT:    %n = prim.neg(%e) : (tensor<Sx3xf32>) -> tensor<Sx3xf32>
// CHECK-NEXT:    %t = prim.transpose(%n) {permutation = [1, 0]} : (tensor<Sx3xf32>) -> tensor<3xSxf32>
// CHECK-NEXT:    %g = nn.reshape(%a, %shape) : (tensor<Sx3xf32>, tensor<2xi64>) -> tensor<Bx3xf32>
// Backwards: the log has its operand's shape, and its declared type knows what the sum's
// type rule cannot (the axes are an input), so the sum's result is refined to 5.
// CHECK-LABEL: func.func @backward(%data: tensor<3x4x5xf32>, %axes: tensor<2xi64>) -> (tensor<5xf32>) {
// CHECK-NEXT:    %sum = nn.reduce_sum(%data, %axes) {keepdims = false} : (tensor<3x4x5xf32>, tensor<2xi64>) -> tensor<5xf32>
// CHECK-NEXT:    %log = nn.log(%sum) : (tensor<5xf32>) -> tensor<5xf32>
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
