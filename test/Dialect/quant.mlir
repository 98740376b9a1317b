// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @quantize_linear
// CHECK: kiln.quantize_linear {{.*}} : (tensor<1x64x8x8xf32>, tensor<64xf32>, tensor<64xi8>) -> tensor<1x64x8x8xi8>
// CHECK: kiln.quantize_linear {{.*}} : (tensor<?x64xf32>, tensor<f32>, none) -> tensor<?x64xui8>
// CHECK: kiln.quantize_linear {{.*}}output_dtype = i16{{.*}} : (tensor<?x64xf32>, tensor<1xf32>, none) -> tensor<?x64xi16>
// CHECK: kiln.quantize_linear {{.*}}axis = -1 : i64{{.*}} : (tensor<?x64xf16>, tensor<64xf16>, tensor<64xui16>) -> tensor<?x64xui16>
func.func @quantize_linear(%x: tensor<1x64x8x8xf32>, %s: tensor<64xf32>, %zp: tensor<64xi8>, %v: tensor<?x64xf32>, %st: tensor<f32>, %s1: tensor<1xf32>, %h: tensor<?x64xf16>, %sh: tensor<64xf16>, %zh: tensor<64xui16>) -> (tensor<1x64x8x8xi8>, tensor<?x64xui8>, tensor<?x64xi16>, tensor<?x64xui16>) {
  %none = kiln.none
  %0 = kiln.quantize_linear %x, %s, %zp {axis = 1 : i64} : (tensor<1x64x8x8xf32>, tensor<64xf32>, tensor<64xi8>) -> tensor<1x64x8x8xi8>
  %1 = kiln.quantize_linear %v, %st, %none : (tensor<?x64xf32>, tensor<f32>, none) -> tensor<?x64xui8>
  %2 = kiln.quantize_linear %v, %s1, %none {output_dtype = i16} : (tensor<?x64xf32>, tensor<1xf32>, none) -> tensor<?x64xi16>
  %3 = kiln.quantize_linear %h, %sh, %zh {axis = -1 : i64, saturate = 1 : i64} : (tensor<?x64xf16>, tensor<64xf16>, tensor<64xui16>) -> tensor<?x64xui16>
  return %0, %1, %2, %3 : tensor<1x64x8x8xi8>, tensor<?x64xui8>, tensor<?x64xi16>, tensor<?x64xui16>
}

// -----

