// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s

// Branches of different lengths: the result's dim is dynamic. The regions
// use values defined outside (ONNX's outer scope).
// CHECK-LABEL: func.func @if_branches
//       CHECK:   %[[R:.+]] = kiln.if %{{.+}} : tensor<i1> -> (tensor<?xf32>) {
//       CHECK:     %[[A:.+]] = kiln.relu %{{.+}} : tensor<4xf32>
//       CHECK:     kiln.yield %[[A]] : tensor<4xf32>
//       CHECK:   } else {
//       CHECK:     kiln.yield %{{.+}} : tensor<3xf32>
//       CHECK:   }
//       CHECK:   return %[[R]]
func.func @if_branches(%c: tensor<i1>, %x: tensor<4xf32>, %y: tensor<3xf32>) -> tensor<?xf32> {
  %r = kiln.if %c : tensor<i1> -> (tensor<?xf32>) {
    %a = kiln.relu %x : tensor<4xf32>
    kiln.yield %a : tensor<4xf32>
  } else {
    kiln.yield %y : tensor<3xf32>
  }
  return %r : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @loop_carried_and_scan
//       CHECK:   kiln.loop %{{.+}}, %{{.+}}, %{{.+}} : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> (tensor<2xf32>, tensor<?x2xf32>) {
//       CHECK:   ^bb0(%{{.+}}: tensor<i64>, %[[GO:.+]]: tensor<i1>, %[[ACC:.+]]: tensor<2xf32>):
//       CHECK:     %[[N:.+]] = kiln.add %[[ACC]], %{{.+}}
//       CHECK:     kiln.yield %[[GO]], %[[N]], %[[N]] : tensor<i1>, tensor<2xf32>, tensor<2xf32>
func.func @loop_carried_and_scan(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<2xf32>, %y: tensor<2xf32>) -> (tensor<2xf32>, tensor<?x2xf32>) {
  %sum, %all = kiln.loop %m, %c, %x : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> (tensor<2xf32>, tensor<?x2xf32>) {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<2xf32>):
    %next = kiln.add %acc, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    kiln.yield %go, %next, %next : tensor<i1>, tensor<2xf32>, tensor<2xf32>
  }
  return %sum, %all : tensor<2xf32>, tensor<?x2xf32>
}

// -----

// No condition and a constant trip count: the scan output's length is
// static.
// CHECK-LABEL: func.func @loop_fixed_trip_count
//       CHECK:   kiln.loop %{{.+}}, %{{.+}} : (tensor<i64>, none) -> tensor<3x2xf32>
func.func @loop_fixed_trip_count(%y: tensor<2xf32>) -> tensor<3x2xf32> {
  %m = kiln.constant dense<3> : tensor<i64>
  %none = kiln.none
  %all = kiln.loop %m, %none : (tensor<i64>, none) -> tensor<3x2xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>):
    kiln.yield %go, %y : tensor<i1>, tensor<2xf32>
  }
  return %all : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @scan_running_sum
//       CHECK:   kiln.scan %{{.+}}, %{{.+}} {num_scan_inputs = 1 : i64, scan_output_axes = array<i64: 1>} : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<2x3xf32>) {
//       CHECK:   ^bb0(%{{.+}}: tensor<2xf32>, %{{.+}}: tensor<2xf32>):
func.func @scan_running_sum(%init: tensor<2xf32>, %xs: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<2x3xf32>) {
  %sum, %running = kiln.scan %init, %xs {num_scan_inputs = 1 : i64, scan_output_axes = array<i64: 1>} : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<2x3xf32>) {
  ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
    %next = kiln.add %acc, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    kiln.yield %next, %next : tensor<2xf32>, tensor<2xf32>
  }
  return %sum, %running : tensor<2xf32>, tensor<2x3xf32>
}
