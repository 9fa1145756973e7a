// RUN: pir optimize %s -p decompose | filecheck %s
// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=NONN
// group_norm views (N, 4, H, W) as (N, 2 groups, 2, H, W) and standardizes over its dims 2..4,
// whose element count 2 x H x W is symbolic: a sum of ones, computed once for the mean and the
// variance.  The NLL loss picks the target's class with an iota == target mask and a sum over
// the class dim; ignored targets weigh 0, and the mean divides by the sum of the weights.

// NONN-NOT: = nn.

// CHECK:      %[[G:gn.[0-9]+]] = prim.reshape(%c) : (tensor<Nx4xHxWxf32>) -> tensor<Nx2x2xHxWxf32>
// CHECK-NEXT: %[[ONE:gn.[0-9]+]] = builtin.constant() {value = dense<1.0> : tensor<f32>}
// CHECK-NEXT: %[[ONES:gn.[0-9]+]] = prim.broadcast_in_dim(%[[ONE]]) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<2xHxWxf32>
// CHECK-NEXT: %[[N:gn.[0-9]+]] = prim.reduce_sum(%[[ONES]]) {axes = [0, 1, 2], keepdims = false} : (tensor<2xHxWxf32>) -> tensor<f32>
// CHECK-NEXT: %{{gn.[0-9]+}} = prim.reduce_sum(%[[G]]) {axes = [2, 3, 4], keepdims = true} : (tensor<Nx2x2xHxWxf32>) -> tensor<Nx2x1x1x1xf32>
// CHECK-NOT:  prim.broadcast_in_dim(%[[ONE]])
// CHECK:      prim.rsqrt
// CHECK:      %{{gn.[0-9]+}} = prim.reshape(%{{gn.[0-9]+}}) : (tensor<Nx2x2xHxWxf32>) -> tensor<Nx4xHxWxf32>
// CHECK:      %gn = prim.add

// CHECK:      %[[IGN:nll.[0-9]+]] = prim.eq(%t, %{{nll.[0-9]+}}) : (tensor<Mxi64>, tensor<Mxi64>) -> tensor<Mxi1>
// CHECK:      %[[SAFE:nll.[0-9]+]] = prim.select(%[[IGN]], %{{nll.[0-9]+}}, %t)
// CHECK-NEXT: %[[CLS:nll.[0-9]+]] = prim.iota() {dimension = 1} : () -> tensor<Mx5xi64>
// CHECK-NEXT: %[[TB:nll.[0-9]+]] = prim.broadcast_in_dim(%[[SAFE]]) {broadcast_dimensions = [0]} : (tensor<Mxi64>) -> tensor<Mx5xi64>
// CHECK-NEXT: %[[HIT:nll.[0-9]+]] = prim.eq(%[[CLS]], %[[TB]])
// CHECK:      %[[SEL:nll.[0-9]+]] = prim.select(%[[HIT]], %l, %{{nll.[0-9]+}})
// CHECK-NEXT: %[[PICK:nll.[0-9]+]] = prim.reduce_sum(%[[SEL]]) {axes = [1], keepdims = false} : (tensor<Mx5xf32>) -> tensor<Mxf32>
// CHECK:      %[[W:nll.[0-9]+]] = prim.gather(%w, %[[SAFE]]) {axis = 0} : (tensor<5xf32>, tensor<Mxi64>) -> tensor<Mxf32>
// CHECK:      %[[W0:nll.[0-9]+]] = prim.select(%[[IGN]], %{{nll.[0-9]+}}, %[[W]])
// CHECK-NEXT: %[[NEG:nll.[0-9]+]] = prim.neg(%[[PICK]])
// CHECK-NEXT: %[[LOSS:nll.[0-9]+]] = prim.mul(%[[NEG]], %[[W0]])
// CHECK-NEXT: %[[TOTAL:nll.[0-9]+]] = prim.reduce_sum(%[[LOSS]]) {axes = [0], keepdims = false}
// CHECK-NEXT: %[[WSUM:nll.[0-9]+]] = prim.reduce_sum(%[[W0]]) {axes = [0], keepdims = false}
// CHECK-NEXT: %nll = prim.div(%[[TOTAL]], %[[WSUM]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
module {
  func.func @main(%c: tensor<Nx4xHxWxf32>, %p: tensor<4xf32>, %l: tensor<Mx5xf32>, %t: tensor<Mxi64>, %w: tensor<5xf32>) -> (tensor<Nx4xHxWxf32>, tensor<f32>) {
    %gn = nn.group_norm(%c, %p, %p) {num_groups = 2} : (tensor<Nx4xHxWxf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<Nx4xHxWxf32>
    %nll = nn.negative_log_likelihood_loss(%l, %t, %w) {ignore_index = -1} : (tensor<Mx5xf32>, tensor<Mxi64>, tensor<5xf32>) -> tensor<f32>
    func.return(%gn, %nll) : (tensor<Nx4xHxWxf32>, tensor<f32>) -> ()
  }
}
