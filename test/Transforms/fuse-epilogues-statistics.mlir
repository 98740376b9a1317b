// RUN: kiln-opt %s -kiln-fuse-epilogues --kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s

// An NCHW and a channels-last conv, each with bias, residual and ReLU folded
// in: 3 ops each.
// CHECK: kiln-fuse-epilogues
// CHECK: (epilogues-fused) 6 :
func.func @two_blocks(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %xl: tensor<1x8x8x4xf32>, %wl: tensor<4x3x3x4xf32>, %b: tensor<4x1x1xf32>, %bl: tensor<4xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x8x8x4xf32>) {
  %none = kiln.none
  %0 = kiln.conv %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  %1 = kiln.add %0, %b : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %2 = kiln.add %1, %x : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %3 = kiln.relu %2 : tensor<1x4x8x8xf32>
  %4 = kiln.conv_nhwc %xl, %wl, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, none) -> tensor<1x8x8x4xf32>
  %5 = kiln.add %4, %bl : (tensor<1x8x8x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  %6 = kiln.add %5, %xl : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %7 = kiln.relu %6 : tensor<1x8x8x4xf32>
  return %3, %7 : tensor<1x4x8x8xf32>, tensor<1x8x8x4xf32>
}
