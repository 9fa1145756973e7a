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
