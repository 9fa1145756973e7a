// RUN: pir optimize %s -p cse | filecheck %s
// Common subexpression elimination: the first op (and its name) survives; commutative
// operands in any order; equal constants; ops of nested regions reuse outer values, never
// the other way round.

module {
  // CHECK-LABEL: func.func @commutative(
  // CHECK-NEXT:    %a = nn.add(%x, %y)
  // CHECK-NEXT:    %c = nn.sub(%x, %y)
  // CHECK-NEXT:    %d = nn.sub(%y, %x)
  // CHECK-NEXT:    %s = nn.mul(%a, %a)
  // CHECK-NEXT:    %t = nn.mul(%c, %d)
  func.func @commutative(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
    %a = nn.add(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %b = nn.add(%y, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %c = nn.sub(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %d = nn.sub(%y, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %s = nn.mul(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %t = nn.mul(%c, %d) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    func.return(%s, %t) : (tensor<3xf32>, tensor<3xf32>) -> ()
  }
  // Equal constants merge (a splat and its spelled-out form are one value); constants of
  // another value or type do not.  Merging them makes their users equal in turn.
  // CHECK-LABEL: func.func @constants(
  // CHECK-NEXT:    %one = builtin.constant() {value = dense<1.0> : tensor<3xf32>}
  // CHECK-NEXT:    %two = builtin.constant() {value = dense<2.0> : tensor<3xf32>}
  // CHECK-NEXT:    %one_f64 = builtin.constant() {value = dense<1.0> : tensor<3xf64>}
  // CHECK-NEXT:    %a = nn.add(%x, %one)
  // CHECK-NEXT:    %c = nn.add(%x, %two)
  // CHECK-NEXT:    %s = nn.mul(%a, %a)
  // CHECK-NEXT:    %t = nn.mul(%s, %c)
  func.func @constants(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf64>) {
    %one = builtin.constant() {value = dense<1.0> : tensor<3xf32>} : () -> tensor<3xf32>
    %one_again = builtin.constant() {value = dense<[1.0, 1.0, 1.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %two = builtin.constant() {value = dense<2.0> : tensor<3xf32>} : () -> tensor<3xf32>
    %one_f64 = builtin.constant() {value = dense<1.0> : tensor<3xf64>} : () -> tensor<3xf64>
    %a = nn.add(%x, %one) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %b = nn.add(%x, %one_again) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %c = nn.add(%x, %two) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %s = nn.mul(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %t = nn.mul(%s, %c) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    func.return(%t, %one_f64) : (tensor<3xf32>, tensor<3xf64>) -> ()
  }
  // Attributes are part of what an op computes.
  // CHECK-LABEL: func.func @attributes(
  // CHECK-NEXT:    %a = nn.transpose(%x) {perm = [1, 0]}
  // CHECK-NEXT:    %c = nn.transpose(%x) {perm = [0, 1]}
  // CHECK-NEXT:    %s = nn.add(%a, %a)
  func.func @attributes(%x: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>) {
    %a = nn.transpose(%x) {perm = [1, 0]} : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %b = nn.transpose(%x) {perm = [1, 0]} : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %c = nn.transpose(%x) {perm = [0, 1]} : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %s = nn.add(%a, %b) : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    func.return(%s, %c) : (tensor<3x3xf32>, tensor<3x3xf32>) -> ()
  }
  // Ops in a branch reuse the outer %e; the branches' own %t and %u stay apart (neither
  // dominates the other), and the outer %v after the nn.if does not reuse them.
  // CHECK-LABEL: func.func @regions(
  // CHECK-NEXT:    %e = nn.exp(%x)
  // CHECK-NEXT:    %z = nn.if(%c) ({
  // CHECK-NEXT:      %t = nn.neg(%e)
  // CHECK-NEXT:      nn.yield(%t)
  // CHECK-NEXT:    }, {
  // CHECK-NEXT:      %u = nn.neg(%e)
  // CHECK-NEXT:      nn.yield(%u)
  // CHECK-NEXT:    })
  // CHECK-NEXT:    %v = nn.neg(%e)
  // CHECK-NEXT:    %w = nn.add(%z, %v)
  func.func @regions(%c: tensor<i1>, %x: tensor<2xf32>) -> (tensor<2xf32>) {
    %e = nn.exp(%x) : (tensor<2xf32>) -> tensor<2xf32>
    %z = nn.if(%c) ({
      %e2 = nn.exp(%x) : (tensor<2xf32>) -> tensor<2xf32>
      %t = nn.neg(%e2) : (tensor<2xf32>) -> tensor<2xf32>
      nn.yield(%t) : (tensor<2xf32>) -> ()
    }, {
      %u = nn.neg(%e) : (tensor<2xf32>) -> tensor<2xf32>
      nn.yield(%u) : (tensor<2xf32>) -> ()
    }) : (tensor<i1>) -> tensor<2xf32>
    %v = nn.neg(%e) : (tensor<2xf32>) -> tensor<2xf32>
    %w = nn.add(%z, %v) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return(%w) : (tensor<2xf32>) -> ()
  }
  // Random ops are draws, not values: two stay two.
  // CHECK-LABEL: func.func @impure(
  // CHECK-NEXT:    %a = prim.random_uniform()
  // CHECK-NEXT:    %b = prim.random_uniform()
  func.func @impure() -> (tensor<3xf32>, tensor<3xf32>) {
    %a = prim.random_uniform() {seed = 1} : () -> tensor<3xf32>
    %b = prim.random_uniform() {seed = 1} : () -> tensor<3xf32>
    func.return(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> ()
  }
  // An output keeps its name: the merged value is the output's; two outputs never merge.
  // CHECK-LABEL: func.func @outputs(
  // CHECK-NEXT:    %out = nn.exp(%x)
  // CHECK-NEXT:    %n = nn.neg(%out)
  // CHECK-NEXT:    %p = nn.neg(%x)
  // CHECK-NEXT:    %q = nn.neg(%x)
  // CHECK-NEXT:    func.return(%out, %n, %p, %q)
  func.func @outputs(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
    %e = nn.exp(%x) : (tensor<3xf32>) -> tensor<3xf32>
    %n = nn.neg(%e) : (tensor<3xf32>) -> tensor<3xf32>
    %out = nn.exp(%x) : (tensor<3xf32>) -> tensor<3xf32>
    %p = nn.neg(%x) : (tensor<3xf32>) -> tensor<3xf32>
    %q = nn.neg(%x) : (tensor<3xf32>) -> tensor<3xf32>
    func.return(%out, %n, %p, %q) : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> ()
  }
}
