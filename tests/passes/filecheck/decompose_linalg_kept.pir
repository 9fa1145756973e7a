// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// What stays: a determinant (declared kept: it needs a pivoting factorisation), a matmul
// over a dim nobody knows (prim result types need every dim), and bf16 attention (ONNX sums
// its softmax in bf16, prim accumulates narrow floats in f32).

// EXPLAIN:      decompose: nn.attention stays: bf16: ONNX sums the softmax in bf16, prim.reduce_sum in f32, and the results differ by a bf16 ulp, beyond ONNX's tolerance
// EXPLAIN-NEXT: decompose: nn.det stays: a determinant needs a pivoting LU factorisation
// EXPLAIN-NEXT: decompose: nn.matmul stays: needs a known shape: matmul operand
// EXPLAIN-NOT:  stays

// CHECK:      %d = nn.det(%x) : (tensor<3x3xf32>) -> tensor<f32>
// CHECK-NEXT: %m = nn.matmul(%u, %x) : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT: %y, %pk, %pv, %qk = nn.attention(%q, %q, %q)
module {
  func.func @main(%x: tensor<3x3xf32>, %u: tensor<?x3xf32>, %q: tensor<1x2x3x4xbf16>) -> (tensor<f32>, tensor<?x3xf32>, tensor<1x2x3x4xbf16>) {
    %d = nn.det(%x) : (tensor<3x3xf32>) -> tensor<f32>
    %m = nn.matmul(%u, %x) : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
    %y, %pk, %pv, %qk = nn.attention(%q, %q, %q) : (tensor<1x2x3x4xbf16>, tensor<1x2x3x4xbf16>, tensor<1x2x3x4xbf16>) -> (tensor<1x2x3x4xbf16>, tensor<1x2x3x4xbf16>, tensor<1x2x3x4xbf16>, tensor<1x2x3x3xbf16>)
    func.return(%d, %m, %y) : (tensor<f32>, tensor<?x3xf32>, tensor<1x2x3x4xbf16>) -> ()
  }
}
