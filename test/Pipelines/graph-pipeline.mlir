// RUN: kiln-opt %s -split-input-file --kiln-graph-pipeline | FileCheck %s

// CSE merges the two identical adds; the unused constant and none are removed.
// CHECK-LABEL: func.func @cse_and_dce
//  CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf32>)
//  CHECK-NEXT:   %[[S:.+]] = kiln.add %[[A]], %[[B]]
//  CHECK-NEXT:   %[[R:.+]] = kiln.relu %[[S]]
//  CHECK-NEXT:   %[[T:.+]] = kiln.add %[[R]], %[[R]]
//  CHECK-NEXT:   return %[[T]]
func.func @cse_and_dce(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %unused = kiln.constant dense<[1, 2]> : tensor<2xi64>
  %n = kiln.none
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = kiln.relu %0 : tensor<2x3xf32>
  %3 = kiln.relu %1 : tensor<2x3xf32>
  %4 = kiln.add %2, %3 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}

// -----

// Functions no one calls are kept when public (an entry point), removed when
// private.
// CHECK-LABEL: func.func @main
// CHECK-NOT: func.func private @helper
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
