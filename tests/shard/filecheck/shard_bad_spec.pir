// RUN: not pir shard %s --mesh tp=3 --place 'w=[S(0)]' --place 'x=[S(2)]' --place 'x=[R, R]' --place '*fc9*=[R]' -o - 2>&1 | filecheck %s
// Bad specs are errors (exit 1), all listed at once: a split the mesh axis does not divide
// (there is no padding), a dim the value does not have, the wrong number of placements, a
// name that matches no value.

// One line, the entries joined by "; ", as every error of pir is one line.

// CHECK:      pir: error: bad sharding spec: "w" matches %w (tensor<8x8xf32>): dim 0 (8) is not divisible by 3, the ranks of mesh axes tp that shard it; "x" matches %x (tensor<4x8xf32>): S(2) on mesh axis 'tp': the tensor has rank 2; "x" matches %x (tensor<4x8xf32>): 2 placements for the 1 axes of mesh<tp=3>: give one per axis; "*fc9*" matches no value of @main{{$}}
// CHECK-NOT:  {{.}}
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>) {
    %a = prim.dot_general(%x, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    func.return(%a) : (tensor<4x8xf32>) -> ()
  }
}
