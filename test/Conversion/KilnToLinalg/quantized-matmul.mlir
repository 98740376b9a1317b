// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | mlir-opt --one-shot-bufferize=bufferize-function-boundaries --split-input-file > /dev/null

// kiln.quantized_matmul: an i8 x i8 -> i32 contraction marked for the CPU
// kernel (A shifted to unsigned by xor 0x80, its zero point by +128), then
// one epilogue with the corrections, the scale and the requantization.

// CHECK-LABEL: func.func @signed_activation_requantized
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2]] : tensor<2x3x4xi8> into tensor<6x4xi8>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%{{.+}}, %{{.+}} : tensor<6x4xi8>, tensor<5x4xi8>) outs(%{{.+}} : tensor<6x5xi32>)
// CHECK-SAME: kiln.int8_matmul = {a_shifted = true, w_unsigned = false}
// CHECK: arith.xori %{{.+}}, %c-128_i8 : i8
// CHECK: arith.extui %{{.+}} : i8 to i32
// CHECK: arith.extsi %{{.+}} : i8 to i32
// CHECK: arith.muli
// CHECK: arith.addi
// The epilogue: za + 128, acc - za * rowsum(W), + bias, * scale, relu,
// / y_scale, round, + y_zero_point, saturate.
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.addi %{{.+}}, %c128_i32
// CHECK: arith.muli
// CHECK: arith.subi
// CHECK: arith.addi
// CHECK: arith.sitofp
// CHECK: arith.mulf
// CHECK: arith.maximumf
// CHECK: arith.divf
// CHECK: math.roundeven
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0, 1], [2]] output_shape [2, 3, 5] : tensor<6x5xi8> into tensor<2x3x5xi8>
func.func @signed_activation_requantized(%a: tensor<2x3x4xi8>) -> tensor<2x3x5xi8> {
  %azp = kiln.constant dense<-3> : tensor<i8>
  %w = kiln.constant dense<1> : tensor<5x4xi8>
  %none = kiln.none
  %sums = kiln.constant dense<4> : tensor<5xi32>
  %scale = kiln.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5]> : tensor<5xf32>
  %bias = kiln.constant dense<[1, 2, 3, 4, 5]> : tensor<5xi32>
  %ys = kiln.constant dense<0.25> : tensor<f32>
  %yzp = kiln.constant dense<0> : tensor<i8>
  %y = kiln.quantized_matmul %a, %azp, %w, %none, %sums, %scale, %bias, %ys, %yzp {activation = "relu"}
      : (tensor<2x3x4xi8>, tensor<i8>, tensor<5x4xi8>, none, tensor<5xi32>, tensor<5xf32>, tensor<5xi32>, tensor<f32>, tensor<i8>) -> tensor<2x3x5xi8>
  return %y : tensor<2x3x5xi8>
}

// -----

// u8 activations are not shifted; a weight zero point adds the row sums of
// A (a reduction) and the K * za * zw term; the result is f32.
// CHECK-LABEL: func.func @unsigned_activation_float
// CHECK: linalg.generic
// CHECK-SAME: kiln.int8_matmul = {a_shifted = false, w_unsigned = false}
// CHECK-NOT: arith.xori
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic
// CHECK: outs(%{{.+}} : tensor<3x2xf32>)
// CHECK: arith.muli %c4_i32
// CHECK-NOT: arith.divf
// CHECK: return
func.func @unsigned_activation_float(%a: tensor<3x4xui8>) -> tensor<3x2xf32> {
  %azp = kiln.constant dense<7> : tensor<ui8>
  %w = kiln.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4]]> : tensor<2x4xi8>
  %wzp = kiln.constant dense<[1, -1]> : tensor<2xi8>
  %none = kiln.none
  %sums = kiln.constant dense<[10, -10]> : tensor<2xi32>
  %scale = kiln.constant dense<0.5> : tensor<f32>
  %y = kiln.quantized_matmul %a, %azp, %w, %wzp, %sums, %scale, %none, %none, %none
      : (tensor<3x4xui8>, tensor<ui8>, tensor<2x4xi8>, tensor<2xi8>, tensor<2xi32>, tensor<f32>, none, none, none) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}
