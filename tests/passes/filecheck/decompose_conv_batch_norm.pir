// RUN: pir optimize %s -p decompose | filecheck %s
// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=NONN
// An inference batch_norm of a convolution by constant weights is folded into the weights
// and the bias (f = scale / sqrt(var + epsilon) = [0.5, 2, 1]: W' = W * f per output
// channel, b' = (b - mean) * f + bias): one prim.conv plus its bias.  A batch norm whose
// statistics are not constants (%m2, a function input) stays a normalisation.

// NONN-NOT: = nn.

// CHECK:      %bn.w = builtin.constant() {value = dense<[[[[0.5]], [[1.0]]], [[[6.0]], [[8.0]]], [[[5.0]], [[6.0]]]]> : tensor<3x2x1x1xf32>}
// CHECK-NEXT: %bn.b = builtin.constant() {value = dense<[0.0, 3.0, -2.0]> : tensor<3xf32>}
// CHECK-NEXT: %bn.1 = prim.conv(%x, %bn.w)
// CHECK-NEXT: %bn.2 = prim.broadcast_in_dim(%bn.b) {broadcast_dimensions = [1]}
// CHECK-NEXT: %bn = prim.add(%bn.1, %bn.2)
// CHECK:      %c2 = prim.conv(%x, %w)
// CHECK:      prim.rsqrt

module @conv_bn {
  func.func @main(%x: tensor<Nx2x4x4xf32>, %m2: tensor<3xf32>) -> (tensor<Nx3x4x4xf32>, tensor<Nx3x4x4xf32>) {
    %w = builtin.constant() {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]> : tensor<3x2x1x1xf32>} : () -> tensor<3x2x1x1xf32>
    %b = builtin.constant() {value = dense<[1.0, 1.0, 1.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %scale = builtin.constant() {value = dense<[1.0, 2.0, 4.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %beta = builtin.constant() {value = dense<[0.0, 1.0, -1.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %mean = builtin.constant() {value = dense<[1.0, 0.0, 2.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %var = builtin.constant() {value = dense<[3.0, 0.0, 15.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %c = nn.conv(%x, %w, %b) : (tensor<Nx2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<Nx3x4x4xf32>
    %bn = nn.batch_norm(%c, %scale, %beta, %mean, %var) {epsilon = 1.0} : (tensor<Nx3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<Nx3x4x4xf32>
    %c2 = nn.conv(%x, %w) : (tensor<Nx2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<Nx3x4x4xf32>
    %bn2 = nn.batch_norm(%c2, %scale, %beta, %m2, %var) {epsilon = 1.0} : (tensor<Nx3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<Nx3x4x4xf32>
    func.return(%bn, %bn2) : (tensor<Nx3x4x4xf32>, tensor<Nx3x4x4xf32>) -> ()
  }
}
