// RUN: pir optimize %s -p canonicalize | filecheck %s
// Shape chains on prim ops.  reshape and broadcast_in_dim declare their result type, so a
// chain of two is always one op; a no-op needs the operand's own (fully known) shape.

module {
  // CHECK-LABEL: func.func @reshape_reshape(
  // CHECK-NEXT:    %b = prim.reshape(%x) : (tensor<Bx2x6xf32>) -> tensor<Bx3x4xf32>
  // CHECK-NEXT:    func.return(%b)
  func.func @reshape_reshape(%x: tensor<Bx2x6xf32>) -> (tensor<Bx3x4xf32>) {
    %a = prim.reshape(%x) : (tensor<Bx2x6xf32>) -> tensor<Bx12xf32>
    %b = prim.reshape(%a) : (tensor<Bx12xf32>) -> tensor<Bx3x4xf32>
    func.return(%b) : (tensor<Bx3x4xf32>) -> ()
  }
  // Back to x's shape: nothing at all.
  // CHECK-LABEL: func.func @reshape_round_trip(
  // CHECK-NEXT:    %r = prim.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @reshape_round_trip(%x: tensor<Bx2x6xf32>) -> (tensor<Bx2x6xf32>) {
    %a = prim.reshape(%x) : (tensor<Bx2x6xf32>) -> tensor<Bx12xf32>
    %b = prim.reshape(%a) : (tensor<Bx12xf32>) -> tensor<Bx2x6xf32>
    %r = prim.exp(%b) : (tensor<Bx2x6xf32>) -> tensor<Bx2x6xf32>
    func.return(%r) : (tensor<Bx2x6xf32>) -> ()
  }
  // CHECK-LABEL: func.func @transpose_transpose(
  // CHECK-NEXT:    %b = prim.transpose(%x) {permutation = [2, 1, 0]} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  // CHECK-NEXT:    %r = prim.exp(%y)
  // CHECK-NEXT:    func.return(%b, %r)
  func.func @transpose_transpose(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) -> (tensor<4x3x2xf32>, tensor<2x3x4xf32>) {
    %a = prim.transpose(%x) {permutation = [1, 0, 2]} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
    %b = prim.transpose(%a) {permutation = [2, 0, 1]} : (tensor<3x2x4xf32>) -> tensor<4x3x2xf32>
    %c = prim.transpose(%y) {permutation = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
    %d = prim.transpose(%c) {permutation = [2, 0, 1]} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
    %r = prim.exp(%d) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    func.return(%b, %r) : (tensor<4x3x2xf32>, tensor<2x3x4xf32>) -> ()
  }
  // Operand dim i goes to dims1[i], then to dims2[dims1[i]]: [1] then [0, 2] is [2].
  // (%like only gives B a size when the function runs.)
  // CHECK-LABEL: func.func @broadcast_broadcast(
  // CHECK-NEXT:    %b = prim.broadcast_in_dim(%x) {broadcast_dimensions = [2]} : (tensor<3xf32>) -> tensor<Bx2x3xf32>
  // CHECK-NEXT:    func.return(%b)
  func.func @broadcast_broadcast(%x: tensor<3xf32>, %like: tensor<Bxf32>) -> (tensor<Bx2x3xf32>) {
    %a = prim.broadcast_in_dim(%x) {broadcast_dimensions = [1]} : (tensor<3xf32>) -> tensor<Bx3xf32>
    %b = prim.broadcast_in_dim(%a) {broadcast_dimensions = [0, 2]} : (tensor<Bx3xf32>) -> tensor<Bx2x3xf32>
    func.return(%b) : (tensor<Bx2x3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @broadcast_same_shape(
  // CHECK-NEXT:    %r = prim.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @broadcast_same_shape(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %a = prim.broadcast_in_dim(%x) {broadcast_dimensions = [0, 1]} : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = prim.exp(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // Dims [1, 0] onto the same type transpose a square matrix: it stays.
  // CHECK-LABEL: func.func @broadcast_transposes(
  // CHECK-NEXT:    %a = prim.broadcast_in_dim(%x) {broadcast_dimensions = [1, 0]}
  func.func @broadcast_transposes(%x: tensor<3x3xf32>) -> (tensor<3x3xf32>) {
    %a = prim.broadcast_in_dim(%x) {broadcast_dimensions = [1, 0]} : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %r = prim.exp(%a) : (tensor<3x3xf32>) -> tensor<3x3xf32>
    func.return(%r) : (tensor<3x3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @concat_slice(
  // CHECK-NEXT:    %r = prim.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @concat_slice(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %a = prim.concat(%x) {dimension = 0} : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %b = prim.slice(%a) {start_indices = [0], limit_indices = [3], axes = [1]} : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = prim.exp(%b) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @slice_part(
  // CHECK-NEXT:    %b = prim.slice(%x)
  func.func @slice_part(%x: tensor<Bx3xf32>) -> (tensor<Bx2xf32>) {
    %b = prim.slice(%x) {start_indices = [1], limit_indices = [3], axes = [1]} : (tensor<Bx3xf32>) -> tensor<Bx2xf32>
    func.return(%b) : (tensor<Bx2xf32>) -> ()
  }
}
