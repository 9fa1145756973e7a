// RUN: pir optimize %s -O1 | filecheck %s
// RUN: pir optimize %s -O1 --print-ir-after=cse --timing 2>&1 >/dev/null | filecheck %s --check-prefix=LOG
// RUN: d=$(mktemp -d) && pir optimize %s -O1 --dump-dir $d -o $d/out.pir && head -n 1 $d/02-fold.pir | filecheck %s --check-prefix=DUMP && rm -r $d
// RUN: not pir optimize %s -p 'cse,nosuch' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not pir optimize %s -p cse -O1 2>&1 | filecheck %s --check-prefix=USAGE
// -O1 (canonicalize,fold,cse,dce): each pass uncovers work for the next one.  x*1 goes
// (canonicalize), 2*2 becomes 4 (fold), the two adds of a and 4 become one (cse).

// CHECK:      func.func @main(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
// CHECK-NEXT:   %four = builtin.constant() {value = dense<4.0> : tensor<f32>}
// CHECK-NEXT:   %e = nn.exp(%x)
// CHECK-NEXT:   %b = nn.add(%e, %four)
// CHECK-NEXT:   %y = nn.mul(%b, %b)
// CHECK-NEXT:   func.return(%y)

// LOG:      // ----- IR after cse -----
// LOG-NEXT: module {
// LOG:        %y = nn.mul(%b, %b)
// LOG:      pass               time (ms)   share  ops before  ops after
// LOG-NEXT: canonicalize {{.*}} 9 7
// LOG-NEXT: fold {{.*}} 7 6
// LOG-NEXT: cse {{.*}} 6 5
// LOG-NEXT: dce {{.*}} 5 5
// LOG-NEXT: total

// DUMP: // pir-pipeline: fold{size-limit=1048576}

// ERR: pir: error: unknown pass 'nosuch' (passes: {{.*}}canonicalize, cse, dce, {{.*}})

// USAGE: pir: error: give either -p or -O, not both
module {
  func.func @main(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %one = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %two = builtin.constant() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %four = nn.mul(%two, %two) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %e = nn.exp(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %a = nn.mul(%e, %one) : (tensor<Bx3xf32>, tensor<f32>) -> tensor<Bx3xf32>
    %b = nn.add(%a, %four) : (tensor<Bx3xf32>, tensor<f32>) -> tensor<Bx3xf32>
    %c = nn.add(%four, %a) : (tensor<f32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %y = nn.mul(%b, %c) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%y) : (tensor<Bx3xf32>) -> ()
  }
}
