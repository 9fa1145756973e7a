module @test_isnan attributes {pir.source = "test_isnan"} {
  func.func @main(%x: tensor<6xf32>) -> (tensor<6xi1>) {
    %y = nn.is_nan(%x) : (tensor<6xf32>) -> tensor<6xi1> loc("IsNaN:y")
    func.return(%y) : (tensor<6xi1>) -> ()
  }
}
