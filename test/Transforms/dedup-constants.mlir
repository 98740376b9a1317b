// RUN: kiln-opt %s -split-input-file -kiln-dedup-constants | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-dedup-constants -kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// kiln-dedup-constants merges constants of one type with the same bytes,
// whatever their attribute kind or blob name.

// Two blobs with different names and the same bytes, and a dense constant
// with those bytes too, are one constant; the first is kept.
// CHECK-LABEL: func.func @same_bytes
// CHECK: %[[A:.+]] = kiln.constant dense_resource<weight_a> : tensor<4xf32>
// CHECK-NOT: kiln.constant
// CHECK: return %[[A]], %[[A]], %[[A]]
func.func @same_bytes() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = kiln.constant dense_resource<weight_a> : tensor<4xf32>
  %b = kiln.constant dense_resource<weight_b> : tensor<4xf32>
  %c = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weight_a: "0x040000000000803F000000400000404000008040",
      weight_b: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// -----

// Kept apart: other bytes, and another shape or element type with the same
// bytes.
// CHECK-LABEL: func.func @different
// CHECK-COUNT-5: kiln.constant
// CHECK: return
func.func @different() -> (tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<4xi32>, tensor<1xf32>) {
  %a = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = kiln.constant dense<[1.0, 2.0, 3.0, 5.0]> : tensor<4xf32>
  %c = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %d = kiln.constant dense<[1065353216, 1073741824, 1077936128, 1082130432]> : tensor<4xi32>
  %e = kiln.constant dense<1.0> : tensor<1xf32>
  return %a, %b, %c, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<4xi32>, tensor<1xf32>
}

// -----

// Equal splats merge; uses of the removed one are redirected.
// CHECK-LABEL: func.func @splats
// CHECK: %[[Z:.+]] = kiln.constant dense<0.000000e+00> : tensor<8xf32>
// CHECK-NOT: kiln.constant
// CHECK: kiln.add %[[Z]], %[[Z]]
func.func @splats() -> tensor<8xf32> {
  %a = kiln.constant dense<0.0> : tensor<8xf32>
  %b = kiln.constant dense<0.0> : tensor<8xf32>
  %0 = kiln.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// Two 16-byte duplicates and one splat (4 bytes stored).
// STATS-LABEL: kiln-dedup-constants
// STATS-NEXT: (constants-deduplicated) 3 :
// STATS-NEXT: (bytes-saved) 36 :
