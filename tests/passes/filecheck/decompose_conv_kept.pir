// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// What stays: auto_pad with strides over symbolic spatial dims (the pads depend on the
// parity of the size), for a conv and a pool alike (a pool over symbolic dims with static
// pads decomposes), max pooling's Indices result, and deformable convolution (declared
// kept: data-dependent sampling).

// EXPLAIN:      decompose: nn.average_pool stays: auto_pad SAME_UPPER with strides [2, 2] over symbolic spatial dims has pads that depend on their size
// EXPLAIN-NEXT: decompose: nn.conv stays: auto_pad SAME_UPPER needs static spatial dims
// EXPLAIN-NEXT: decompose: nn.deform_conv stays: samples the input at data-dependent fractional positions
// EXPLAIN-NEXT: decompose: nn.max_pool stays: the Indices result (the positions of the maxima) is not decomposed
// EXPLAIN-NOT:  stays

// CHECK:      %c = nn.conv(%x, %w)
// CHECK-NEXT: %a = nn.average_pool(%x)
// CHECK-NEXT: %m, %i = nn.max_pool(%s) {kernel_shape = [2, 2]}
// CHECK-NEXT: %d = nn.deform_conv(%s, %w, %off)
module {
  func.func @main(%x: tensor<1x2xHxWxf32>, %w: tensor<3x2x3x3xf32>, %s: tensor<1x2x4x4xf32>, %off: tensor<1x18x2x2xf32>) -> (tensor<1x3x?x?xf32>, tensor<1x2x?x?xf32>, tensor<1x2x3x3xi64>, tensor<1x3x2x2xf32>) {
    %c = nn.conv(%x, %w) {auto_pad = "SAME_UPPER", strides = [2, 2]} : (tensor<1x2xHxWxf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x?x?xf32>
    %a = nn.average_pool(%x) {auto_pad = "SAME_UPPER", kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x2xHxWxf32>) -> tensor<1x2x?x?xf32>
    %m, %i = nn.max_pool(%s) {kernel_shape = [2, 2]} : (tensor<1x2x4x4xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
    %d = nn.deform_conv(%s, %w, %off) : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<1x18x2x2xf32>) -> tensor<1x3x2x2xf32>
    func.return(%c, %a, %i, %d) : (tensor<1x3x?x?xf32>, tensor<1x2x?x?xf32>, tensor<1x2x3x3xi64>, tensor<1x3x2x2xf32>) -> ()
  }
}
