// RUN: kiln-opt %s -split-input-file -verify-diagnostics \
// RUN:   --convert-kiln-to-linalg --kiln-cpu-prepare-entry \
// RUN:   --kiln-cpu-mark-in-place-outputs \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --buffer-results-to-out-params="hoist-static-allocs modify-public-functions" \
// RUN:   --kiln-cpu-elide-aliased-copies | FileCheck %s

// A static KV cache: present is past with the new rows written at the
// position. The cache argument is writable, the rows are copied into its
// buffer, nothing copies the cache itself (no allocation, no copy into the
// out-param), and the module records that the output aliases the input.
// CHECK-LABEL: module attributes {kiln.aliases = {{\[}}["present.0.key", "past_key_values.0.key"]]}
// CHECK: func.func @main(%[[PAST:.+]]: memref<1x2x16x4xf32> {kiln.name = "past_key_values.0.key"}, %[[NEW:.+]]: memref<1x2x1x4xf32> {{.+}}, %[[POS:.+]]: memref<1xi64> {{.+}}, %[[OUT:.+]]: memref<1x2x16x4xf32> {kiln.name = "present.0.key"})
// CHECK-NOT: memref.alloc
// CHECK: scf.for {{.+}} iter_args(%[[CACHE:.+]] = %[[PAST]])
// CHECK: %[[ROWS:.+]] = memref.subview %[[CACHE]]
// CHECK: memref.copy %{{.+}}, %[[ROWS]]
// CHECK-NOT: memref.copy
// CHECK: return
func.func @main(%past: tensor<1x2x16x4xf32> {kiln.name = "past_key_values.0.key"},
                %new: tensor<1x2x1x4xf32> {kiln.name = "new"},
                %pos: tensor<1xi64> {kiln.name = "cache_position"})
    -> (tensor<1x2x16x4xf32> {kiln.name = "present.0.key"}) {
  %y = kiln.tensor_scatter %past, %new, %pos {axis = 2 : i64} : (tensor<1x2x16x4xf32>, tensor<1x2x1x4xf32>, tensor<1xi64>) -> tensor<1x2x16x4xf32>
  return %y : tensor<1x2x16x4xf32>
}

// -----

// The old cache is read after the write: bufferization writes into a copy,
// the copy into the output stays, nothing is declared.
// CHECK-LABEL: module {
// CHECK: func.func @main(%[[PAST:.+]]: memref<1x2x16x4xf32> {{.+}}, %[[NEW:.+]]: memref<1x2x1x4xf32> {{.+}}, %[[POS:.+]]: memref<1xi64> {{.+}}, %[[OUT:.+]]: memref<1x2x16x4xf32> {{.+}}, %[[SUM:.+]]: memref<1x2x16x4xf32> {{.+}})
// CHECK: %[[COPY:.+]] = memref.alloc
// CHECK: memref.copy %[[PAST]], %[[COPY]]
// CHECK: %[[WRITTEN:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[COPY]])
// CHECK: memref.copy %[[WRITTEN]], %[[OUT]]
// expected-remark @+1 {{output 'present.0.key' does not alias input 'past_key_values.0.key': the graph reads the input's old value after writing it, so bufferization writes a copy}}
func.func @main(%past: tensor<1x2x16x4xf32> {kiln.name = "past_key_values.0.key"},
                %new: tensor<1x2x1x4xf32> {kiln.name = "new"},
                %pos: tensor<1xi64> {kiln.name = "cache_position"})
    -> (tensor<1x2x16x4xf32> {kiln.name = "present.0.key"}, tensor<1x2x16x4xf32> {kiln.name = "sum"}) {
  %y = kiln.tensor_scatter %past, %new, %pos {axis = 2 : i64} : (tensor<1x2x16x4xf32>, tensor<1x2x1x4xf32>, tensor<1xi64>) -> tensor<1x2x16x4xf32>
  %s = kiln.add %y, %past : (tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32>) -> tensor<1x2x16x4xf32>
  return %y, %s : tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32>
}
