// RUN: kiln-opt %s --convert-kiln-to-linalg --canonicalize --cse --split-input-file | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file \
// RUN:   | mlir-opt --split-input-file --one-shot-bufferize=bufferize-function-boundaries -o /dev/null
// TensorScatter (a KV cache's update): a loop over the batch carrying the
// cache (its init is the past cache itself: bufferized, the rows go into
// its buffer), the entry's rows inserted at its run-time write index,
// guarded so that a write that does not fit writes nothing.

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[PAST:.+]]: tensor<?x2x16x4xf32> {{.+}}, %[[NEW:.+]]: tensor<?x2x?x4xf32> {{.+}}, %[[POS:.+]]: tensor<?xi64> {{.+}})
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[B:.+]] = tensor.dim %[[PAST]], %[[C0]]
// CHECK: %[[ROWS:.+]] = tensor.dim %[[NEW]], %[[C2]]
// CHECK: %[[R:.+]] = scf.for %[[E:.+]] = %[[C0]] to %[[B]] step %[[C1]] iter_args(%[[CACHE:.+]] = %[[PAST]])
// CHECK: %[[RAW:.+]] = tensor.extract %[[POS]][%[[E]]]
// CHECK: %[[START:.+]] = arith.index_cast %[[RAW]] : i64 to index
// CHECK: %[[SLICE:.+]] = tensor.extract_slice %[[NEW]][%[[E]], 0, 0, 0] [1, 2, %[[ROWS]], 4] [1, 1, 1, 1]
// CHECK: %[[END:.+]] = arith.addi %[[START]], %[[ROWS]]
// CHECK: %[[HI:.+]] = arith.cmpi sle, %[[END]], %[[C16]]
// CHECK: %[[LO:.+]] = arith.cmpi sge, %[[START]], %[[C0]]
// CHECK: %[[FITS:.+]] = arith.andi %[[LO]], %[[HI]]
// CHECK: %[[W:.+]] = scf.if %[[FITS]]
// CHECK: %[[INS:.+]] = tensor.insert_slice %[[SLICE]] into %[[CACHE]][%[[E]], 0, %[[START]], 0] [1, 2, %[[ROWS]], 4] [1, 1, 1, 1]
// CHECK-NEXT: scf.yield %[[INS]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[CACHE]]
// CHECK: scf.yield %[[W]]
// CHECK: return %[[R]]
func.func @main(%past: tensor<?x2x16x4xf32>, %new: tensor<?x2x?x4xf32>, %pos: tensor<?xi64>) -> tensor<?x2x16x4xf32> {
  %y = kiln.tensor_scatter %past, %new, %pos {axis = 2 : i64, mode = "linear"} : (tensor<?x2x16x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi64>) -> tensor<?x2x16x4xf32>
  return %y : tensor<?x2x16x4xf32>
}

// -----

// Circular, no write_indices (0): one row at a time, row r of entry b at
// ((0 + r) mod 8 + 8) mod 8.
// CHECK-LABEL: func.func @circular
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : index
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK: scf.for %[[B:.+]] = {{.+}} iter_args(%[[OUTER:.+]] = %{{.+}})
// CHECK-NEXT: scf.for %[[ROW:.+]] = %{{.+}} to %[[C3]] {{.+}} iter_args(%[[CACHE:.+]] = %[[OUTER]])
// CHECK-NEXT: %[[SLICE:.+]] = tensor.extract_slice %{{.+}}[%[[B]], %[[ROW]], 0] [1, 1, 4]
// CHECK-NEXT: %[[M:.+]] = arith.remsi %[[ROW]], %[[C8]]
// CHECK-NEXT: %[[P:.+]] = arith.addi %[[M]], %[[C8]]
// CHECK-NEXT: %[[POS:.+]] = arith.remsi %[[P]], %[[C8]]
// CHECK-NEXT: tensor.insert_slice %[[SLICE]] into %[[CACHE]][%[[B]], %[[POS]], 0] [1, 1, 4]
func.func @circular(%past: tensor<2x8x4xf16>, %new: tensor<2x3x4xf16>) -> tensor<2x8x4xf16> {
  %none = kiln.none
  %y = kiln.tensor_scatter %past, %new, %none {axis = 1 : i64, mode = "circular"} : (tensor<2x8x4xf16>, tensor<2x3x4xf16>, none) -> tensor<2x8x4xf16>
  return %y : tensor<2x8x4xf16>
}
