// RUN: kiln-opt %s --convert-kiln-to-linalg -split-input-file | FileCheck %s
// kiln.if -> scf.if, kiln.loop -> scf.while, kiln.scan -> scf.for, on
// tensors; the regions move into the scf ops, a loop body inside an
// scf.execute_region whose scf.yield is the body's kiln.yield.

// CHECK-LABEL: func.func @main(
//  CHECK-SAME:     %[[C:.+]]: tensor<i1>, %[[X:.+]]: tensor<4xf32>, %[[Y:.+]]: tensor<3xf32>)
//       CHECK:   %[[COND:.+]] = tensor.extract %[[C]][] : tensor<i1>
//       CHECK:   %[[R:.+]] = scf.if %[[COND]] -> (tensor<?xf32>) {
//       CHECK:     %[[RELU:.+]] = linalg.generic {{.+}} ins(%[[X]] : tensor<4xf32>)
//       CHECK:     %[[T:.+]] = tensor.cast %[[RELU]] : tensor<4xf32> to tensor<?xf32>
//       CHECK:     scf.yield %[[T]] : tensor<?xf32>
//       CHECK:   } else {
//       CHECK:     %[[E:.+]] = tensor.cast %[[Y]] : tensor<3xf32> to tensor<?xf32>
//       CHECK:     scf.yield %[[E]] : tensor<?xf32>
//       CHECK:   return %[[R]]
func.func @main(%c: tensor<i1>, %x: tensor<4xf32>, %y: tensor<3xf32>) -> tensor<?xf32> {
  %r = kiln.if %c : tensor<i1> -> (tensor<?xf32>) {
    %a = kiln.relu %x : tensor<4xf32>
    kiln.yield %a : tensor<4xf32>
  } else {
    kiln.yield %y : tensor<3xf32>
  }
  return %r : tensor<?xf32>
}

// -----

