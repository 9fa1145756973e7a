module {
  func.func @main(%x: tensor<BxSx4xf32>, %s: tensor<3x4xf32>, %y: tensor<NxCx5xf32>, %p: tensor<Cxf32>, %q: tensor<4xf32>) -> (tensor<BxSx4xf32>, tensor<NxCx5xf32>, tensor<NxCx5xf32>, tensor<BxSx4xf32>, tensor<NxCx5xf32>) {
    %ln = nn.layer_norm(%x, %s) {axis = 1} : (tensor<BxSx4xf32>, tensor<3x4xf32>) -> tensor<BxSx4xf32>
    %lrn = nn.lrn(%y) {size = 3} : (tensor<NxCx5xf32>) -> tensor<NxCx5xf32>
    %gn = nn.group_norm(%y, %p, %p) {num_groups = 2} : (tensor<NxCx5xf32>, tensor<Cxf32>, tensor<Cxf32>) -> tensor<NxCx5xf32>
    %bn = nn.batch_norm(%y, %q, %q, %q, %q) : (tensor<NxCx5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<NxCx5xf32>
    %hm = nn.hardmax(%x) {axis = 1} : (tensor<BxSx4xf32>) -> tensor<BxSx4xf32>
    func.return(%ln, %lrn, %gn, %hm, %bn) : (tensor<BxSx4xf32>, tensor<NxCx5xf32>, tensor<NxCx5xf32>, tensor<BxSx4xf32>, tensor<NxCx5xf32>) -> ()
  }
}
