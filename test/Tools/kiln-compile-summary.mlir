// RUN: kiln-compile %s --emit=graph --summary -o %t.mlir | FileCheck %s
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: kiln-compile %s --emit=kiln --summary -o - 2>&1 >/dev/null | FileCheck %s --check-prefix=STDERR

// CHECK: model: {{.*}}kiln-compile-summary.mlir
// CHECK: op                               import    graph
// CHECK: kiln.add                              2        1
// CHECK: kiln.constant                         2        1
// CHECK: kiln.none                             1        0
// CHECK: total                                 5        2
// CHECK: parameters (import): 2 constant tensors, 1,006 elements, 4,024 bytes
// CHECK: parameters (graph): 1 constant tensors, 1,000 elements, 4,000 bytes
// CHECK: IR (graph) written to: {{.*}}.mlir

// IR: func.func @main
// IR-COUNT-1: kiln.add
// IR-NOT: kiln.add

// STDERR: IR (kiln) written to: <stdout>

func.func @main(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %w = kiln.constant dense<2.0> : tensor<1000xf32>
  %unused = kiln.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  %n = kiln.none
  %0 = kiln.add %x, %w : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
  %1 = kiln.add %x, %w : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
  return %1 : tensor<1000xf32>
}
