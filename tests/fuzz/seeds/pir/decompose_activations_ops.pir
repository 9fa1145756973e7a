module {
  func.func @main(%x: tensor<Bx4xf32>, %h: tensor<3xf16>, %s: tensor<4xf32>, %lo: tensor<f32>) -> (tensor<Bx4xf32>, tensor<Bx4xf32>, tensor<3xf16>, tensor<Bx4xf32>, tensor<Bx4xf32>, tensor<Bx4xf32>) {
    %g = nn.gelu(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/gelu")
    %sp = nn.softplus(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/softplus")
    %hs = nn.hard_swish(%h) : (tensor<3xf16>) -> tensor<3xf16> loc("/hard_swish")
    %p = nn.p_relu(%x, %s) : (tensor<Bx4xf32>, tensor<4xf32>) -> tensor<Bx4xf32> loc("/prelu")
    %sg = nn.sigmoid(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/sigmoid")
    %c = nn.clip(%x, %lo) {operand_segments = [1, 1, 0]} : (tensor<Bx4xf32>, tensor<f32>) -> tensor<Bx4xf32> loc("/clip")
    func.return(%g, %sp, %hs, %p, %sg, %c) : (tensor<Bx4xf32>, tensor<Bx4xf32>, tensor<3xf16>, tensor<Bx4xf32>, tensor<Bx4xf32>, tensor<Bx4xf32>) -> ()
  }
}
