// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// A saturating cast to float8 clamps to the type's finite range first (in f32, which holds an
// f16 exactly), so out-of-range values and infinities become the largest finite value; without
// saturate it is a plain prim.cast.  f8E8M0FNU rounds by round_mode, which prim.cast cannot.

// EXPLAIN: decompose: nn.cast stays: f8E8M0FNU rounds by round_mode; prim.cast rounds to nearest even

// CHECK:      %sat.1 = prim.cast(%x) {dtype = f32} : (tensor<3xf16>) -> tensor<3xf32>
// CHECK-NEXT: %sat.2 = builtin.constant() {value = dense<-448.0> : tensor<f32>}
// CHECK-NEXT: %sat.3 = prim.broadcast_in_dim(%sat.2)
// CHECK-NEXT: %sat.4 = prim.max(%sat.1, %sat.3)
// CHECK-NEXT: %sat.5 = builtin.constant() {value = dense<448.0> : tensor<f32>}
// CHECK-NEXT: %sat.6 = prim.broadcast_in_dim(%sat.5)
// CHECK-NEXT: %sat.7 = prim.min(%sat.4, %sat.6)
// CHECK-NEXT: %sat = prim.cast(%sat.7) {dtype = f8E4M3FN} : (tensor<3xf32>) -> tensor<3xf8E4M3FN>
// CHECK-NEXT: %wrap = prim.cast(%x) {dtype = f8E5M2} : (tensor<3xf16>) -> tensor<3xf8E5M2>
// CHECK-NEXT: %e8 = nn.cast(%x) {to = f8E8M0FNU}
module {
  func.func @main(%x: tensor<3xf16>) -> (tensor<3xf8E4M3FN>, tensor<3xf8E5M2>, tensor<3xf8E8M0FNU>) {
    %sat = nn.cast(%x) {to = f8E4M3FN} : (tensor<3xf16>) -> tensor<3xf8E4M3FN>
    %wrap = nn.cast(%x) {to = f8E5M2, saturate = false} : (tensor<3xf16>) -> tensor<3xf8E5M2>
    %e8 = nn.cast(%x) {to = f8E8M0FNU} : (tensor<3xf16>) -> tensor<3xf8E8M0FNU>
    func.return(%sat, %wrap, %e8) : (tensor<3xf8E4M3FN>, tensor<3xf8E5M2>, tensor<3xf8E8M0FNU>) -> ()
  }
}
