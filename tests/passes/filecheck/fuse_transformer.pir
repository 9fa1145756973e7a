// RUN: pir optimize %s -p fuse | filecheck %s
// RUN: pir optimize %s -p fuse | pir verify -
// A pre-norm transformer block (layer_norm, q/k/v projections, softmax attention, output
// projection, residual, layer_norm, MLP with gelu, residual) and a final layer_norm, as
// bench/pass_throughput.py builds it (1 layer, hidden 8, 2 heads, seq 4), decomposed.
// 12 groups: each layer_norm and the softmax is one reduction group; each matmul's bias add
// (with the reshape/transpose to heads, the score scaling, the residual add, the gelu) is an
// epilogue group of that matmul; matmuls stay outside.  Biases, scales and the norms'
// counts and epsilons are tiny constants: each group holds its own copies.

// CHECK-LABEL: func.func @main(
// CHECK:      %h0.ln1 = fusion.group(%x) ({
// CHECK-COUNT-2: prim.reduce_sum
// CHECK:      }) {kind = "reduction"}
// CHECK-NEXT: %h0.q.mm = prim.dot_general(%h0.ln1, %h0.q.w)
// CHECK-NEXT: %h0.q.t = fusion.group(%h0.q.mm) ({
// CHECK:        prim.add
// CHECK-NEXT:   prim.reshape
// CHECK-NEXT:   prim.transpose
// CHECK:      }) {kind = "injective", epilogue_of = "h0.q.mm"}
// CHECK-NEXT: %h0.k.mm = prim.dot_general(%h0.ln1, %h0.k.w)
// CHECK:      }) {kind = "injective", epilogue_of = "h0.k.mm"}
// CHECK-NEXT: %h0.v.mm = prim.dot_general(%h0.ln1, %h0.v.w)
// CHECK:      }) {kind = "injective", epilogue_of = "h0.v.mm"}
// CHECK-NEXT: %h0.scores = prim.dot_general(%h0.q.t, %h0.k.t)
// CHECK-NEXT: %h0.scaled = fusion.group(%h0.scores) ({
// CHECK:      }) {kind = "elementwise", epilogue_of = "h0.scores"}
// CHECK-NEXT: %h0.probs = fusion.group(%h0.scaled) ({
// CHECK:        prim.reduce_max
// CHECK:        prim.reduce_sum
// CHECK:      }) {kind = "reduction"}
// CHECK-NEXT: %h0.ctx = prim.dot_general(%h0.probs, %h0.v.t)
// CHECK-NEXT: %h0.ctx.merge = fusion.group(%h0.ctx) ({
// CHECK:      }) {kind = "injective", epilogue_of = "h0.ctx"}
// CHECK-NEXT: %h0.proj.mm = prim.dot_general(%h0.ctx.merge, %h0.proj.w)
// CHECK-NEXT: %h0.res1 = fusion.group(%h0.proj.mm, %x) ({
// CHECK:      }) {kind = "elementwise", epilogue_of = "h0.proj.mm"}
// CHECK-NEXT: %h0.ln2 = fusion.group(%h0.res1) ({
// CHECK:      }) {kind = "reduction"}
// CHECK-NEXT: %h0.fc1.mm = prim.dot_general(%h0.ln2, %h0.fc1.w)
// CHECK:      %h0.gelu = fusion.group(%h0.fc1.mm) ({
// CHECK:        prim.erf
// CHECK:      }) {kind = "elementwise", epilogue_of = "h0.fc1.mm"}
// CHECK-NEXT: %h0.fc2.mm = prim.dot_general(%h0.gelu, %h0.fc2.w)
// CHECK-NEXT: %h0.res2 = fusion.group(%h0.fc2.mm, %h0.res1) ({
// CHECK:      }) {kind = "elementwise", epilogue_of = "h0.fc2.mm"}
// CHECK-NEXT: %y = fusion.group(%h0.res2) ({
// CHECK:      }) {kind = "reduction"}
// CHECK-NEXT: func.return(%y)

