// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @constants
//       CHECK:   kiln.constant dense<[1, 2]> : tensor<2xi64>
//       CHECK:   kiln.constant dense<1.500000e+00> : tensor<f32>
//       CHECK:   kiln.constant dense_resource<weights> : tensor<2x2xf32>
//       CHECK:   kiln.none
func.func @constants() -> (tensor<2xi64>, tensor<f32>, tensor<2x2xf32>, none) {
  %0 = kiln.constant dense<[1, 2]> : tensor<2xi64>
  %1 = kiln.constant dense<1.5> : tensor<f32>
  %2 = kiln.constant dense_resource<weights> : tensor<2x2xf32>
  %3 = kiln.none
  return %0, %1, %2, %3 : tensor<2xi64>, tensor<f32>, tensor<2x2xf32>, none
}

{-#
  dialect_resources: {
    builtin: {
      weights: "0x040000000000803F000000400000404000008040"
    }
  }
#-}
