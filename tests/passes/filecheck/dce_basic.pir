// RUN: pir optimize %s -p dce | filecheck %s
// Dead code elimination: whole dead chains go in one run, ops with side effects (random
// draws) stay, and so do resources still used; unused resources are dropped.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %w_used = builtin.constant() {value = resource<"w_used">}
// CHECK-NEXT:    %draw = prim.random_normal() {seed = 3}
// CHECK-NEXT:    %y = nn.add(%x, %w_used)
// CHECK-NEXT:    %z = nn.if(%c) ({
// CHECK-NEXT:      nn.yield(%y)
// CHECK-NEXT:    }, {
// CHECK-NEXT:      %k = nn.neg(%y)
// CHECK-NEXT:      nn.yield(%k)
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return(%z)
// CHECK-NEXT:  }
// CHECK-NEXT: }
// CHECK-NEXT: resources {
// CHECK-NEXT:   "w_used": f32[4,5]
// CHECK-NEXT: }
module {
  func.func @main(%x: tensor<4x5xf32>, %c: tensor<i1>) -> (tensor<4x5xf32>) {
    %w_dead = builtin.constant() {value = resource<"w_dead">} : () -> tensor<4x5xf32>
    %w_used = builtin.constant() {value = resource<"w_used">} : () -> tensor<4x5xf32>
    %draw = prim.random_normal() {seed = 3} : () -> tensor<4x5xf32>
    %a = nn.mul(%x, %w_dead) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    %b = nn.exp(%a) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    %d = nn.add(%b, %draw) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    %y = nn.add(%x, %w_used) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    %z = nn.if(%c) ({
      %dead = nn.exp(%y) : (tensor<4x5xf32>) -> tensor<4x5xf32>
      nn.yield(%y) : (tensor<4x5xf32>) -> ()
    }, {
      %k = nn.neg(%y) : (tensor<4x5xf32>) -> tensor<4x5xf32>
      nn.yield(%k) : (tensor<4x5xf32>) -> ()
    }) : (tensor<i1>) -> tensor<4x5xf32>
    func.return(%z) : (tensor<4x5xf32>) -> ()
  }
}
resources {
  "w_used": f32[4,5] sha256=53ea0f80fbb5f1506f57f86e41a6ce264eae257365515b654a8fa718261342ca base64"AACAPwAAAEAAAEBAAACAQAAAoEAAAMBAAADgQAAAAEEAABBBAAAgQQAAMEEAAEBBAABQQQAAYEEAAHBBAACAQQAAiEEAAJBBAACYQQAAoEE="
  "w_dead": f32[4,5] sha256=8c60f51563522eb9187a4735c7fdce3ec1d82a500f1ff608858553b1c3b70a6c base64"AAAAQAAAQEAAAIBAAACgQAAAwEAAAOBAAAAAQQAAEEEAACBBAAAwQQAAQEEAAFBBAABgQQAAcEEAAIBBAACIQQAAkEEAAJhBAACgQQAAqEE="
}
