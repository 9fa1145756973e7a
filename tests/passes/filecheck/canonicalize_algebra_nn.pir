// RUN: pir optimize %s -p canonicalize | filecheck %s
// Algebraic identities on nn ops: each function has one, and its consumer (%r) must read the
// simplified value directly; the unit constant goes with the op it fed.

module {
  // CHECK-LABEL: func.func @add_zero(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @add_zero(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %c = builtin.constant() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %y = nn.add(%x, %c) : (tensor<Bx3xf32>, tensor<f32>) -> tensor<Bx3xf32>
    %r = nn.exp(%y) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @zero_add(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @zero_add(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %c = builtin.constant() {value = dense<[0.0, 0.0, 0.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %y = nn.add(%c, %x) : (tensor<3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%y) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @sub_zero(
  // CHECK-NEXT:    %r = nn.abs(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @sub_zero(%x: tensor<Bx3xi64>) -> (tensor<Bx3xi64>) {
    %c = builtin.constant() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %y = nn.sub(%x, %c) : (tensor<Bx3xi64>, tensor<i64>) -> tensor<Bx3xi64>
    %r = nn.abs(%y) : (tensor<Bx3xi64>) -> tensor<Bx3xi64>
    func.return(%r) : (tensor<Bx3xi64>) -> ()
  }
  // CHECK-LABEL: func.func @mul_by_one(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @mul_by_one(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %c = builtin.constant() {value = dense<1.0> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
    %y = nn.mul(%x, %c) : (tensor<Bx3xf32>, tensor<1x3xf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%y) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @one_mul(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @one_mul(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %c = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %y = nn.mul(%c, %x) : (tensor<f32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%y) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @div_by_one(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @div_by_one(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %c = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %y = nn.div(%x, %c) : (tensor<Bx3xf32>, tensor<f32>) -> tensor<Bx3xf32>
    %r = nn.exp(%y) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // The exponent may have another element type.
  // CHECK-LABEL: func.func @pow_one(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @pow_one(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %c = builtin.constant() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %y = nn.pow(%x, %c) : (tensor<Bx3xf32>, tensor<i64>) -> tensor<Bx3xf32>
    %r = nn.exp(%y) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // Integers only: x*0 is the zero constant when that has the product's type ...
  // CHECK-LABEL: func.func @mul_by_zero(
  // CHECK-NEXT:    %c = builtin.constant() {value = dense<0> : tensor<4xi32>}
  // CHECK-NEXT:    %r = nn.abs(%c)
  func.func @mul_by_zero(%x: tensor<4xi32>) -> (tensor<4xi32>) {
    %c = builtin.constant() {value = dense<0> : tensor<4xi32>} : () -> tensor<4xi32>
    %y = nn.mul(%x, %c) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    %r = nn.abs(%y) : (tensor<4xi32>) -> tensor<4xi32>
    func.return(%r) : (tensor<4xi32>) -> ()
  }
  // ... or a new zero constant of a static shape.
  // CHECK-LABEL: func.func @zero_mul(
  // CHECK-NEXT:    %y = builtin.constant() {value = dense<0> : tensor<2x4xi32>}
  // CHECK-NEXT:    %r = nn.abs(%y)
  func.func @zero_mul(%x: tensor<2x4xi32>) -> (tensor<2x4xi32>) {
    %c = builtin.constant() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %y = nn.mul(%c, %x) : (tensor<i32>, tensor<2x4xi32>) -> tensor<2x4xi32>
    %r = nn.abs(%y) : (tensor<2x4xi32>) -> tensor<2x4xi32>
    func.return(%r) : (tensor<2x4xi32>) -> ()
  }
  // CHECK-LABEL: func.func @sub_self(
  // CHECK-NEXT:    %y = builtin.constant() {value = dense<0> : tensor<4xi64>}
  // CHECK-NEXT:    %r = nn.abs(%y)
  func.func @sub_self(%x: tensor<4xi64>) -> (tensor<4xi64>) {
    %y = nn.sub(%x, %x) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    %r = nn.abs(%y) : (tensor<4xi64>) -> tensor<4xi64>
    func.return(%r) : (tensor<4xi64>) -> ()
  }
  // CHECK-LABEL: func.func @max_min_self(
  // CHECK-NEXT:    %r = nn.add(%x, %x)
  // CHECK-NEXT:    func.return(%r)
  func.func @max_min_self(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %a = nn.max(%x, %x) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %b = nn.min(%x, %x) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = nn.add(%a, %b) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @max_min_single(
  // CHECK-NEXT:    %r = nn.add(%x, %x)
  // CHECK-NEXT:    func.return(%r)
  func.func @max_min_single(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %a = nn.max(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %b = nn.min(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = nn.add(%a, %b) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @and_or_self(
  // CHECK-NEXT:    %r = nn.xor(%x, %x)
  // CHECK-NEXT:    func.return(%r)
  func.func @and_or_self(%x: tensor<5xi1>) -> (tensor<5xi1>) {
    %a = nn.and(%x, %x) : (tensor<5xi1>, tensor<5xi1>) -> tensor<5xi1>
    %b = nn.or(%x, %x) : (tensor<5xi1>, tensor<5xi1>) -> tensor<5xi1>
    %r = nn.xor(%a, %b) : (tensor<5xi1>, tensor<5xi1>) -> tensor<5xi1>
    func.return(%r) : (tensor<5xi1>) -> ()
  }
  // CHECK-LABEL: func.func @neg_neg(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @neg_neg(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %a = nn.neg(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %b = nn.neg(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%b) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // CHECK-LABEL: func.func @not_not(
  // CHECK-NEXT:    %r = nn.xor(%x, %x)
  // CHECK-NEXT:    func.return(%r)
  func.func @not_not(%x: tensor<5xi1>) -> (tensor<5xi1>) {
    %a = nn.not(%x) : (tensor<5xi1>) -> tensor<5xi1>
    %b = nn.not(%a) : (tensor<5xi1>) -> tensor<5xi1>
    %r = nn.xor(%b, %x) : (tensor<5xi1>, tensor<5xi1>) -> tensor<5xi1>
    func.return(%r) : (tensor<5xi1>) -> ()
  }
  // CHECK-LABEL: func.func @bitwise_not_not(
  // CHECK-NEXT:    %r = nn.abs(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @bitwise_not_not(%x: tensor<5xi8>) -> (tensor<5xi8>) {
    %a = nn.bitwise_not(%x) : (tensor<5xi8>) -> tensor<5xi8>
    %b = nn.bitwise_not(%a) : (tensor<5xi8>) -> tensor<5xi8>
    %r = nn.abs(%b) : (tensor<5xi8>) -> tensor<5xi8>
    func.return(%r) : (tensor<5xi8>) -> ()
  }
  // The condition broadcasts into x.
  // CHECK-LABEL: func.func @where_same(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    func.return(%r)
  func.func @where_same(%c: tensor<3xi1>, %x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %y = nn.where(%c, %x, %x) : (tensor<3xi1>, tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%y) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()
  }
  // A returned value that becomes an intermediate one gives it its (output) name.
  // CHECK-LABEL: func.func @output_name(
  // CHECK-NEXT:    %y = nn.exp(%x)
  // CHECK-NEXT:    func.return(%y)
  func.func @output_name(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %c = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %e = nn.exp(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %y = nn.mul(%e, %c) : (tensor<Bx3xf32>, tensor<f32>) -> tensor<Bx3xf32>
    func.return(%y) : (tensor<Bx3xf32>) -> ()
  }
}
