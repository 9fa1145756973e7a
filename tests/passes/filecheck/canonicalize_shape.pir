// RUN: pir optimize %s -p canonicalize | filecheck %s
// Shape ops on nn: reshape, squeeze/unsqueeze and transpose chains, broadcasts that do
// nothing, a concat of one operand and a whole-tensor slice.

module {
  // A chain of reshape-like ops is one reshape of the first input.
  // CHECK-LABEL: func.func @reshape_reshape(
  // CHECK-NEXT:    %s2 = builtin.constant() {value = dense<[4, 6]> : tensor<2xi64>}
  // CHECK-NEXT:    %b = nn.reshape(%x, %s2) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  // CHECK-NEXT:    func.return(%b)
  func.func @reshape_reshape(%x: tensor<2x3x4xf32>) -> (tensor<4x6xf32>) {
    %s1 = builtin.constant() {value = dense<[6, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
    %s2 = builtin.constant() {value = dense<[4, 6]> : tensor<2xi64>} : () -> tensor<2xi64>
    %a = nn.reshape(%x, %s1) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
    %b = nn.reshape(%a, %s2) : (tensor<6x4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
    func.return(%b) : (tensor<4x6xf32>) -> ()
  }
  // The inner op may be a flatten or an unsqueeze; -1 in the outer shape is fine.
  // CHECK-LABEL: func.func @flatten_reshape(
  // CHECK-NOT:     nn.flatten
  // CHECK:         %b = nn.reshape(%x, %s) : (tensor<Bx3x4xf32>, tensor<3xi64>) -> tensor<Bx2x6xf32>
  func.func @flatten_reshape(%x: tensor<Bx3x4xf32>) -> (tensor<Bx2x6xf32>) {
    %s = builtin.constant() {value = dense<[-1, 2, 6]> : tensor<3xi64>} : () -> tensor<3xi64>
    %a = nn.flatten(%x) {axis = 1} : (tensor<Bx3x4xf32>) -> tensor<Bx12xf32>
    %b = nn.reshape(%a, %s) : (tensor<Bx12xf32>, tensor<3xi64>) -> tensor<Bx2x6xf32>
    func.return(%b) : (tensor<Bx2x6xf32>) -> ()
  }
  // A 0 copies the dim of the reshape's own input: it can not move onto another one.
  // CHECK-LABEL: func.func @reshape_zero_copy(
  // CHECK:         %a = nn.reshape(%x, %s1)
  // CHECK-NEXT:    %b = nn.reshape(%a, %s2)
  func.func @reshape_zero_copy(%x: tensor<2x3x4xf32>) -> (tensor<6x2x2xf32>) {
    %s1 = builtin.constant() {value = dense<[6, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
    %s2 = builtin.constant() {value = dense<[0, 2, -1]> : tensor<3xi64>} : () -> tensor<3xi64>
    %a = nn.reshape(%x, %s1) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
    %b = nn.reshape(%a, %s2) : (tensor<6x4xf32>, tensor<3xi64>) -> tensor<6x2x2xf32>
    func.return(%b) : (tensor<6x2x2xf32>) -> ()
  }
  // CHECK-LABEL: func.func @reshape_same_type(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @reshape_same_type(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %s = builtin.constant() {value = dense<[-1, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
    %a = nn.reshape(%x, %s) : (tensor<Bx3xf32>, tensor<2xi64>) -> tensor<Bx3xf32>
    %r = nn.exp(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // Two unknown dims do not prove the shape unchanged (2x6 may become 6x2).
  // CHECK-LABEL: func.func @reshape_two_unknown(
  // CHECK-NEXT:    %a = nn.reshape(%x, %s)
  func.func @reshape_two_unknown(%x: tensor<?x?xf32>, %s: tensor<2xi64>) -> (tensor<?x?xf32>) {
    %a = nn.reshape(%x, %s) : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    %r = nn.exp(%a) : (tensor<?x?xf32>) -> tensor<?x?xf32>
    func.return(%r) : (tensor<?x?xf32>) -> ()
  }
  // CHECK-LABEL: func.func @squeeze_unsqueeze(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    %s = nn.exp(%y)
  // CHECK-NEXT:    func.return(%r, %s)
  func.func @squeeze_unsqueeze(%x: tensor<Bx3xf32>, %y: tensor<1xBx1xf32>) -> (tensor<Bx3xf32>, tensor<1xBx1xf32>) {
    %ax = builtin.constant() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
    %u = nn.unsqueeze(%x, %ax) : (tensor<Bx3xf32>, tensor<1xi64>) -> tensor<Bx1x3xf32>
    %a = nn.squeeze(%u, %ax) : (tensor<Bx1x3xf32>, tensor<1xi64>) -> tensor<Bx3xf32>
    %r = nn.exp(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %ax2 = builtin.constant() {value = dense<[0, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %q = nn.squeeze(%y, %ax2) : (tensor<1xBx1xf32>, tensor<2xi64>) -> tensor<Bxf32>
    %b = nn.unsqueeze(%q, %ax2) : (tensor<Bxf32>, tensor<2xi64>) -> tensor<1xBx1xf32>
    %s = nn.exp(%b) : (tensor<1xBx1xf32>) -> tensor<1xBx1xf32>
    func.return(%r, %s) : (tensor<Bx3xf32>, tensor<1xBx1xf32>) -> ()
  }
  // Squeezing other axes than were inserted is a real reshape.
  // CHECK-LABEL: func.func @squeeze_other_axis(
  // CHECK:         nn.unsqueeze
  // CHECK-NEXT:    nn.squeeze
  func.func @squeeze_other_axis(%x: tensor<1x3xf32>) -> (tensor<3x1xf32>) {
    %ax0 = builtin.constant() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
    %ax1 = builtin.constant() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
    %u = nn.unsqueeze(%x, %ax0) : (tensor<1x3xf32>, tensor<1xi64>) -> tensor<1x3x1xf32>
    %a = nn.squeeze(%u, %ax1) : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<3x1xf32>
    func.return(%a) : (tensor<3x1xf32>) -> ()
  }
  // Permutations compose: [1, 2, 0] then [2, 0, 1] is the identity, then nothing.
  // CHECK-LABEL: func.func @transpose_transpose(
  // CHECK-NEXT:    %b = nn.transpose(%x) {perm = [2, 1, 0]} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  // CHECK-NEXT:    %r = nn.exp(%y)
  // CHECK-NEXT:    func.return(%b, %r)
  func.func @transpose_transpose(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) -> (tensor<4x3x2xf32>, tensor<2x3x4xf32>) {
    %a = nn.transpose(%x) {perm = [1, 0, 2]} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
    %b = nn.transpose(%a) {perm = [2, 0, 1]} : (tensor<3x2x4xf32>) -> tensor<4x3x2xf32>
    %c = nn.transpose(%y) {perm = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
    %d = nn.transpose(%c) {perm = [2, 0, 1]} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
    %r = nn.exp(%d) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    func.return(%b, %r) : (tensor<4x3x2xf32>, tensor<2x3x4xf32>) -> ()
  }
  // Without perm, nn.transpose reverses the dims; twice is the identity.
  // CHECK-LABEL: func.func @transpose_default_perm(
  // CHECK-NEXT:    %r = nn.exp(%x)
  func.func @transpose_default_perm(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %a = nn.transpose(%x) : (tensor<Bx3xf32>) -> tensor<3xBxf32>
    %b = nn.transpose(%a) : (tensor<3xBxf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%b) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @transpose_identity(
  // CHECK-NEXT:    %r = nn.exp(%x)
  func.func @transpose_identity(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %a = nn.transpose(%x) {perm = [0, 1]} : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @expand_same_shape(
  // CHECK-NEXT:    %r = nn.exp(%x)
  func.func @expand_same_shape(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %s = builtin.constant() {value = dense<[1, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
    %a = nn.expand(%x, %s) : (tensor<Bx3xf32>, tensor<2xi64>) -> tensor<Bx3xf32>
    %r = nn.exp(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // A shape entry 4 may broadcast an unknown dim of size 1: the expand stays.
  // CHECK-LABEL: func.func @expand_unknown_dim(
  // CHECK-NEXT:    %s = builtin.constant()
  // CHECK-NEXT:    %a = nn.expand(%x, %s)
  func.func @expand_unknown_dim(%x: tensor<?x3xf32>) -> (tensor<?x3xf32>) {
    %s = builtin.constant() {value = dense<[4, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
    %a = nn.expand(%x, %s) : (tensor<?x3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
    %r = nn.exp(%a) : (tensor<?x3xf32>) -> tensor<?x3xf32>
    func.return(%r) : (tensor<?x3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @expand_expand(
  // CHECK-NEXT:    %s2 = builtin.constant()
  // CHECK-NEXT:    %b = nn.expand(%x, %s2) : (tensor<3xf32>, tensor<3xi64>) -> tensor<5x2x3xf32>
  // CHECK-NEXT:    func.return(%b)
  func.func @expand_expand(%x: tensor<3xf32>) -> (tensor<5x2x3xf32>) {
    %s1 = builtin.constant() {value = dense<[2, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %s2 = builtin.constant() {value = dense<[5, 2, 3]> : tensor<3xi64>} : () -> tensor<3xi64>
    %a = nn.expand(%x, %s1) : (tensor<3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
    %b = nn.expand(%a, %s2) : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<5x2x3xf32>
    func.return(%b) : (tensor<5x2x3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @concat_single(
  // CHECK-NEXT:    %r = nn.exp(%x)
  func.func @concat_single(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %a = nn.concat(%x) {axis = 1} : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // Start 0 (or clamped to 0), end at or past the dim (or INT64_MAX), step 1.
  // CHECK-LABEL: func.func @slice_full(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    %s = nn.exp(%y)
  // CHECK-NEXT:    func.return(%r, %s)
  func.func @slice_full(%x: tensor<Bx3xf32>, %y: tensor<4x3xf32>) -> (tensor<Bx3xf32>, tensor<4x3xf32>) {
    %zero = builtin.constant() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
    %end = builtin.constant() {value = dense<[9223372036854775807]> : tensor<1xi64>} : () -> tensor<1xi64>
    %axis = builtin.constant() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
    %a = nn.slice(%x, %zero, %end, %axis) {operand_segments = [1, 1, 1, 1, 0]} : (tensor<Bx3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<Bx3xf32>
    %r = nn.exp(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %starts = builtin.constant() {value = dense<[-10, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
    %ends = builtin.constant() {value = dense<[4, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
    %b = nn.slice(%y, %starts, %ends) {operand_segments = [1, 1, 1, 0, 0]} : (tensor<4x3xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x3xf32>
    %s = nn.exp(%b) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    func.return(%r, %s) : (tensor<Bx3xf32>, tensor<4x3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @slice_part(
  // CHECK:         nn.slice
  func.func @slice_part(%y: tensor<4x3xf32>) -> (tensor<3x3xf32>) {
    %starts = builtin.constant() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
    %ends = builtin.constant() {value = dense<[4]> : tensor<1xi64>} : () -> tensor<1xi64>
    %b = nn.slice(%y, %starts, %ends) {operand_segments = [1, 1, 1, 0, 0]} : (tensor<4x3xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x3xf32>
    func.return(%b) : (tensor<3x3xf32>) -> ()
  }
}
