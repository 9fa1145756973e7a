// RUN: not pir optimize %s -p shapes 2>&1 | filecheck %s
// Equalities that make two sizes equal mean the function can never run: an error at the op
// that completes the contradiction.

// CHECK: pir: error: {{.*}}shapes_invalid.pir:[[# @LINE + 4]]:10: pass 'shapes': nn.concat "/c2": non-axis dim 0: dims that must be equal are different sizes: K == 5 (so 4 == 5); the function can never run
module {
  func.func @main(%a: tensor<Kx3xf32>, %b: tensor<4x3xf32>, %c: tensor<5x3xf32>) -> (tensor<4x6xf32>, tensor<5x6xf32>) {
    %d = nn.concat(%a, %b) {axis = 1} : (tensor<Kx3xf32>, tensor<4x3xf32>) -> tensor<4x6xf32> loc("/c1")
    %e = nn.concat(%a, %c) {axis = 1} : (tensor<Kx3xf32>, tensor<5x3xf32>) -> tensor<5x6xf32> loc("/c2")
    func.return(%d, %e) : (tensor<4x6xf32>, tensor<5x6xf32>) -> ()
  }
}
