// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// Nearest upsampling by whole factors is a repetition: a broadcast along a new axis after
// each upsampled one, then a reshape merging the pairs, for symbolic H and W.  Asymmetric
// coordinates with rounding read input k+1 from output 2k+1: that resize stays.  An add of
// two different dim expressions broadcasts by its declared result: 2*((H + 31) floordiv 32)
// is never 1, so it cannot be the stretched side, and must equal the result's dim: the
// gather of its first positions renames it.

// EXPLAIN:      decompose: nn.resize stays: interpolation other than nearest upsampling
// EXPLAIN-NOT:  stays

// CHECK:      %up.1 = prim.broadcast_in_dim(%x) {broadcast_dimensions = [0, 1, 2, 4]} : (tensor<Nx3xHxWxf32>) -> tensor<Nx3xHx2xWx2xf32>
// CHECK-NEXT: %up = prim.reshape(%up.1) : (tensor<Nx3xHx2xWx2xf32>) -> tensor<Nx3x(2*H)x(2*W)xf32>
// CHECK-NEXT: %round = nn.resize(%x, %scales)
// CHECK-NEXT: %sum.1 = prim.iota() {dimension = 0} : () -> tensor<((H + 15) floordiv 16)xi64>
// CHECK-NEXT: %sum.2 = prim.gather(%s, %sum.1) {axis = 2} : (tensor<Nx3x(2*((H + 31) floordiv 32))xWxf32>, tensor<((H + 15) floordiv 16)xi64>) -> tensor<Nx3x((H + 15) floordiv 16)xWxf32>
// CHECK-NEXT: %sum = prim.add(%t, %sum.2)
module {
  func.func @main(%x: tensor<Nx3xHxWxf32>, %s: tensor<Nx3x(2*((H + 31) floordiv 32))xWxf32>, %t: tensor<Nx3x((H + 15) floordiv 16)xWxf32>) -> (tensor<Nx3x(2*H)x(2*W)xf32>, tensor<Nx3x(2*H)x(2*W)xf32>, tensor<Nx3x((H + 15) floordiv 16)xWxf32>) {
    %scales = builtin.constant() {value = dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %up = nn.resize(%x, %scales) {coordinate_transformation_mode = "asymmetric", mode = "nearest", nearest_mode = "floor", operand_segments = [1, 0, 1, 0]} : (tensor<Nx3xHxWxf32>, tensor<4xf32>) -> tensor<Nx3x(2*H)x(2*W)xf32>
    %round = nn.resize(%x, %scales) {coordinate_transformation_mode = "asymmetric", mode = "nearest", nearest_mode = "round_prefer_floor", operand_segments = [1, 0, 1, 0]} : (tensor<Nx3xHxWxf32>, tensor<4xf32>) -> tensor<Nx3x(2*H)x(2*W)xf32>
    %sum = nn.add(%t, %s) : (tensor<Nx3x((H + 15) floordiv 16)xWxf32>, tensor<Nx3x(2*((H + 31) floordiv 32))xWxf32>) -> tensor<Nx3x((H + 15) floordiv 16)xWxf32>
    func.return(%up, %round, %sum) : (tensor<Nx3x(2*H)x(2*W)xf32>, tensor<Nx3x(2*H)x(2*W)xf32>, tensor<Nx3x((H + 15) floordiv 16)xWxf32>) -> ()
  }
}
