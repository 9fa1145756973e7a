// RUN: pir optimize %s -p canonicalize | filecheck %s
// A 3-d convolution over a unit depth, with a unit kernel depth and no padding on it, is the
// 2-d convolution between two reshapes (RivaGAN's Conv3d layers); a padded depth stays.

module {
  // CHECK-LABEL: func.func @unit_depth(
  // CHECK:         = prim.reshape(%x) : (tensor<Nx3x1xHxWxf32>) -> tensor<Nx3xHxWxf32>
  // CHECK:         = prim.conv({{.*}}window_strides = [1, 1], padding_low = [1, 1], padding_high = [1, 1]{{.*}} -> tensor<Nx8xHxWxf32>
  // CHECK:         %y = prim.reshape({{.*}}) : (tensor<Nx8xHxWxf32>) -> tensor<Nx8x1xHxWxf32>
  func.func @unit_depth(%x: tensor<Nx3x1xHxWxf32>, %k: tensor<8x3x1x3x3xf32>) -> (tensor<Nx8x1xHxWxf32>) {
    %y = prim.conv(%x, %k) {window_strides = [1, 1, 1], padding_low = [0, 1, 1], padding_high = [0, 1, 1]} : (tensor<Nx3x1xHxWxf32>, tensor<8x3x1x3x3xf32>) -> tensor<Nx8x1xHxWxf32>
    func.return(%y) : (tensor<Nx8x1xHxWxf32>) -> ()
  }
  // CHECK-LABEL: func.func @padded_depth(
  // CHECK-NEXT:    %y = prim.conv(%x, %k)
  func.func @padded_depth(%x: tensor<Nx3x1xHxWxf32>, %k: tensor<8x3x1x3x3xf32>) -> (tensor<Nx8x3xHxWxf32>) {
    %y = prim.conv(%x, %k) {window_strides = [1, 1, 1], padding_low = [1, 1, 1], padding_high = [1, 1, 1]} : (tensor<Nx3x1xHxWxf32>, tensor<8x3x1x3x3xf32>) -> tensor<Nx8x3xHxWxf32>
    func.return(%y) : (tensor<Nx8x3xHxWxf32>) -> ()
  }
}