// The loop runs while i < M and the condition holds; the scan output's
// rows go into a tensor that doubles when full, sliced to the number of
// iterations at the end.
// CHECK-LABEL: func.func @main(
//  CHECK-SAME:     %[[M:.+]]: tensor<i64>, %[[C:.+]]: tensor<i1>, %[[X:.+]]: tensor<2xf32>, %[[Y:.+]]: tensor<2xf32>)
//   CHECK-DAG:   %[[M64:.+]] = tensor.extract %[[M]][] : tensor<i64>
//   CHECK-DAG:   %[[MAX:.+]] = arith.index_cast %[[M64]] : i64 to index
//   CHECK-DAG:   %[[C0:.+]] = tensor.extract %[[C]][] : tensor<i1>
//       CHECK:   %[[BUF:.+]] = tensor.empty(%{{.+}}) : tensor<?x2xf32>
//       CHECK:   %[[W:.+]]:4 = scf.while (%[[I:.+]] = %{{.+}}, %[[GO:.+]] = %[[C0]], %[[ACC:.+]] = %[[X]], %[[ROWS:.+]] = %[[BUF]]) : (index, i1, tensor<2xf32>, tensor<?x2xf32>)
//       CHECK:     %[[LT:.+]] = arith.cmpi slt, %[[I]], %[[MAX]] : index
//       CHECK:     %[[BOTH:.+]] = arith.andi %[[LT]], %[[GO]] : i1
//       CHECK:     scf.condition(%[[BOTH]]) %[[I]], %[[GO]], %[[ACC]], %[[ROWS]]
//       CHECK:   } do {
//       CHECK:   ^bb0(%[[I:.+]]: index, %[[GO:.+]]: i1, %[[ACC:.+]]: tensor<2xf32>, %[[ROWS:.+]]: tensor<?x2xf32>):
//       CHECK:     %[[I64:.+]] = arith.index_cast %[[I]] : index to i64
//       CHECK:     tensor.from_elements %[[I64]] : tensor<i64>
//       CHECK:     tensor.from_elements %[[GO]] : tensor<i1>
//       CHECK:     %[[OUT:.+]]:3 = scf.execute_region -> (tensor<i1>, tensor<2xf32>, tensor<2xf32>) {
//       CHECK:       %[[NEXT:.+]] = linalg.generic {{.+}} ins(%[[ACC]], %[[Y]] : tensor<2xf32>, tensor<2xf32>)
//       CHECK:       scf.yield %{{.+}}, %[[NEXT]], %[[NEXT]] : tensor<i1>, tensor<2xf32>, tensor<2xf32>
//       CHECK:     }
//       CHECK:     %[[I1:.+]] = arith.addi %[[I]], %{{.+}} : index
//       CHECK:     %[[MORE:.+]] = tensor.extract %[[OUT]]#0[] : tensor<i1>
//       CHECK:     %[[CAP:.+]] = tensor.dim %[[ROWS]], %{{.+}} : tensor<?x2xf32>
//       CHECK:     %[[FULL:.+]] = arith.cmpi uge, %[[I]], %[[CAP]] : index
//       CHECK:     %[[ROOM:.+]] = scf.if %[[FULL]] -> (tensor<?x2xf32>) {
//       CHECK:       tensor.insert_slice %[[ROWS]] into
//       CHECK:     } else {
//       CHECK:       scf.yield %[[ROWS]] : tensor<?x2xf32>
//       CHECK:     %[[WRITTEN:.+]] = tensor.insert_slice %[[OUT]]#2 into %[[ROOM]][%[[I]], 0] [1, 2] [1, 1] : tensor<2xf32> into tensor<?x2xf32>
//       CHECK:     scf.yield %[[I1]], %[[MORE]], %[[OUT]]#1, %[[WRITTEN]] : index, i1, tensor<2xf32>, tensor<?x2xf32>
//       CHECK:   %[[ALL:.+]] = tensor.extract_slice %[[W]]#3[0, 0] [%[[W]]#0, 2] [1, 1] : tensor<?x2xf32> to tensor<?x2xf32>
//       CHECK:   return %[[W]]#2, %[[ALL]]
func.func @main(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<2xf32>, %y: tensor<2xf32>) -> (tensor<2xf32>, tensor<?x2xf32>) {
  %sum, %all = kiln.loop %m, %c, %x : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> (tensor<2xf32>, tensor<?x2xf32>) {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<2xf32>):
    %next = kiln.add %acc, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %none = kiln.none
    %s = kiln.reduce_sum %next, %none {keepdims = 0 : i64} : (tensor<2xf32>, none) -> tensor<f32>
    %z = kiln.constant dense<10.0> : tensor<f32>
    %more = kiln.less %s, %z : (tensor<f32>, tensor<f32>) -> tensor<i1>
    kiln.yield %more, %next, %next : tensor<i1>, tensor<2xf32>, tensor<2xf32>
  }
  return %sum, %all : tensor<2xf32>, tensor<?x2xf32>
}

// -----

// A constant trip count and no condition: three rows, no condition read.
// CHECK-LABEL: func.func @main(
//       CHECK:   %[[BUF:.+]] = tensor.empty(%{{.+}}) : tensor<?x2xf32>
//       CHECK:   scf.while
//   CHECK-NOT:     arith.andi
//       CHECK:     scf.condition
//       CHECK:   tensor.extract_slice %{{.+}}[0, 0] [3, 2] [1, 1] : tensor<?x2xf32> to tensor<3x2xf32>
func.func @main(%y: tensor<2xf32>) -> tensor<3x2xf32> {
  %m = kiln.constant dense<3> : tensor<i64>
  %none = kiln.none
  %all = kiln.loop %m, %none : (tensor<i64>, none) -> tensor<3x2xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>):
    kiln.yield %go, %y : tensor<i1>, tensor<2xf32>
  }
  return %all : tensor<3x2xf32>
}

