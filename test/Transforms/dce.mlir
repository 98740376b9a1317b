// RUN: kiln-opt %s -split-input-file --kiln-dce | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-dce --kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS

// STATS: kiln-dce
// STATS-NEXT: (ops-erased) 4 : Dead ops erased

// A dead chain goes in one sweep, producers after their users.
// CHECK-LABEL: func.func @dead_chain
//  CHECK-SAME: (%[[A:.+]]: tensor<4xf32>)
//  CHECK-NEXT:   return %[[A]]
func.func @dead_chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = kiln.constant dense<1.0> : tensor<4xf32>
  %0 = kiln.add %a, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = kiln.relu %0 : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// Ops whose results are used stay, and so does everything they read; an
// unused result of a multi-result op does not make the op dead.
// CHECK-LABEL: func.func @live
//       CHECK:   kiln.max_pool
//       CHECK:   kiln.relu
//   CHECK-NOT:   kiln.sigmoid
func.func @live(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %y, %i = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>)
  %r = kiln.relu %y : tensor<1x1x2x2xf32>
  %s = kiln.sigmoid %y : tensor<1x1x2x2xf32>
  return %r : tensor<1x1x2x2xf32>
}
