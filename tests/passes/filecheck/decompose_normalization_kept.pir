// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// What prim cannot say stays, and `explain` says why: a layer_norm scale of static size over a
// symbolic dim (prim cannot state that S must be 3), an LRN window over a symbolic channel dim,
// a group_norm whose channels are symbolic, a batch_norm with 4 values per channel for C
// channels.  A hardmax over a symbolic dim decomposes.

// EXPLAIN:      decompose: nn.batch_norm stays: 4 values per channel are not known to match the C channels
// EXPLAIN-NEXT: decompose: nn.group_norm stays: the channel dim must be static to split it into groups
// EXPLAIN-NEXT: decompose: nn.layer_norm stays: a parameter of shape [3, 4] is not known to broadcast to ['B', 'S', 4]
// EXPLAIN-NEXT: decompose: nn.lrn stays: the channel dim must be static to slide the window over it
// EXPLAIN-NOT:  stays

// CHECK:      %ln = nn.layer_norm(%x, %s) {axis = 1}
// CHECK-NEXT: %lrn = nn.lrn(%y) {size = 3}
// CHECK-NEXT: %gn = nn.group_norm(%y, %p, %p) {num_groups = 2}
// CHECK-NEXT: %bn = nn.batch_norm(%y, %q, %q, %q, %q)
// CHECK-NEXT: %hm.1 = prim.argmax(%x) {axis = 1, keepdims = true} : (tensor<BxSx4xf32>) -> tensor<Bx1x4xi64>
// CHECK-NEXT: %hm.2 = prim.iota() {dimension = 1} : () -> tensor<BxSx4xi64>
// CHECK-NEXT: %hm.3 = prim.broadcast_in_dim(%hm.1) {broadcast_dimensions = [0, 1, 2]} : (tensor<Bx1x4xi64>) -> tensor<BxSx4xi64>
// CHECK-NEXT: %hm.4 = prim.eq(%hm.2, %hm.3)
// CHECK-NEXT: %hm = prim.cast(%hm.4) {dtype = f32} : (tensor<BxSx4xi1>) -> tensor<BxSx4xf32>
module {
  func.func @main(%x: tensor<BxSx4xf32>, %s: tensor<3x4xf32>, %y: tensor<NxCx5xf32>, %p: tensor<Cxf32>, %q: tensor<4xf32>) -> (tensor<BxSx4xf32>, tensor<NxCx5xf32>, tensor<NxCx5xf32>, tensor<BxSx4xf32>, tensor<NxCx5xf32>) {
    %ln = nn.layer_norm(%x, %s) {axis = 1} : (tensor<BxSx4xf32>, tensor<3x4xf32>) -> tensor<BxSx4xf32>
    %lrn = nn.lrn(%y) {size = 3} : (tensor<NxCx5xf32>) -> tensor<NxCx5xf32>
    %gn = nn.group_norm(%y, %p, %p) {num_groups = 2} : (tensor<NxCx5xf32>, tensor<Cxf32>, tensor<Cxf32>) -> tensor<NxCx5xf32>
    %bn = nn.batch_norm(%y, %q, %q, %q, %q) : (tensor<NxCx5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<NxCx5xf32>
    %hm = nn.hardmax(%x) {axis = 1} : (tensor<BxSx4xf32>) -> tensor<BxSx4xf32>
    func.return(%ln, %lrn, %gn, %hm, %bn) : (tensor<BxSx4xf32>, tensor<NxCx5xf32>, tensor<NxCx5xf32>, tensor<BxSx4xf32>, tensor<NxCx5xf32>) -> ()
  }
}