// -----

// Scan: a loop over the scan length; the input read backwards, the output
// written along axis 1.
// CHECK-LABEL: func.func @main(
//  CHECK-SAME:     %[[INIT:.+]]: tensor<2xf32>, %[[XS:.+]]: tensor<3x2xf32>)
//   CHECK-DAG:   %[[C3:.+]] = arith.constant 3 : index
//   CHECK-DAG:   %[[C1:.+]] = arith.constant 1 : index
//       CHECK:   %[[LAST:.+]] = arith.subi %[[C3]], %[[C1]] : index
//       CHECK:   %[[OUT:.+]] = tensor.empty() : tensor<2x3xf32>
//       CHECK:   %[[F:.+]]:2 = scf.for %[[T:.+]] = %{{.+}} to %[[C3]] step %[[C1]] iter_args(%[[ACC:.+]] = %[[INIT]], %[[ROWS:.+]] = %[[OUT]])
//       CHECK:     %[[BACK:.+]] = arith.subi %[[LAST]], %[[T]] : index
//       CHECK:     %[[X:.+]] = tensor.extract_slice %[[XS]][%[[BACK]], 0] [1, 2] [1, 1] : tensor<3x2xf32> to tensor<2xf32>
//       CHECK:     %[[R:.+]]:2 = scf.execute_region -> (tensor<2xf32>, tensor<2xf32>) {
//       CHECK:       linalg.generic {{.+}} ins(%[[ACC]], %[[X]] : tensor<2xf32>, tensor<2xf32>)
//       CHECK:     %[[W:.+]] = tensor.insert_slice %[[R]]#1 into %[[ROWS]][0, %[[T]]] [2, 1] [1, 1] : tensor<2xf32> into tensor<2x3xf32>
//       CHECK:     scf.yield %[[R]]#0, %[[W]] : tensor<2xf32>, tensor<2x3xf32>
//       CHECK:   return %[[F]]#0, %[[F]]#1
func.func @main(%init: tensor<2xf32>, %xs: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<2x3xf32>) {
  %sum, %running = kiln.scan %init, %xs {num_scan_inputs = 1 : i64, scan_input_directions = array<i64: 1>, scan_output_axes = array<i64: 1>} : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<2x3xf32>) {
  ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
    %next = kiln.add %acc, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    kiln.yield %next, %next : tensor<2xf32>, tensor<2xf32>
  }
  return %sum, %running : tensor<2xf32>, tensor<2x3xf32>
}

// -----

// The iteration number sizes a slice [i, i + 1) in the body (a symbol
// bound inside the loop): one element, a static dim, which the Add
// broadcasts as a 1.
// CHECK-LABEL: func.func @main(
//       CHECK:   scf.while
//       CHECK:   ^bb0(%{{.+}}: index,
//       CHECK:     scf.execute_region
//       CHECK:       %[[ROW:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<1xf32>)
//       CHECK:       linalg.generic {{.+}} ins(%{{.+}}, %[[ROW]] : tensor<1xf32>, tensor<1xf32>)
func.func @main(%m: tensor<i64>, %t: tensor<8xf32>, %x: tensor<1xf32>) -> tensor<1xf32> {
  %none = kiln.none
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %r = kiln.loop %m, %none, %x : (tensor<i64>, none, tensor<1xf32>) -> tensor<1xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<1xf32>):
    %one = kiln.constant dense<1> : tensor<i64>
    %end = kiln.add %i, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
    %s = kiln.unsqueeze %i, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %e = kiln.unsqueeze %end, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %row = kiln.slice %t, %s, %e, %none, %none : (tensor<8xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<?xf32>
    %next = kiln.add %acc, %row : (tensor<1xf32>, tensor<?xf32>) -> tensor<1xf32>
    kiln.yield %go, %next : tensor<i1>, tensor<1xf32>
  }
  return %r : tensor<1xf32>
}
