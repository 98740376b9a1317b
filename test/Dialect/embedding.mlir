// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @rope
//       CHECK:   kiln.rotary_embedding %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<2x8x16x32xf32>
func.func @rope(%x: tensor<2x8x16x32xf32>, %cos: tensor<16x32xf32>, %sin: tensor<16x32xf32>) -> tensor<2x8x16x32xf32> {
  %y = kiln.rotary_embedding %x, %cos, %sin : (tensor<2x8x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<2x8x16x32xf32>
  return %y : tensor<2x8x16x32xf32>
}

// -----

// Dynamic batch and sequence; tables with a unit batch dim; f16.
// CHECK-LABEL: func.func @rope_dynamic
//       CHECK:   kiln.rotary_embedding {{.*}} -> tensor<?x4x?x64xf16>
func.func @rope_dynamic(%x: tensor<?x4x?x64xf16>, %cos: tensor<1x1x?x64xf16>, %sin: tensor<1x1x?x64xf16>) -> tensor<?x4x?x64xf16> {
  %y = kiln.rotary_embedding %x, %cos, %sin : (tensor<?x4x?x64xf16>, tensor<1x1x?x64xf16>, tensor<1x1x?x64xf16>) -> tensor<?x4x?x64xf16>
  return %y : tensor<?x4x?x64xf16>
}
