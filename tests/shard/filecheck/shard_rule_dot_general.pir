// RUN: pir shard %s --mesh tp=2 --place 'w=[S(1)]' --global-view -o - | filecheck %s --check-prefix COLUMN
// RUN: pir shard %s --mesh tp=2 --place 'x=[S(1)]' --place 'w=[S(0)]' --global-view -o - | filecheck %s --check-prefix ROW
// RUN: pir shard %s --mesh dp=2,tp=2 --place 'x=[S(0), R]' --place 'w=[R, S(1)]' --global-view -o - | filecheck %s --check-prefix MESH2
// dot_general: free dims carry their splits to the result (column-parallel: w split by
// columns gives y split by columns, no communication); a split contracting dim gives each
// rank a partial product, P(sum) (row-parallel), all-reduced where a whole value is needed.

// COLUMN:       %y = prim.dot_general(%x, %w) {{.*}} : (!dist.tensor<4x8xf32, mesh<tp=2>, [R]>, !dist.tensor<8x6xf32, mesh<tp=2>, [S(1)]>) -> !dist.tensor<4x6xf32, mesh<tp=2>, [S(1)]>
// COLUMN-NEXT:  func.return(%y)
// COLUMN-NOT:   = dist.

// ROW:       %y.local = prim.dot_general(%x, %w) {{.*}} : (!dist.tensor<4x8xf32, mesh<tp=2>, [S(1)]>, !dist.tensor<8x6xf32, mesh<tp=2>, [S(0)]>) -> !dist.tensor<4x6xf32, mesh<tp=2>, [P(sum)]>
// ROW-NEXT:  %y = dist.all_reduce(%y.local) {mesh_axis = "tp", shard.why = "%y is [P(sum)]; func.return needs [R]"} : (!dist.tensor<4x6xf32, mesh<tp=2>, [P(sum)]>) -> !dist.tensor<4x6xf32, mesh<tp=2>, [R]>
// ROW-NEXT:  func.return(%y)

// Data parallel on dp and column-parallel on tp at once: both free dims carry.
// MESH2:       %y = prim.dot_general(%x, %w) {{.*}} -> !dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), S(1)]>
// MESH2-NEXT:  func.return(%y)
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>) -> (tensor<4x6xf32>) {
    %y = prim.dot_general(%x, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    func.return(%y) : (tensor<4x6xf32>) -> ()
  }
}
