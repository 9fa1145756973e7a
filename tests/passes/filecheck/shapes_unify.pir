// RUN: pir optimize %s -p shapes | filecheck %s
// Dims that must be equal are unified: a non-input symbol is renamed, everywhere in the
// function, to the first name of its class: a static size, else an input symbol, else the
// symbol seen first, ONNX's placeholders unk__N last.

// unk__1 is declared where the type rule knows B, unk__2 where it knows unk__1: both are B.
// unk__3 (a reshape to a computed shape, which no rule can know) is the other contracting
// dim of the matmul, so it is B too.
// CHECK-LABEL: func.func @placeholders(%x: tensor<Bx4xf32>, %y: tensor<Cx4xf32>, %s: tensor<2xi64>) -> (tensor<4x4xf32>, tensor<Bx4xf32>) {
// CHECK-NEXT:    %h = nn.relu(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32>
// CHECK-NEXT:    %t = nn.transpose(%h) {perm = [1, 0]} : (tensor<Bx4xf32>) -> tensor<4xBxf32>
// CHECK-NEXT:    %k = nn.reshape(%y, %s) : (tensor<Cx4xf32>, tensor<2xi64>) -> tensor<Bx4xf32>
// CHECK-NEXT:    %m = nn.matmul(%t, %k) : (tensor<4xBxf32>, tensor<Bx4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    func.return(%m, %k) : (tensor<4x4xf32>, tensor<Bx4xf32>) -> ()

// Two non-input symbols that must be equal: the later one (T) becomes the earlier (S); one
// that must equal a size (U) becomes the size.  Nothing is required of the inputs.
// CHECK-LABEL: func.func @intermediates(%x: tensor<2x3xf32>, %s: tensor<2xi64>) -> (tensor<Sx6xf32>, tensor<2x6xf32>) {
// CHECK-NEXT:    %a = nn.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<Sx3xf32>
// CHECK-NEXT:    %b = nn.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<Sx3xf32>
// CHECK-NEXT:    %c = nn.concat(%a, %b) {axis = 1} : (tensor<Sx3xf32>, tensor<Sx3xf32>) -> tensor<Sx6xf32>
// CHECK-NEXT:    %d = nn.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
// CHECK-NEXT:    %e = nn.concat(%x, %d) {axis = 1} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    func.return(%c, %e) : (tensor<Sx6xf32>, tensor<2x6xf32>) -> ()
module {
  func.func @placeholders(%x: tensor<Bx4xf32>, %y: tensor<Cx4xf32>, %s: tensor<2xi64>) -> (tensor<4x4xf32>, tensor<unk__3x4xf32>) {
    %h = nn.relu(%x) : (tensor<Bx4xf32>) -> tensor<unk__1x4xf32>
    %t = nn.transpose(%h) {perm = [1, 0]} : (tensor<unk__1x4xf32>) -> tensor<4xunk__2xf32>
    %k = nn.reshape(%y, %s) : (tensor<Cx4xf32>, tensor<2xi64>) -> tensor<unk__3x4xf32>
    %m = nn.matmul(%t, %k) : (tensor<4xunk__2xf32>, tensor<unk__3x4xf32>) -> tensor<4x4xf32>
    func.return(%m, %k) : (tensor<4x4xf32>, tensor<unk__3x4xf32>) -> ()
  }
  func.func @intermediates(%x: tensor<2x3xf32>, %s: tensor<2xi64>) -> (tensor<?x6xf32>, tensor<?x6xf32>) {
    %a = nn.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<Sx3xf32>
    %b = nn.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<Tx3xf32>
    %c = nn.concat(%a, %b) {axis = 1} : (tensor<Sx3xf32>, tensor<Tx3xf32>) -> tensor<?x6xf32>
    %d = nn.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<Ux3xf32>
    %e = nn.concat(%x, %d) {axis = 1} : (tensor<2x3xf32>, tensor<Ux3xf32>) -> tensor<?x6xf32>
    func.return(%c, %e) : (tensor<?x6xf32>, tensor<?x6xf32>) -> ()
  }
}
