// RUN: pir optimize %s -p decompose | filecheck %s
// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=NONN
// Binary ops broadcast explicitly, then map one to one; Where is a select of three broadcast
// operands; Mod without fmod adds the divisor where the remainder's sign differs from it;
// Pow casts an integer exponent to the base's type; Cast is prim.cast.

// NONN-NOT: = nn.

// CHECK:      %add.1 = prim.broadcast_in_dim(%b) {broadcast_dimensions = [1]} : (tensor<4xf32>) -> tensor<Bx4xf32> loc("/add")
// CHECK-NEXT: %add = prim.add(%a, %add.1) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/add")
// CHECK:      %le = prim.le(%a, %le.1) : (tensor<Bx4xf32>, tensor<Bx4xf32>) -> tensor<Bx4xi1>
// CHECK:      %w.1 = prim.broadcast_in_dim(%c) {broadcast_dimensions = [0, 1]} : (tensor<Bx1xi1>) -> tensor<Bx4xi1>
// CHECK-NEXT: %w.2 = prim.broadcast_in_dim(%b) {broadcast_dimensions = [1]}
// CHECK-NEXT: %w = prim.select(%w.1, %add, %w.2)
// CHECK:      %[[R:mod.[0-9]+]] = prim.rem(%n, %[[D:mod.[0-9]+]])
// CHECK:      %[[RNEG:.*]] = prim.lt(%[[R]], %[[ZERO:mod.[0-9]+]])
// CHECK-NEXT: %[[DNEG:.*]] = prim.lt(%[[D]], %[[ZERO]])
// CHECK-NEXT: %[[DIFF:.*]] = prim.ne(%[[RNEG]], %[[DNEG]])
// CHECK-NEXT: %[[NZ:.*]] = prim.ne(%[[R]], %[[ZERO]])
// CHECK-NEXT: %[[FIX:.*]] = prim.and(%[[NZ]], %[[DIFF]])
// CHECK-NEXT: %[[SUM:.*]] = prim.add(%[[R]], %[[D]])
// CHECK-NEXT: %mod = prim.select(%[[FIX]], %[[SUM]], %[[R]])
// CHECK:      %p.1 = prim.cast(%m) {dtype = f32} : (tensor<4xi32>) -> tensor<4xf32>
// CHECK:      %p = prim.pow(%a, %p.2)
// CHECK:      %h = prim.cast(%a) {dtype = f16} : (tensor<Bx4xf32>) -> tensor<Bx4xf16>
// CHECK:      func.return(%w, %le, %p, %mod, %add, %h)
module {
  func.func @main(%a: tensor<Bx4xf32>, %b: tensor<4xf32>, %c: tensor<Bx1xi1>, %n: tensor<Bx4xi32>, %m: tensor<4xi32>) -> (tensor<Bx4xf32>, tensor<Bx4xi1>, tensor<Bx4xf32>, tensor<Bx4xi32>, tensor<Bx4xf32>, tensor<Bx4xf16>) {
    %add = nn.add(%a, %b) : (tensor<Bx4xf32>, tensor<4xf32>) -> tensor<Bx4xf32> loc("/add")
    %le = nn.less_or_equal(%a, %b) : (tensor<Bx4xf32>, tensor<4xf32>) -> tensor<Bx4xi1> loc("/le")
    %w = nn.where(%c, %add, %b) : (tensor<Bx1xi1>, tensor<Bx4xf32>, tensor<4xf32>) -> tensor<Bx4xf32> loc("/where")
    %mod = nn.mod(%n, %m) : (tensor<Bx4xi32>, tensor<4xi32>) -> tensor<Bx4xi32> loc("/mod")
    %p = nn.pow(%a, %m) : (tensor<Bx4xf32>, tensor<4xi32>) -> tensor<Bx4xf32> loc("/pow")
    %h = nn.cast(%a) {to = f16} : (tensor<Bx4xf32>) -> tensor<Bx4xf16> loc("/cast")
    func.return(%w, %le, %p, %mod, %add, %h) : (tensor<Bx4xf32>, tensor<Bx4xi1>, tensor<Bx4xf32>, tensor<Bx4xi32>, tensor<Bx4xf32>, tensor<Bx4xf16>) -> ()
  }
}
