module @pinn_loss {
  func.func @pinn(%w1: tensor<2x16xf64>, %b1: tensor<16xf64>, %w2: tensor<16x16xf64>, %b2: tensor<16xf64>, %w3: tensor<16x1xf64>, %b3: tensor<1xf64>, %x: tensor<Nx1xf64>, %y: tensor<Nx1xf64>, %f: tensor<Nx1xf64>, %xb: tensor<Nx1xf64>, %yb: tensor<Nx1xf64>) -> (tensor<f64>, tensor<f64>) {
    %u_xx = func.call(%x, %y, %w1, %b1, %w2, %b2, %w3, %b3) {callee = @u_xx} : (tensor<Nx1xf64>, tensor<Nx1xf64>, tensor<2x16xf64>, tensor<16xf64>, tensor<16x16xf64>, tensor<16xf64>, tensor<16x1xf64>, tensor<1xf64>) -> tensor<Nx1xf64> loc("/laplacian/u_xx")
    %u_yy = func.call(%x, %y, %w1, %b1, %w2, %b2, %w3, %b3) {callee = @u_yy} : (tensor<Nx1xf64>, tensor<Nx1xf64>, tensor<2x16xf64>, tensor<16xf64>, tensor<16x16xf64>, tensor<16xf64>, tensor<16x1xf64>, tensor<1xf64>) -> tensor<Nx1xf64> loc("/laplacian/u_yy")
    %lap = nn.add(%u_xx, %u_yy) : (tensor<Nx1xf64>, tensor<Nx1xf64>) -> tensor<Nx1xf64> loc("/laplacian")
    %neg_lap = nn.neg(%lap) : (tensor<Nx1xf64>) -> tensor<Nx1xf64> loc("/residual/neg")
    %r = nn.sub(%neg_lap, %f) : (tensor<Nx1xf64>, tensor<Nx1xf64>) -> tensor<Nx1xf64> loc("/residual")
    %r2 = nn.mul(%r, %r) : (tensor<Nx1xf64>, tensor<Nx1xf64>) -> tensor<Nx1xf64> loc("/residual/square")
    %residual = nn.reduce_mean(%r2) {keepdims = false} : (tensor<Nx1xf64>) -> tensor<f64> loc("/residual/mean")
    %ub = func.call(%xb, %yb, %w1, %b1, %w2, %b2, %w3, %b3) {callee = @main} : (tensor<Nx1xf64>, tensor<Nx1xf64>, tensor<2x16xf64>, tensor<16xf64>, tensor<16x16xf64>, tensor<16xf64>, tensor<16x1xf64>, tensor<1xf64>) -> tensor<Nx1xf64> loc("/boundary/u")
    %ub2 = nn.mul(%ub, %ub) : (tensor<Nx1xf64>, tensor<Nx1xf64>) -> tensor<Nx1xf64> loc("/boundary/square")
    %boundary = nn.reduce_mean(%ub2) {keepdims = false} : (tensor<Nx1xf64>) -> tensor<f64> loc("/boundary/mean")
    %loss = nn.add(%residual, %boundary) : (tensor<f64>, tensor<f64>) -> tensor<f64> loc("/loss")
    func.return(%loss, %residual) : (tensor<f64>, tensor<f64>) -> ()
  }
}
