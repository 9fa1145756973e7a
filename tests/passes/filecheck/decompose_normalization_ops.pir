// RUN: pir optimize %s -p decompose | filecheck %s
// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=NONN
// softmax is x - max, exp, sum, and a multiply by the sum's reciprocal in the input's type (f16 here); layer_norm computes in
// stash_type (f32), with a constant count (8) shared by the mean and the variance, and its
// mean and inv_std_dev results are those statistics; inference batch_norm takes rsqrt of the
// 4 variances only, then broadcasts them onto the channel dim.

// NONN-NOT: = nn.

// CHECK:      %sm.1 = prim.reduce_max(%x) {axes = [2], keepdims = true} : (tensor<BxSx8xf16>) -> tensor<BxSx1xf16>
// CHECK-NEXT: %sm.2 = prim.broadcast_in_dim(%sm.1) {broadcast_dimensions = [0, 1, 2]} : (tensor<BxSx1xf16>) -> tensor<BxSx8xf16>
// CHECK-NEXT: %sm.3 = prim.sub(%x, %sm.2)
// CHECK-NEXT: %sm.4 = prim.exp(%sm.3)
// CHECK-NEXT: %sm.5 = prim.reduce_sum(%sm.4) {axes = [2], keepdims = true}
// CHECK-NEXT: %sm.6 = prim.reciprocal(%sm.5) : (tensor<BxSx1xf16>) -> tensor<BxSx1xf16>
// CHECK-NEXT: %sm.7 = prim.broadcast_in_dim(%sm.6)
// CHECK-NEXT: %sm = prim.mul(%sm.4, %sm.7) : (tensor<BxSx8xf16>, tensor<BxSx8xf16>) -> tensor<BxSx8xf16>

// CHECK:      %[[X:ln.[0-9]+]] = prim.cast(%x) {dtype = f32} : (tensor<BxSx8xf16>) -> tensor<BxSx8xf32>
// CHECK-NEXT: %[[N:ln.[0-9]+]] = builtin.constant() {value = dense<8.0> : tensor<f32>}
// CHECK-NEXT: %[[S:ln.[0-9]+]] = prim.reduce_sum(%[[X]]) {axes = [2], keepdims = true}
// CHECK-NEXT: %[[NB:ln.[0-9]+]] = prim.broadcast_in_dim(%[[N]])
// CHECK-NEXT: %mu = prim.div(%[[S]], %[[NB]]) : (tensor<BxSx1xf32>, tensor<BxSx1xf32>) -> tensor<BxSx1xf32>
// CHECK:      %[[C:ln.[0-9]+]] = prim.sub(%[[X]], %{{ln.[0-9]+}})
// CHECK-NEXT: %[[SQ:ln.[0-9]+]] = prim.mul(%[[C]], %[[C]])
// CHECK-NEXT: %{{ln.[0-9]+}} = prim.reduce_sum(%[[SQ]]) {axes = [2], keepdims = true}
// CHECK-NEXT: %{{ln.[0-9]+}} = prim.broadcast_in_dim(%[[N]])
// CHECK:      %{{ln.[0-9]+}} = builtin.constant() {value = dense<0.001> : tensor<f32>}
// CHECK:      %isd = prim.rsqrt(%{{ln.[0-9]+}}) : (tensor<BxSx1xf32>) -> tensor<BxSx1xf32>
// CHECK:      %{{ln.[0-9]+}} = prim.cast(%g) {dtype = f32} : (tensor<8xf16>) -> tensor<8xf32>
// CHECK-NEXT: %{{ln.[0-9]+}} = prim.broadcast_in_dim(%{{ln.[0-9]+}}) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<BxSx8xf32>
// CHECK-NEXT: %[[Y:ln.[0-9]+]] = prim.mul
// CHECK-NEXT: %ln = prim.cast(%[[Y]]) {dtype = f16} : (tensor<BxSx8xf32>) -> tensor<BxSx8xf16>

// CHECK:      %bn.1 = prim.broadcast_in_dim(%m) {broadcast_dimensions = [1]} : (tensor<4xf32>) -> tensor<Nx4xHxWxf32>
// CHECK-NEXT: %bn.2 = prim.sub(%c, %bn.1)
// CHECK:      %bn.5 = prim.add(%v, %bn.4) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %bn.6 = prim.rsqrt(%bn.5) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %bn.7 = prim.broadcast_in_dim(%bn.6) {broadcast_dimensions = [1]} : (tensor<4xf32>) -> tensor<Nx4xHxWxf32>
// CHECK-NEXT: %bn.8 = prim.mul(%bn.2, %bn.7)
// CHECK-NEXT: %bn.9 = prim.broadcast_in_dim(%g4) {broadcast_dimensions = [1]}
// CHECK-NEXT: %bn.10 = prim.mul(%bn.8, %bn.9)
// CHECK-NEXT: %bn.11 = prim.broadcast_in_dim(%b4) {broadcast_dimensions = [1]}
// CHECK-NEXT: %bn = prim.add(%bn.10, %bn.11)
module {
  func.func @main(%x: tensor<BxSx8xf16>, %g: tensor<8xf16>, %c: tensor<Nx4xHxWxf32>, %g4: tensor<4xf32>, %b4: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<BxSx8xf16>, tensor<BxSx8xf16>, tensor<BxSx1xf32>, tensor<BxSx1xf32>, tensor<Nx4xHxWxf32>) {
    %sm = nn.softmax(%x) : (tensor<BxSx8xf16>) -> tensor<BxSx8xf16>
    %ln, %mu, %isd = nn.layer_norm(%x, %g) {epsilon = 0.001} : (tensor<BxSx8xf16>, tensor<8xf16>) -> (tensor<BxSx8xf16>, tensor<BxSx1xf32>, tensor<BxSx1xf32>)
    %bn = nn.batch_norm(%c, %g4, %b4, %m, %v) : (tensor<Nx4xHxWxf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<Nx4xHxWxf32>
    func.return(%sm, %ln, %mu, %isd, %bn) : (tensor<BxSx8xf16>, tensor<BxSx8xf16>, tensor<BxSx1xf32>, tensor<BxSx1xf32>, tensor<Nx4xHxWxf32>) -> ()
  }
}
