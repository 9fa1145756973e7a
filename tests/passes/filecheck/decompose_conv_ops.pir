// RUN: pir optimize %s -p decompose | filecheck %s
// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=NONN
// A grouped, strided, dilated conv is one prim.conv with the nn window plus the bias along
// the channels.  The transposed conv dilates its input by the strides (lhs_dilation), swaps
// the kernel's channel dims per group and flips it (a gather of reversed positions).  Pools
// pad once and take one strided slice per kernel offset: max over -inf padding, sums over
// zeros divided by the constant window sizes; a global average is a sum over 49.

// NONN-NOT: = nn.

// CHECK:      %y.1 = prim.conv(%x, %w) {window_strides = [2, 1], padding_low = [1, 0], padding_high = [2, 1], rhs_dilation = [1, 2], feature_group_count = 2} : (tensor<Nx4x7x7xf32>, tensor<6x2x3x3xf32>) -> tensor<Nx6x4x4xf32> loc("/conv")
// CHECK-NEXT: %y.2 = prim.broadcast_in_dim(%b) {broadcast_dimensions = [1]} : (tensor<6xf32>) -> tensor<Nx6x4x4xf32>
// CHECK-NEXT: %y = prim.add(%y.1, %y.2)

// CHECK-NEXT: %ct.1 = prim.reshape(%tw) : (tensor<4x3x3x3xf32>) -> tensor<2x2x3x3x3xf32>
// CHECK-NEXT: %ct.2 = prim.transpose(%ct.1) {permutation = [0, 2, 1, 3, 4]} : (tensor<2x2x3x3x3xf32>) -> tensor<2x3x2x3x3xf32>
// CHECK-NEXT: %ct.3 = prim.reshape(%ct.2) : (tensor<2x3x2x3x3xf32>) -> tensor<6x2x3x3xf32>
// CHECK-NEXT: %ct.4 = builtin.constant() {value = dense<[2, 1, 0]> : tensor<3xi64>}
// CHECK-NEXT: %ct.5 = prim.gather(%ct.3, %ct.4) {axis = 2}
// CHECK:      %ct.7 = prim.gather(%ct.5, %ct.6) {axis = 3}
// CHECK-NEXT: %ct = prim.conv(%t, %ct.7) {padding_low = [1, 2], padding_high = [3, 2], lhs_dilation = [2, 2], rhs_dilation = [1, 1], feature_group_count = 2} : (tensor<Nx4x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<Nx6x11x11xf32>

// CHECK-NEXT: %mp.1 = builtin.constant() {value = dense<-inf> : tensor<f32>}
// CHECK-NEXT: %mp.2 = prim.pad(%x, %mp.1) {edge_padding_low = [0, 0, 1, 1], edge_padding_high = [0, 0, 0, 0]} : (tensor<Nx4x7x7xf32>, tensor<f32>) -> tensor<Nx4x8x8xf32>
// CHECK-NEXT: %mp.3 = prim.slice(%mp.2) {start_indices = [0, 0], limit_indices = [7, 7], strides = [2, 2], axes = [2, 3]}
// CHECK-NEXT: %mp.4 = prim.slice(%mp.2) {start_indices = [0, 1], limit_indices = [7, 8], strides = [2, 2], axes = [2, 3]}
// CHECK-NEXT: %mp.5 = prim.slice(%mp.2) {start_indices = [1, 0], limit_indices = [8, 7], strides = [2, 2], axes = [2, 3]}
// CHECK-NEXT: %mp.6 = prim.slice(%mp.2) {start_indices = [1, 1], limit_indices = [8, 8], strides = [2, 2], axes = [2, 3]}
// CHECK-NEXT: %mp.7 = prim.max(%mp.3, %mp.4)
// CHECK-NEXT: %mp.8 = prim.max(%mp.7, %mp.5)
// CHECK-NEXT: %mp = prim.max(%mp.8, %mp.6)

// CHECK-NEXT: %ap.1 = builtin.constant() {value = dense<0.0> : tensor<f32>}
// CHECK:      %ap.9 = prim.add(%ap.8, %ap.6)
// CHECK-NEXT: %ap.10 = builtin.constant() {value = dense<{{\[}}[1.0, 2.0, 2.0, 2.0], [2.0, 4.0, 4.0, 4.0], [2.0, 4.0, 4.0, 4.0], [2.0, 4.0, 4.0, 4.0]]> : tensor<4x4xf32>}
// CHECK-NEXT: %ap.11 = prim.broadcast_in_dim(%ap.10) {broadcast_dimensions = [2, 3]} : (tensor<4x4xf32>) -> tensor<Nx4x4x4xf32>
// CHECK-NEXT: %ap = prim.div(%ap.9, %ap.11)

// CHECK-NEXT: %gp.1 = prim.reduce_sum(%x) {axes = [2, 3], keepdims = true} : (tensor<Nx4x7x7xf32>) -> tensor<Nx4x1x1xf32>
// CHECK-NEXT: %gp.2 = builtin.constant() {value = dense<49.0> : tensor<f32>}
// CHECK:      %gp = prim.div(%gp.1, %gp.3)
module {
  func.func @main(%x: tensor<Nx4x7x7xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %t: tensor<Nx4x5x5xf32>, %tw: tensor<4x3x3x3xf32>) -> (tensor<Nx6x4x4xf32>, tensor<Nx6x11x11xf32>, tensor<Nx4x4x4xf32>, tensor<Nx4x4x4xf32>, tensor<Nx4x1x1xf32>) {
    %y = nn.conv(%x, %w, %b) {group = 2, pads = [1, 0, 2, 1], strides = [2, 1], dilations = [1, 2]} : (tensor<Nx4x7x7xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<Nx6x4x4xf32> loc("/conv")
    %ct = nn.conv_transpose(%t, %tw) {group = 2, strides = [2, 2], pads = [1, 0, 0, 1], output_padding = [1, 1]} : (tensor<Nx4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<Nx6x11x11xf32>
    %mp = nn.max_pool(%x) {kernel_shape = [2, 2], pads = [1, 1, 0, 0], strides = [2, 2]} : (tensor<Nx4x7x7xf32>) -> tensor<Nx4x4x4xf32>
    %ap = nn.average_pool(%x) {kernel_shape = [2, 2], pads = [1, 1, 0, 0], strides = [2, 2]} : (tensor<Nx4x7x7xf32>) -> tensor<Nx4x4x4xf32>
    %gp = nn.global_average_pool(%x) : (tensor<Nx4x7x7xf32>) -> tensor<Nx4x1x1xf32>
    func.return(%y, %ct, %mp, %ap, %gp) : (tensor<Nx6x4x4xf32>, tensor<Nx6x11x11xf32>, tensor<Nx4x4x4xf32>, tensor<Nx4x4x4xf32>, tensor<Nx4x1x1xf32>) -> ()
  }
}
