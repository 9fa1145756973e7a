// RUN: pir optimize %s -p 'decompose{explain}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: pir optimize %s -p decompose | filecheck %s
// Control flow stays (declared kept) while the ops in its regions are decomposed; an
// unseeded draw stays (it must differ on every run), and so does blocked dequantisation.

// EXPLAIN:      decompose: nn.dequantize_linear stays: blocked quantisation (a scale per block) is not decomposed
// EXPLAIN-NEXT: decompose: nn.if stays: control flow: the op keeps its regions
// EXPLAIN-NEXT: decompose: nn.random_uniform stays: no seed: the op draws fresh numbers on every run, prim random ops take a seed
// EXPLAIN-NOT:  stays

// CHECK:      %r = nn.if(%c) ({
// CHECK-NEXT:   %p = prim.dot_general(%a, %b)
// CHECK-NEXT:   nn.yield(%p)
// CHECK-NEXT: }, {
// CHECK-NEXT:   nn.yield(%a)
// CHECK-NEXT: })
// CHECK-NEXT: %u = nn.random_uniform() {shape = [2]}
// CHECK-NEXT: %d = nn.dequantize_linear(%q, %s) {block_size = 2}
module {
  func.func @main(%c: tensor<i1>, %a: tensor<3x3xf32>, %b: tensor<3x3xf32>, %q: tensor<3x4xi8>, %s: tensor<3x2xf32>) -> (tensor<3x3xf32>, tensor<2xf32>, tensor<3x4xf32>) {
    %r = nn.if(%c) ({
      %p = nn.matmul(%a, %b) : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
      nn.yield(%p) : (tensor<3x3xf32>) -> ()
    }, {
      nn.yield(%a) : (tensor<3x3xf32>) -> ()
    }) : (tensor<i1>) -> tensor<3x3xf32>
    %u = nn.random_uniform() {shape = [2]} : () -> tensor<2xf32>
    %d = nn.dequantize_linear(%q, %s) {block_size = 2} : (tensor<3x4xi8>, tensor<3x2xf32>) -> tensor<3x4xf32>
    func.return(%r, %u, %d) : (tensor<3x3xf32>, tensor<2xf32>, tensor<3x4xf32>) -> ()
  }
}