// CHECK-LABEL: func.func @dequantize_linear
// CHECK: kiln.dequantize_linear {{.*}}axis = 0 : i64{{.*}} : (tensor<64x3x3x3xi8>, tensor<64xf32>, tensor<64xi8>) -> tensor<64x3x3x3xf32>
// CHECK: kiln.dequantize_linear {{.*}} : (tensor<?x8xui8>, tensor<bf16>, none) -> tensor<?x8xbf16>
// CHECK: kiln.dequantize_linear {{.*}} : (tensor<16xi32>, tensor<f32>, tensor<i32>) -> tensor<16xf32>
func.func @dequantize_linear(%q: tensor<64x3x3x3xi8>, %s: tensor<64xf32>, %zp: tensor<64xi8>, %u: tensor<?x8xui8>, %sb: tensor<bf16>, %b: tensor<16xi32>, %st: tensor<f32>, %zb: tensor<i32>) -> (tensor<64x3x3x3xf32>, tensor<?x8xbf16>, tensor<16xf32>) {
  %none = kiln.none
  %0 = kiln.dequantize_linear %q, %s, %zp {axis = 0 : i64} : (tensor<64x3x3x3xi8>, tensor<64xf32>, tensor<64xi8>) -> tensor<64x3x3x3xf32>
  %1 = kiln.dequantize_linear %u, %sb, %none : (tensor<?x8xui8>, tensor<bf16>, none) -> tensor<?x8xbf16>
  %2 = kiln.dequantize_linear %b, %st, %zb : (tensor<16xi32>, tensor<f32>, tensor<i32>) -> tensor<16xf32>
  return %0, %1, %2 : tensor<64x3x3x3xf32>, tensor<?x8xbf16>, tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @dynamic_quantize_linear
// CHECK: kiln.dynamic_quantize_linear {{.*}} : (tensor<?x768xf32>) -> (tensor<?x768xui8>, tensor<f32>, tensor<ui8>)
func.func @dynamic_quantize_linear(%x: tensor<?x768xf32>) -> (tensor<?x768xui8>, tensor<f32>, tensor<ui8>) {
  %y, %s, %zp = kiln.dynamic_quantize_linear %x : (tensor<?x768xf32>) -> (tensor<?x768xui8>, tensor<f32>, tensor<ui8>)
  return %y, %s, %zp : tensor<?x768xui8>, tensor<f32>, tensor<ui8>
}

// -----

// CHECK-LABEL: func.func @matmul_integer
// CHECK: kiln.matmul_integer {{.*}} : (tensor<?x128x768xui8>, tensor<768x64xi8>, tensor<ui8>, none) -> tensor<?x128x64xi32>
// CHECK: kiln.matmul_integer {{.*}} : (tensor<768xi8>, tensor<2x768x64xi8>, none, tensor<64xi8>) -> tensor<2x64xi32>
func.func @matmul_integer(%a: tensor<?x128x768xui8>, %b: tensor<768x64xi8>, %azp: tensor<ui8>, %v: tensor<768xi8>, %bb: tensor<2x768x64xi8>, %bzp: tensor<64xi8>) -> (tensor<?x128x64xi32>, tensor<2x64xi32>) {
  %none = kiln.none
  %0 = kiln.matmul_integer %a, %b, %azp, %none : (tensor<?x128x768xui8>, tensor<768x64xi8>, tensor<ui8>, none) -> tensor<?x128x64xi32>
  %1 = kiln.matmul_integer %v, %bb, %none, %bzp : (tensor<768xi8>, tensor<2x768x64xi8>, none, tensor<64xi8>) -> tensor<2x64xi32>
  return %0, %1 : tensor<?x128x64xi32>, tensor<2x64xi32>
}

// -----

// CHECK-LABEL: func.func @qlinear_matmul
// CHECK: kiln.qlinear_matmul {{.*}} -> tensor<5x2x3xi8>
func.func @qlinear_matmul(%a: tensor<2x4xui8>, %s: tensor<f32>, %azp: tensor<ui8>, %b: tensor<5x4x3xi8>, %bzp: tensor<i8>) -> tensor<5x2x3xi8> {
  %y = kiln.qlinear_matmul %a, %s, %azp, %b, %s, %bzp, %s, %bzp : (tensor<2x4xui8>, tensor<f32>, tensor<ui8>, tensor<5x4x3xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<i8>) -> tensor<5x2x3xi8>
  return %y : tensor<5x2x3xi8>
}

// -----

// CHECK-LABEL: func.func @qlinear_conv
// CHECK: kiln.qlinear_conv {{.*}} -> tensor<1x16x8x8xui8>
// CHECK: kiln.qlinear_conv {{.*}}auto_pad = "VALID"{{.*}} -> tensor<?x16x6x6xi8>
func.func @qlinear_conv(%x: tensor<1x3x8x8xui8>, %dx: tensor<?x3x8x8xui8>, %s: tensor<f32>, %xzp: tensor<ui8>, %w: tensor<16x3x3x3xi8>, %ws: tensor<16xf32>, %wzp: tensor<16xi8>, %yzp: tensor<i8>, %b: tensor<16xi32>) -> (tensor<1x16x8x8xui8>, tensor<?x16x6x6xi8>) {
  %none = kiln.none
  %0 = kiln.qlinear_conv %x, %s, %xzp, %w, %ws, %wzp, %s, %xzp, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xui8>, tensor<f32>, tensor<ui8>, tensor<16x3x3x3xi8>, tensor<16xf32>, tensor<16xi8>, tensor<f32>, tensor<ui8>, tensor<16xi32>) -> tensor<1x16x8x8xui8>
  %1 = kiln.qlinear_conv %dx, %s, %xzp, %w, %s, %yzp, %s, %yzp, %none {auto_pad = "VALID"} : (tensor<?x3x8x8xui8>, tensor<f32>, tensor<ui8>, tensor<16x3x3x3xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<i8>, none) -> tensor<?x16x6x6xi8>
  return %0, %1 : tensor<1x16x8x8xui8>, tensor<?x16x6x6xi8>
}

// -----

// CHECK-LABEL: func.func @conv_integer
// CHECK: kiln.conv_integer {{.*}} : (tensor<1x3x8x8xui8>, tensor<16x3x3x3xui8>, tensor<ui8>, none) -> tensor<1x16x3x3xi32>
// CHECK: kiln.conv_integer {{.*}}group = 3 : i64{{.*}} -> tensor<1x6x4x4xi32>
func.func @conv_integer(%x: tensor<1x3x8x8xui8>, %w: tensor<16x3x3x3xui8>, %zp: tensor<ui8>, %wg: tensor<6x1x2x2xui8>, %wzp: tensor<6xui8>) -> (tensor<1x16x3x3xi32>, tensor<1x6x4x4xi32>) {
  %none = kiln.none
  %0 = kiln.conv_integer %x, %w, %zp, %none {strides = array<i64: 2, 2>} : (tensor<1x3x8x8xui8>, tensor<16x3x3x3xui8>, tensor<ui8>, none) -> tensor<1x16x3x3xi32>
  %1 = kiln.conv_integer %x, %wg, %none, %wzp {group = 3 : i64, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xui8>, tensor<6x1x2x2xui8>, none, tensor<6xui8>) -> tensor<1x6x4x4xi32>
  return %0, %1 : tensor<1x16x3x3xi32>, tensor<1x6x4x4xi32>
}
