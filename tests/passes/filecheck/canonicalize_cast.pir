// RUN: pir optimize %s -p canonicalize | filecheck %s
// Redundant casts, nn and prim: a cast to the type it has, and a cast through a type that
// holds every value of the source exactly.  Through an inexact type, both casts stay.

module {
  // CHECK-LABEL: func.func @cast_same_type(
  // CHECK-NEXT:    %r = nn.exp(%x)
  // CHECK-NEXT:    %s = prim.exp(%x)
  func.func @cast_same_type(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>, tensor<Bx3xf32>) {
    %a = nn.cast(%x) {to = f32} : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %b = prim.cast(%x) {dtype = f32} : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %s = prim.exp(%b) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r, %s) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> ()
  }
  // f16 -> f32 -> i32 is f16 -> i32; i16 -> f32 -> f16 is i16 -> f16.
  // CHECK-LABEL: func.func @cast_cast_exact(
  // CHECK-NEXT:    %b = nn.cast(%x) {to = i32} : (tensor<4xf16>) -> tensor<4xi32>
  // CHECK-NEXT:    %d = prim.cast(%i) {dtype = f16} : (tensor<4xi16>) -> tensor<4xf16>
  // CHECK-NEXT:    func.return(%b, %d)
  func.func @cast_cast_exact(%x: tensor<4xf16>, %i: tensor<4xi16>) -> (tensor<4xi32>, tensor<4xf16>) {
    %a = nn.cast(%x) {to = f32} : (tensor<4xf16>) -> tensor<4xf32>
    %b = nn.cast(%a) {to = i32} : (tensor<4xf32>) -> tensor<4xi32>
    %c = prim.cast(%i) {dtype = f32} : (tensor<4xi16>) -> tensor<4xf32>
    %d = prim.cast(%c) {dtype = f16} : (tensor<4xf32>) -> tensor<4xf16>
    func.return(%b, %d) : (tensor<4xi32>, tensor<4xf16>) -> ()
  }
  // A round trip through an exact type is nothing: i1 -> i32 -> i1, ui8 -> i16 -> ui8.
  // CHECK-LABEL: func.func @cast_round_trip(
  // CHECK-NEXT:    %r = nn.xor(%p, %p)
  // CHECK-NEXT:    %s = prim.add(%u, %u)
  func.func @cast_round_trip(%p: tensor<4xi1>, %u: tensor<4xui8>) -> (tensor<4xi1>, tensor<4xui8>) {
    %a = nn.cast(%p) {to = i32} : (tensor<4xi1>) -> tensor<4xi32>
    %b = nn.cast(%a) {to = i1} : (tensor<4xi32>) -> tensor<4xi1>
    %r = nn.xor(%b, %p) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    %c = prim.cast(%u) {dtype = i16} : (tensor<4xui8>) -> tensor<4xi16>
    %d = prim.cast(%c) {dtype = ui8} : (tensor<4xi16>) -> tensor<4xui8>
    %s = prim.add(%d, %u) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
    func.return(%r, %s) : (tensor<4xi1>, tensor<4xui8>) -> ()
  }
  // f32 -> f16 rounds, i32 -> f32 loses large integers, ui8 -> i8 wraps, f32 -> bf16
  // rounds: every pair stays.
  // CHECK-LABEL: func.func @cast_cast_inexact(
  // CHECK-COUNT-8: .cast(
  // CHECK-NEXT:    func.return
  func.func @cast_cast_inexact(%x: tensor<4xf32>, %i: tensor<4xi32>, %u: tensor<4xui8>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xui8>, tensor<4xf32>) {
    %a = nn.cast(%x) {to = f16} : (tensor<4xf32>) -> tensor<4xf16>
    %b = nn.cast(%a) {to = f32} : (tensor<4xf16>) -> tensor<4xf32>
    %c = nn.cast(%i) {to = f32} : (tensor<4xi32>) -> tensor<4xf32>
    %d = nn.cast(%c) {to = i32} : (tensor<4xf32>) -> tensor<4xi32>
    %e = prim.cast(%u) {dtype = i8} : (tensor<4xui8>) -> tensor<4xi8>
    %f = prim.cast(%e) {dtype = ui8} : (tensor<4xi8>) -> tensor<4xui8>
    %g = prim.cast(%x) {dtype = bf16} : (tensor<4xf32>) -> tensor<4xbf16>
    %h = prim.cast(%g) {dtype = f32} : (tensor<4xbf16>) -> tensor<4xf32>
    func.return(%b, %d, %f, %h) : (tensor<4xf32>, tensor<4xi32>, tensor<4xui8>, tensor<4xf32>) -> ()
  }
}
