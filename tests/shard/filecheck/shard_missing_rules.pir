// RUN: not pir shard %s --mesh tp=2 -o - 2>&1 | filecheck %s
// Every op without an SPMD rule is listed at once, before anything is propagated.

// CHECK: pir: error: 2 ops without an SPMD rule (shard): nn.matmul, nn.relu (decompose nn ops to prim first: pir optimize -p decompose)
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>) {
    %a = nn.matmul(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %b = nn.relu(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    func.return(%b) : (tensor<4x8xf32>) -> ()
  }
}
