// RUN: pir optimize %s -p fold | filecheck %s --check-prefix=ALL
// RUN: pir optimize %s -p 'fold{size-limit=4}' | filecheck %s --check-prefix=SMALL
// Constant folding through the reference runtime: a chain of constant ops folds in one run,
// a folded value keeps its name, constants left unused go, random draws are not folded,
// and results over size-limit elements stay ops.

// ALL-LABEL: func.func @main(
// ALL-NEXT:    %six = builtin.constant() {value = dense<[0, 2, 4, 0, 4, 8]> : tensor<6xi64>}
// ALL-NEXT:    %draw = prim.random_uniform() {seed = 7}
// ALL-NEXT:    %y = nn.add(%x, %six)
// ALL-NEXT:    %s = nn.add(%draw, %draw)
// ALL-NEXT:    func.return(%y, %s)

// Six elements are over the limit of 4: the add stays, the 3-element iota does not.
// SMALL-LABEL: func.func @main(
// SMALL-NEXT:    %a = builtin.constant() {value = dense<[0, 1, 2]> : tensor<3xi64>}
// SMALL-NEXT:    %b = builtin.constant() {value = dense<[0, 2, 4]> : tensor<3xi64>}
// SMALL-NEXT:    %c = nn.concat(%a, %b)
// SMALL-NEXT:    %six = nn.add(%c, %c)
module {
  func.func @main(%x: tensor<6xi64>) -> (tensor<6xi64>, tensor<3xf32>) {
    %a = prim.iota() {dimension = 0} : () -> tensor<3xi64>
    %two = builtin.constant() {value = dense<2> : tensor<3xi64>} : () -> tensor<3xi64>
    %b = nn.mul(%a, %two) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
    %c = nn.concat(%a, %b) {axis = 0} : (tensor<3xi64>, tensor<3xi64>) -> tensor<6xi64>
    %six = nn.add(%c, %c) : (tensor<6xi64>, tensor<6xi64>) -> tensor<6xi64>
    %draw = prim.random_uniform() {seed = 7} : () -> tensor<3xf32>
    %y = nn.add(%x, %six) : (tensor<6xi64>, tensor<6xi64>) -> tensor<6xi64>
    %s = nn.add(%draw, %draw) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    func.return(%y, %s) : (tensor<6xi64>, tensor<3xf32>) -> ()
  }
}
