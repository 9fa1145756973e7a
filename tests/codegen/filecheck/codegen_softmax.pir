// RUN: pir codegen %s --target 'llvm -mcpu=skylake-avx512 -num-cores=4' | filecheck %s
// RUN: pir codegen %s --target 'llvm -mcpu=skylake-avx512 -num-cores=4' | pir verify -
// A fused softmax becomes one kernel.tvm: the same region, plus the C symbol made from the
// result's name, the scheduled TIR of a function of that name, and the target.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %gpu_0/softmax_1 = kernel.tvm(%x) ({
// CHECK-NEXT:    ^bb0(%x_1: tensor<Nx8xf32>):
// CHECK-NEXT:      prim.reduce_max(%x_1)
// CHECK:           fusion.yield
// CHECK-NEXT:    }) {kind = "reduction", symbol = "gpu_0_softmax_1", source = "{{.*}}def gpu_0_softmax_1(x_1: T.Buffer((\"N\", 8), \"float32\"){{.*}}T.parallel(N){{.*}}", target = "llvm -mcpu=skylake-avx512 -num-cores=4", pir.name = "gpu_0/softmax_1"} : (tensor<Nx8xf32>) -> tensor<Nx8xf32>
// CHECK-NEXT:    func.return(%gpu_0/softmax_1)

module @test_softmax {
  func.func @main(%x: tensor<Nx8xf32>) -> (tensor<Nx8xf32>) {
    %gpu_0/softmax_1 = fusion.group(%x) ({
    ^bb0(%x_1: tensor<Nx8xf32>):
      %m = prim.reduce_max(%x_1) {axes = [1], keepdims = true} : (tensor<Nx8xf32>) -> tensor<Nx1xf32>
      %mb = prim.broadcast_in_dim(%m) {broadcast_dimensions = [0, 1]} : (tensor<Nx1xf32>) -> tensor<Nx8xf32>
      %d = prim.sub(%x_1, %mb) : (tensor<Nx8xf32>, tensor<Nx8xf32>) -> tensor<Nx8xf32>
      %e = prim.exp(%d) : (tensor<Nx8xf32>) -> tensor<Nx8xf32>
      %s = prim.reduce_sum(%e) {axes = [1], keepdims = true} : (tensor<Nx8xf32>) -> tensor<Nx1xf32>
      %sb = prim.broadcast_in_dim(%s) {broadcast_dimensions = [0, 1]} : (tensor<Nx1xf32>) -> tensor<Nx8xf32>
      %y = prim.div(%e, %sb) : (tensor<Nx8xf32>, tensor<Nx8xf32>) -> tensor<Nx8xf32>
      fusion.yield(%y) : (tensor<Nx8xf32>) -> ()
    }) {kind = "reduction"} : (tensor<Nx8xf32>) -> tensor<Nx8xf32>
    func.return(%gpu_0/softmax_1) : (tensor<Nx8xf32>) -> ()
  }
}
