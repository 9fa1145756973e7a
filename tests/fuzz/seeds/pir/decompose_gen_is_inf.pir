module @test_isinf attributes {pir.source = "test_isinf"} {
  func.func @main(%x: tensor<6xf32>) -> (tensor<6xi1>) {
    %y = nn.is_inf(%x) : (tensor<6xf32>) -> tensor<6xi1> loc("IsInf:y")
    func.return(%y) : (tensor<6xi1>) -> ()
  }
}
