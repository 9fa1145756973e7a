module @g attributes {pir.source = "seed"} {
  func.func @main(%x: tensor<Bx8xf32>) -> (tensor<Bx4xf32>) {
    %w1 = builtin.constant() {value = resource<"w1">} : () -> tensor<8x6xf32> loc("w1")
    %b1 = builtin.constant() {value = dense<[1.8016349, 1.3151038, 0.35738042, -1.2083186, -0.004454133, 0.65647495]> : tensor<6xf32>} : () -> tensor<6xf32> loc("b1")
    %w2 = builtin.constant() {value = resource<"w2">} : () -> tensor<4x6xf32> loc("w2")
    %b2 = builtin.constant() {value = dense<[0.049054615, 2.0023925, 0.1885192, -0.6331941]> : tensor<4xf32>} : () -> tensor<4xf32> loc("b2")
    %h = nn.matmul(%x, %w1) : (tensor<Bx8xf32>, tensor<8x6xf32>) -> tensor<Bx6xf32> loc("/fc1/MatMul")
    %h1 = nn.add(%h, %b1) : (tensor<Bx6xf32>, tensor<6xf32>) -> tensor<Bx6xf32> loc("/fc1/Add")
    %r = nn.relu(%h1) : (tensor<Bx6xf32>) -> tensor<Bx6xf32> loc("relu")
    %logits = nn.gemm(%r, %w2, %b2) {alpha = 1.0, beta = 1.0, trans_a = false, trans_b = true} : (tensor<Bx6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<Bx4xf32> loc("fc2")
    %probs = nn.softmax(%logits) {axis = -1} : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("softmax")
    func.return(%probs) : (tensor<Bx4xf32>) -> ()
  }
}
resources {
  "w1": f32[8,6] sha256=f57890dd4c716d586a755ec013e9620cd7a4d2983f9f8caffafee90099d6d44a base64"bL8APn9GB7698iM/39XWPaEhCb/9Irk+eemmP+Zzcj/+JzS/Vfmhv+qOH79uRSk9Ts0UwOwKYL4Dep+/4HU7v49UC78Y8qG+PcHSPhRxhT+XngO+RuiuPzNKKr8h+bM+0klnP4WJwD34VT6/MvZrvwpb6r7VemE+KzuBvx8yVr7iCyO+23QKP5rPWz5p87U+UGEnv3C5BL6eskg/wCi/Pw8pob9ByME/pUWsPwYESD+6Zoc+frqgvmyguj+/6fo/"
  "w2": f32[4,6] sha256=00a39609f1fe81ddeed83b02aa6e576ae16527198b0632b73337e9371c5547d4 base64"B+mkv3BNyj4YF9w+2y8yPy2Rl79XZSm/cXTfvhK8lb+bo94/A+j9vrVuqD6fY4S+Pa/KP5cBqT9mIyI/TgYNwFUcVT0PBi8/0IGAPygvHr+rN+k/4gOpv+dZKb9wX28/"
}