module @gpt1 attributes {pir.source = "<model>"} {
  func.func @main(%x: tensor<Bx4x8xf32>) -> (tensor<Bx4x8xf32>) {
    %h0.ln1.g = builtin.constant() {value = dense<[0.34558418, 0.82161814, 0.33043706, -1.3031572, 0.9053559, 0.44637457, -0.5369532, 0.5811181]> : tensor<8xf32>} : () -> tensor<8xf32> loc("h0.ln1.g")
    %h0.ln1.b = builtin.constant() {value = dense<[0.007291448, 0.00588265, 0.00056844484, 0.01093426, -0.014729082, -0.003258199, -0.009642386, 0.011976924]> : tensor<8xf32>} : () -> tensor<8xf32> loc("h0.ln1.b")
    %h0.q.w = builtin.constant() {value = resource<"h0.q.w">} : () -> tensor<8x8xf32> loc("h0.q.w")
    %h0.q.b = builtin.constant() {value = dense<[0.015506476, 0.003872657, -0.032616984, -0.023903262, 0.017675782, 0.013595301, -0.012804868, -2.0975931e-05]> : tensor<8xf32>} : () -> tensor<8xf32> loc("h0.q.b")
    %h0.k.w = builtin.constant() {value = resource<"h0.k.w">} : () -> tensor<8x8xf32> loc("h0.k.w")
    %h0.k.b = builtin.constant() {value = dense<[-0.021121578, -0.0180095, -0.007810907, 0.032546006, -0.023510719, 0.0032015177, -0.042756487, -3.1338663e-05]> : tensor<8xf32>} : () -> tensor<8xf32> loc("h0.k.b")
    %h0.v.w = builtin.constant() {value = resource<"h0.v.w">} : () -> tensor<8x8xf32> loc("h0.v.w")
    %h0.v.b = builtin.constant() {value = dense<[-0.013295626, -0.010530297, -0.025289856, 0.010375698, -0.02285036, -0.014917128, 0.007184893, 0.008051467]> : tensor<8xf32>} : () -> tensor<8xf32> loc("h0.v.b")
    %h0.scale = builtin.constant() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32> loc("h0.scale")
    %h0.proj.w = builtin.constant() {value = resource<"h0.proj.w">} : () -> tensor<8x8xf32> loc("h0.proj.w")
    %h0.proj.b = builtin.constant() {value = dense<[-0.015659979, 0.013360948, 0.035693966, -0.006193751, -0.0118554905, -0.003156734, -0.009625605, -0.014029586]> : tensor<8xf32>} : () -> tensor<8xf32> loc("h0.proj.b")
    %h0.ln2.g = builtin.constant() {value = dense<[0.13819364, -0.29091755, 1.4388736, 0.00020164295, 0.32391196, 0.9520219, -0.30075586, 1.4367366]> : tensor<8xf32>} : () -> tensor<8xf32> loc("h0.ln2.g")
    %h0.ln2.b = builtin.constant() {value = dense<[-0.0126538845, -0.016166555, -0.0073253405, -0.0022943479, -0.028026365, -0.0007018957, -0.03334973, 0.027842768]> : tensor<8xf32>} : () -> tensor<8xf32> loc("h0.ln2.b")
    %h0.fc1.w = builtin.constant() {value = resource<"h0.fc1.w">} : () -> tensor<8x32xf32> loc("h0.fc1.w")
    %h0.fc1.b = builtin.constant() {value = resource<"h0.fc1.b">} : () -> tensor<32xf32> loc("h0.fc1.b")
    %h0.fc2.w = builtin.constant() {value = resource<"h0.fc2.w">} : () -> tensor<32x8xf32> loc("h0.fc2.w")
    %h0.fc2.b = builtin.constant() {value = dense<[0.014543848, 0.010312285, -0.013593533, 0.02887602, 0.0005164773, 0.030209403, 0.027331237, -0.025977105]> : tensor<8xf32>} : () -> tensor<8xf32> loc("h0.fc2.b")
    %ln_f.g = builtin.constant() {value = dense<[-1.0043131, -1.0242331, 0.22707756, 0.032114122, 0.24757524, -0.8327108, 0.40714738, 1.3851047]> : tensor<8xf32>} : () -> tensor<8xf32> loc("ln_f.g")
    %ln_f.b = builtin.constant() {value = dense<[-0.027071895, -0.004275905, 0.0046201153, -0.0029410117, -0.004282549, 0.03504528, 0.02534135, 0.016667899]> : tensor<8xf32>} : () -> tensor<8xf32> loc("ln_f.b")
    %h0.ln1.1 = builtin.constant() {value = dense<8.0> : tensor<f32>} : () -> tensor<f32> loc("/h0.ln1")
    %h0.ln1.2 = prim.reduce_sum(%x) {axes = [2], keepdims = true} : (tensor<Bx4x8xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln1")
    %h0.ln1.3 = prim.broadcast_in_dim(%h0.ln1.1) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx4x1xf32> loc("/h0.ln1")
    %h0.ln1.4 = prim.div(%h0.ln1.2, %h0.ln1.3) : (tensor<Bx4x1xf32>, tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln1")
    %h0.ln1.5 = prim.broadcast_in_dim(%h0.ln1.4) {broadcast_dimensions = [0, 1, 2]} : (tensor<Bx4x1xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln1")
    %h0.ln1.6 = prim.sub(%x, %h0.ln1.5) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln1")
    %h0.ln1.7 = prim.mul(%h0.ln1.6, %h0.ln1.6) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln1")
    %h0.ln1.8 = prim.reduce_sum(%h0.ln1.7) {axes = [2], keepdims = true} : (tensor<Bx4x8xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln1")
    %h0.ln1.10 = prim.div(%h0.ln1.8, %h0.ln1.3) : (tensor<Bx4x1xf32>, tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln1")
    %h0.ln1.11 = builtin.constant() {value = dense<1e-05> : tensor<f32>} : () -> tensor<f32> loc("/h0.ln1")
    %h0.ln1.12 = prim.broadcast_in_dim(%h0.ln1.11) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx4x1xf32> loc("/h0.ln1")
    %h0.ln1.13 = prim.add(%h0.ln1.10, %h0.ln1.12) : (tensor<Bx4x1xf32>, tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln1")
    %h0.ln1.14 = prim.rsqrt(%h0.ln1.13) : (tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln1")
    %h0.ln1.15 = prim.broadcast_in_dim(%h0.ln1.14) {broadcast_dimensions = [0, 1, 2]} : (tensor<Bx4x1xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln1")
    %h0.ln1.16 = prim.mul(%h0.ln1.6, %h0.ln1.15) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln1")
    %h0.ln1.17 = prim.broadcast_in_dim(%h0.ln1.g) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln1")
    %h0.ln1.18 = prim.mul(%h0.ln1.16, %h0.ln1.17) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln1")
    %h0.ln1.19 = prim.broadcast_in_dim(%h0.ln1.b) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln1")
    %h0.ln1 = prim.add(%h0.ln1.18, %h0.ln1.19) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln1")
    %h0.q.mm = prim.dot_general(%h0.ln1, %h0.q.w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]} : (tensor<Bx4x8xf32>, tensor<8x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.q.mm")
    %h0.q.1 = prim.broadcast_in_dim(%h0.q.b) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/h0.q")
    %h0.q = prim.add(%h0.q.mm, %h0.q.1) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.q")
    %h0.q.split = prim.reshape(%h0.q) : (tensor<Bx4x8xf32>) -> tensor<Bx4x2x4xf32> loc("/h0.q.split")
    %h0.q.t = prim.transpose(%h0.q.split) {permutation = [0, 2, 1, 3]} : (tensor<Bx4x2x4xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.q.t")
    %h0.k.mm = prim.dot_general(%h0.ln1, %h0.k.w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]} : (tensor<Bx4x8xf32>, tensor<8x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.k.mm")
    %h0.k.1 = prim.broadcast_in_dim(%h0.k.b) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/h0.k")
    %h0.k = prim.add(%h0.k.mm, %h0.k.1) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.k")
    %h0.k.split = prim.reshape(%h0.k) : (tensor<Bx4x8xf32>) -> tensor<Bx4x2x4xf32> loc("/h0.k.split")
    %h0.k.t = prim.transpose(%h0.k.split) {permutation = [0, 2, 3, 1]} : (tensor<Bx4x2x4xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.k.t")
    %h0.v.mm = prim.dot_general(%h0.ln1, %h0.v.w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]} : (tensor<Bx4x8xf32>, tensor<8x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.v.mm")
    %h0.v.1 = prim.broadcast_in_dim(%h0.v.b) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/h0.v")
    %h0.v = prim.add(%h0.v.mm, %h0.v.1) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.v")
    %h0.v.split = prim.reshape(%h0.v) : (tensor<Bx4x8xf32>) -> tensor<Bx4x2x4xf32> loc("/h0.v.split")
    %h0.v.t = prim.transpose(%h0.v.split) {permutation = [0, 2, 1, 3]} : (tensor<Bx4x2x4xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.v.t")
    %h0.scores = prim.dot_general(%h0.q.t, %h0.k.t) {lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2]} : (tensor<Bx2x4x4xf32>, tensor<Bx2x4x4xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.scores")
    %h0.scaled.1 = prim.broadcast_in_dim(%h0.scale) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx2x4x4xf32> loc("/h0.scaled")
    %h0.scaled = prim.mul(%h0.scores, %h0.scaled.1) : (tensor<Bx2x4x4xf32>, tensor<Bx2x4x4xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.scaled")
    %h0.probs.1 = prim.reduce_max(%h0.scaled) {axes = [3], keepdims = true} : (tensor<Bx2x4x4xf32>) -> tensor<Bx2x4x1xf32> loc("/h0.probs")
    %h0.probs.2 = prim.broadcast_in_dim(%h0.probs.1) {broadcast_dimensions = [0, 1, 2, 3]} : (tensor<Bx2x4x1xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.probs")
    %h0.probs.3 = prim.sub(%h0.scaled, %h0.probs.2) : (tensor<Bx2x4x4xf32>, tensor<Bx2x4x4xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.probs")
    %h0.probs.4 = prim.exp(%h0.probs.3) : (tensor<Bx2x4x4xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.probs")
    %h0.probs.5 = prim.reduce_sum(%h0.probs.4) {axes = [3], keepdims = true} : (tensor<Bx2x4x4xf32>) -> tensor<Bx2x4x1xf32> loc("/h0.probs")
    %h0.probs.6 = prim.broadcast_in_dim(%h0.probs.5) {broadcast_dimensions = [0, 1, 2, 3]} : (tensor<Bx2x4x1xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.probs")
    %h0.probs = prim.div(%h0.probs.4, %h0.probs.6) : (tensor<Bx2x4x4xf32>, tensor<Bx2x4x4xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.probs")
    %h0.ctx = prim.dot_general(%h0.probs, %h0.v.t) {lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2]} : (tensor<Bx2x4x4xf32>, tensor<Bx2x4x4xf32>) -> tensor<Bx2x4x4xf32> loc("/h0.ctx")
    %h0.ctx.t = prim.transpose(%h0.ctx) {permutation = [0, 2, 1, 3]} : (tensor<Bx2x4x4xf32>) -> tensor<Bx4x2x4xf32> loc("/h0.ctx.t")
    %h0.ctx.merge = prim.reshape(%h0.ctx.t) : (tensor<Bx4x2x4xf32>) -> tensor<Bx4x8xf32> loc("/h0.ctx.merge")
    %h0.proj.mm = prim.dot_general(%h0.ctx.merge, %h0.proj.w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]} : (tensor<Bx4x8xf32>, tensor<8x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.proj.mm")
    %h0.proj.1 = prim.broadcast_in_dim(%h0.proj.b) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/h0.proj")
    %h0.proj = prim.add(%h0.proj.mm, %h0.proj.1) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.proj")
    %h0.res1 = prim.add(%x, %h0.proj) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.res1")
    %h0.ln2.2 = prim.reduce_sum(%h0.res1) {axes = [2], keepdims = true} : (tensor<Bx4x8xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln2")
    %h0.ln2.4 = prim.div(%h0.ln2.2, %h0.ln1.3) : (tensor<Bx4x1xf32>, tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln2")
    %h0.ln2.5 = prim.broadcast_in_dim(%h0.ln2.4) {broadcast_dimensions = [0, 1, 2]} : (tensor<Bx4x1xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln2")
    %h0.ln2.6 = prim.sub(%h0.res1, %h0.ln2.5) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln2")
    %h0.ln2.7 = prim.mul(%h0.ln2.6, %h0.ln2.6) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln2")
    %h0.ln2.8 = prim.reduce_sum(%h0.ln2.7) {axes = [2], keepdims = true} : (tensor<Bx4x8xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln2")
    %h0.ln2.10 = prim.div(%h0.ln2.8, %h0.ln1.3) : (tensor<Bx4x1xf32>, tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln2")
    %h0.ln2.13 = prim.add(%h0.ln2.10, %h0.ln1.12) : (tensor<Bx4x1xf32>, tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln2")
    %h0.ln2.14 = prim.rsqrt(%h0.ln2.13) : (tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/h0.ln2")
    %h0.ln2.15 = prim.broadcast_in_dim(%h0.ln2.14) {broadcast_dimensions = [0, 1, 2]} : (tensor<Bx4x1xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln2")
    %h0.ln2.16 = prim.mul(%h0.ln2.6, %h0.ln2.15) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln2")
    %h0.ln2.17 = prim.broadcast_in_dim(%h0.ln2.g) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln2")
    %h0.ln2.18 = prim.mul(%h0.ln2.16, %h0.ln2.17) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln2")
    %h0.ln2.19 = prim.broadcast_in_dim(%h0.ln2.b) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln2")
    %h0.ln2 = prim.add(%h0.ln2.18, %h0.ln2.19) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.ln2")
    %h0.fc1.mm = prim.dot_general(%h0.ln2, %h0.fc1.w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]} : (tensor<Bx4x8xf32>, tensor<8x32xf32>) -> tensor<Bx4x32xf32> loc("/h0.fc1.mm")
    %h0.fc1.1 = prim.broadcast_in_dim(%h0.fc1.b) {broadcast_dimensions = [2]} : (tensor<32xf32>) -> tensor<Bx4x32xf32> loc("/h0.fc1")
    %h0.fc1 = prim.add(%h0.fc1.mm, %h0.fc1.1) : (tensor<Bx4x32xf32>, tensor<Bx4x32xf32>) -> tensor<Bx4x32xf32> loc("/h0.fc1")
    %h0.gelu.1 = builtin.constant() {value = dense<0.70710677> : tensor<f32>} : () -> tensor<f32> loc("/h0.gelu")
    %h0.gelu.2 = prim.broadcast_in_dim(%h0.gelu.1) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx4x32xf32> loc("/h0.gelu")
    %h0.gelu.3 = prim.mul(%h0.fc1, %h0.gelu.2) : (tensor<Bx4x32xf32>, tensor<Bx4x32xf32>) -> tensor<Bx4x32xf32> loc("/h0.gelu")
    %h0.gelu.4 = prim.erf(%h0.gelu.3) : (tensor<Bx4x32xf32>) -> tensor<Bx4x32xf32> loc("/h0.gelu")
    %h0.gelu.6 = prim.broadcast_in_dim(%h0.scale) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx4x32xf32> loc("/h0.gelu")
    %h0.gelu.7 = prim.mul(%h0.gelu.6, %h0.fc1) : (tensor<Bx4x32xf32>, tensor<Bx4x32xf32>) -> tensor<Bx4x32xf32> loc("/h0.gelu")
    %h0.gelu.8 = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32> loc("/h0.gelu")
    %h0.gelu.9 = prim.broadcast_in_dim(%h0.gelu.8) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Bx4x32xf32> loc("/h0.gelu")
    %h0.gelu.10 = prim.add(%h0.gelu.9, %h0.gelu.4) : (tensor<Bx4x32xf32>, tensor<Bx4x32xf32>) -> tensor<Bx4x32xf32> loc("/h0.gelu")
    %h0.gelu = prim.mul(%h0.gelu.7, %h0.gelu.10) : (tensor<Bx4x32xf32>, tensor<Bx4x32xf32>) -> tensor<Bx4x32xf32> loc("/h0.gelu")
    %h0.fc2.mm = prim.dot_general(%h0.gelu, %h0.fc2.w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]} : (tensor<Bx4x32xf32>, tensor<32x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.fc2.mm")
    %h0.fc2.1 = prim.broadcast_in_dim(%h0.fc2.b) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/h0.fc2")
    %h0.fc2 = prim.add(%h0.fc2.mm, %h0.fc2.1) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.fc2")
    %h0.res2 = prim.add(%h0.res1, %h0.fc2) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/h0.res2")
    %y.2 = prim.reduce_sum(%h0.res2) {axes = [2], keepdims = true} : (tensor<Bx4x8xf32>) -> tensor<Bx4x1xf32> loc("/y")
    %y.4 = prim.div(%y.2, %h0.ln1.3) : (tensor<Bx4x1xf32>, tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/y")
    %y.5 = prim.broadcast_in_dim(%y.4) {broadcast_dimensions = [0, 1, 2]} : (tensor<Bx4x1xf32>) -> tensor<Bx4x8xf32> loc("/y")
    %y.6 = prim.sub(%h0.res2, %y.5) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/y")
    %y.7 = prim.mul(%y.6, %y.6) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/y")
    %y.8 = prim.reduce_sum(%y.7) {axes = [2], keepdims = true} : (tensor<Bx4x8xf32>) -> tensor<Bx4x1xf32> loc("/y")
    %y.10 = prim.div(%y.8, %h0.ln1.3) : (tensor<Bx4x1xf32>, tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/y")
    %y.13 = prim.add(%y.10, %h0.ln1.12) : (tensor<Bx4x1xf32>, tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/y")
    %y.14 = prim.rsqrt(%y.13) : (tensor<Bx4x1xf32>) -> tensor<Bx4x1xf32> loc("/y")
    %y.15 = prim.broadcast_in_dim(%y.14) {broadcast_dimensions = [0, 1, 2]} : (tensor<Bx4x1xf32>) -> tensor<Bx4x8xf32> loc("/y")
    %y.16 = prim.mul(%y.6, %y.15) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/y")
    %y.17 = prim.broadcast_in_dim(%ln_f.g) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/y")
    %y.18 = prim.mul(%y.16, %y.17) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/y")
    %y.19 = prim.broadcast_in_dim(%ln_f.b) {broadcast_dimensions = [2]} : (tensor<8xf32>) -> tensor<Bx4x8xf32> loc("/y")
    %y = prim.add(%y.18, %y.19) : (tensor<Bx4x8xf32>, tensor<Bx4x8xf32>) -> tensor<Bx4x8xf32> loc("/y")
    func.return(%y) : (tensor<Bx4x8xf32>) -> ()
  }
}
resources {
  "h0.q.w": f32[8,8] sha256=c0f4947a7df5cc0950cd6b232fde87f1b23902dc2d530d403df1d0b06a099908 base64"HEJQOhqqv7ueG4C8s42ouwDBKjl/nrS7+ATUPBTxpDwzGV69e78avcgTZbvmVwq8WQOMO5JsjjtMfi09iDG2vJx397sHWCc9YelTPMlFWTz7bSi8pAIHvdh/WzsP4w474BbJvDXhX7yy27y6wcmavO7NALuTTfo6CpM6OtPmJbwzj0I8QAKSPGpF0jsQD4a8cb9vPNZPJLyrCpA8BpqvvInTlTxtYdK5U5jMvJi3zbtt0406y8ayO/XroLyYbrW8usyCO8zxGLxJV5o7HuF4PJQRB70+t6Y7a6XIPLn8wrsH2IS8yX52PEUZpjsPyJI8lj3iu/fH8rx9MRC7xxYSvA=="
  "h0.k.w": f32[8,8] sha256=addca899a1cec64e26fa3ee1c63499f8e098f32ab1866850b6e523579c161c80 base64"awESPJt8GTxDkI88JheoOzmW+LqAo6m7EPmsPNZjOL0CvTW7/QMtOniH6bzcHNo7aWlVvI5NjTy2nSS7pERbPAKyxzzs9Po7aHqPvCAb+Lwhow89d98RuwShYbymFD07/OJ6u3Cdizyj4TE6wiyQOUsnarw63hk8g2OpvNsyWjySrvk8+M35vJMISr2KI0o8SrlQPdX9o7z76cy8TP5APGu+ibx/0CW8ayTku5JTLjw6zwS8AR22O7tiZ7sTZIq88ZnRu6e2m7wQoQg5XiK4vFAPs7xote48U2uLuglNjbrJnic8C+gJvN/FlbsQUAs8hBW5O27wvbzsiIg8RnlBvA=="
  "h0.v.w": f32[8,8] sha256=6b7325911f5fe81b01b3e8f7c7dc6ed56e490171ba10e983727dbe763e1a20d4 base64"jWKTPIQZm7seOk68HLmXO/xsZTyid1k8xpUhPXsUiTv2HkK8mh8lu/MMvro2hg47pm4dukgFZDtE4Ai9Ke2HPKBUPLzYNcC8cvpQPKjU1zwzjiE8GDxTOye8mLwiPWs9uTiQPHupurzFeH+8yQLkOia6/rz6Bl07t20WvITpyDyxo508xxtevUOkWjrBgAS9l821PPhWXDuVszM8koKuvPbIFT0CfCU9vHOuvABU9Du0oFy8ESb3uapcz7zh9Bg9VsqevJ8KwrtwUyQ8VDFUvPfVnLuKsTi8AO4uux7Iv7wahQ+835aHu++12rv8m5Q6ZBbAu/TPdjxHz9O7/xszuw=="
  "h0.proj.w": f32[8,8] sha256=a3d586e0d0a43c175eaa0eace15ba929b91b6ff026274a30bd1107af85f85203 base64"DxwDvBNrJb02ywk8hhuqO5Bn57xNa3w8hLxlvMGDuLzL8/o6vexpu6vKhDv6igO9OHUUPat6Rbz+Qfy8P8hKPEGG6Ls25tQ715DeuxSbnLrXEaE7yal0vM5oXjwU+hm8U32OvJXvyTrF1BE8IyGWu7RQjbxiF0s8xTQQvZPlqLy6Nk86+P7evETFEjoE0o+64T+TPBfhlbzYGE28nFraO9hSSb2Z9H09Eu9kvAAnb7xOFo08ZdVQulPFEb17bk08JiWMPDtwE7yzjLi7WD8fPALllLyzpg88vpyCO3QpXbz8FOS8YdqTu99tj7wwEqQ8B9s8OwEjgDygczA7fUusOw=="
  "h0.fc1.w": f32[8,32] sha256=30165625e0ede94de0d93d42b653f768d7429ed261a489bccd76b3c81a1272c0 base64"IlTUulFbUrx20pS8u/D7u4Yykrv3Iau8AbOWvINVdbuCpiq8dOGZPL5tujyX/qc5aTAbPNzB2rx53lA8cFgguu3QHjznGQM9Dtk6vdcDqztlFLS8Dw1CPFws17whVSK8Fd2EO+YISTx3EcQ6veWBvKZhNby96pA8rKvmuCbwCb3HOYo8dGUIPLQZjzy4nNy7Z6+HPErYrbwNxzo8FbAgvLn4XDzFw6Q8VCtxvIZLhroEPEw6KerCPO/VaDw1xMe89/IVPJ0mdDxw+y09T44JvX7AL7ykddo8xQPevAaFxLwAcCk8KNumPPwcW7wn/TA8rUsZO/TU+Dx9wP63/D2iPIL3k7wMU3K7Q4H9uqahujx37T08oFV2vJp3Xzw9hXw8F1YSu5DcqLuUBX67kdoKvaVjdzulu5k75s6NvOhIczxo8uC8atE0vES4G7wa0SI9UgEDvdlcODyEW5o81Yv3O56gwTzeSaS8fcw6vVlFezyr7MO80OjVu2Mkwbxraqw8CL+NPFHza7wyB5Q85fUeOyGzNrurg5Y6s9+Eu2GGSTyvY8s73Ablu23dpDxLXki8egu8O/ZUCjyqSfI8f58lvBfLDj0m52Y72j9+uxpbXLzbHUA840eAOrrQtLwEy7i8VAg2vH6DXbyZorI8Ql7hPAhOjjxwiOo7OVMMvBDTjjpN85A8upEuPcWRlTxaxbe7ZVxHOs0eHrwtMIC8W31xu7MygDumZRY9ZmaIOrlj3jzvyhA9EZfOOv21Az0hRWo8ZtEIvNPJrTst5O85BUSYu/VFgrudBD07wUUOPKP6kLyg30S5M2z5vDnqqjtRV0w8HeZWOzNWuzsEUEE8tPBZvL6pnLs/ayc8IiakPGloATxYIVE9C3/vuszIozxpis88tlUvu85uhrz2wcG8ILNUOwXptTxlCrI74JBiO4iF+LuW1jc8oPcuvcNJmDt+dhM6PITgvJg5Mj1UUOO8fIqwvNm/xLwz7LU8+4CRvPcaWzzsg0A8dy2qO9Y71rw0k0i8xA8JPSp607wjQoi85qhUu4GLhDwN6qQ7LSdzPJHdrrzNypo8mXU6PHGgAr3ETPw8Ecs7PfHYe7z545E6J/TkPLiv8rxlAiO9x33UvAPRObxAiz28+QNHPO38rztFKMy8SOs5PFaGGT0YIMQ8D2KiPLeU0zl+KKE8jEqevK0Xdjxst+S6n0m5PMyzGDzfkLK8T8MnO+mXxzyBA7m8DTg3vPfge7zwC/W8hH6dPDbL1jw/FIM8jPieO6xliLpa4Zw7XLdvvJpykjwgS6s8tsmYPCr7LbxDiM060EpZuyKFEj0KiGs74y0avRSVAjz8MRo9tIRgPA0YkDydED06CX8hvQ=="
  "h0.fc1.b": f32[32] sha256=8241571edabf8e14a7c8194851ce3ec1e75d80220b5d9b2c0506ae0e7e57a18e base64"20sUvdYizLzFPSa7HinLO0DoYTxiH9+7hsicPA5Wt7vd2Ga8cYiLPJrSlbwPkV+9z6mtvGfV9joCVHy90g3qu4Sj2bvmtem8tOTyvB+KF7wXRjO80GzOPJWr9TvxgAG9rgaMvI8PZzyEURs920v9O+qgyzvPbhg9MrrtuYmSyrs="
  "h0.fc2.w": f32[32,8] sha256=42543594c0d6ad615e777ea71b27dd889cf8a6482ddf254353dbf10bdb2a2599 base64"84vnvOgaKLzrejI9KPDovAW1ajmJvea8T2UoO59ukTyTrZ+7+FFvPMM0bDwpexI8VJgMPaE1fzy628e7nhdfvLh+iryn7hs8gifUu8iSXz3t7hY9KJeMuxCz17uSdQo960gavdn2E7yjxZs8JXCVvGY/HLy2H+a7oohYPF1CNDuJwQM8BRBDPGn2HDqG9LU8gd1uvE1L67y0jxG9CssEvZtkNLxMw6g8q0hkO7shRLz/SK+8JU4tvP5FBLz5Kzm8RLXqvKfpG7zIpaY82yQyvXCvnbvmxy29luxvO/TvdLwK3Cq9DP4DO8HhFD3vuQ47EVm+PMtxu7r2vzC9vbggPNAPCbxJjO+8cJaAPLf+uzuOKiy8eDmOPFnhjrwE11I8xRWavF/3Ljy3WLS8Ff3zPLippjsjw+o84r+GvF0CHLwYkok868NgvXTIrryVRqk8M2gYPJBcoDxBAcu7ss84PKl7b7wwyOC8bdYKvcHINLyL4DO8ATxOvOtbkb3BuSO9dIguvGYZvDulqD28vKuPvDIcPb3omSU99Ge0vGPnCT3ps/88rIWzO/WhO7wsTC07Fuq8vELfqjvkpHc4vFAuPDa4mzxC9A09lnz+u+LyqjwHtYG8xpCSvFWGSryg4qC8RJugPIpDlzyfdNA8h6UEupjRszv5iT280JK8vJp6EjyJ4a87gF+1vD/NPzyrrg697Z1qu4+KTrzobi28g4OxvH8OnDwtczk8PuTBPKULKztRrNS852H4u+E3w7zlZxI8X2XEPCsnzzv6tUi8nzf7u2ugeTvUQ++8/GwwO6yDcDuUlDe8hDkOvLKlSTtiWIm8kbOJvPoGeTzyR4U7suAHPaklpbz+iBO9YYiWPNsMmTySwHm89pb0vEk+vbphpRG9/83xuzAeNb3Xma+7Fj0wvc0vsLvqOPM8ShDFu0jscDxQ3V28Zx+YvNuB+7zdN6Q8/zn+up+fAT3m2se8ILutuxa5PTpIKeA8BZERPbeaY7yyYMG88yESvfgk0zwXQDK7m4xkvJ71BLvHuFW9sooRvVvNkDwWd+E7BI4AO9WirLz/ay883GINPYNE0byvFUi60vcfvLSYyTugs066cXqDu/FSmbzgaba6U/xavPhUg7sVBxq7cLREPCuCULyaWPe7oMimPOx4srsAEs+7McGEPJw2jzs0QkM689VZOzTZ07ybwgU89rLQPJ2kLTz5kwO9IS6aOy4YnLzIIrO73PbbOtKsyrzVstM8b1sSu6fkdTyzeEI8vorVPKu0vDyK6ve8rcjJOKX2Mb0ohh68OE5ePG7mjzxGbc08au4GvNBouzum6qY6kyDKPALS/jwyTAC8vqqZPQ71PLowtQK84BE6PA=="
}
