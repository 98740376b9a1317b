// RUN: kiln-opt %s --convert-kiln-to-linalg | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg | mlir-opt --one-shot-bufferize=bufferize-function-boundaries > /dev/null

// kiln.quantized_conv: the 8-bit input transposed to NHWC, padded with its
// zero point, an im2col copy into [N*OH*OW, KH*KW*C] (runs of C contiguous
// bytes), the GEMM marked for the CPU's int8 kernel against the OHWI
// weight viewed as [M, KH*KW*C], then the shared epilogue, whose loops run
// over the NCHW result and read the accumulator [N*OH*OW, M] transposed.

// CHECK-DAG: #[[$NHWC:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
// CHECK-DAG: #[[$IM2COL:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d3, d2 + d4, d5)>
// CHECK-DAG: #[[$ACC:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
// CHECK-DAG: #[[$COL:.+]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-LABEL: func.func @conv
// CHECK: %[[XZP:.+]] = arith.constant dense<-126> : tensor<i8>
// CHECK: linalg.generic {indexing_maps = [#[[$NHWC]], #{{.+}}], {{.+}} ins(%{{.+}} : tensor<1x2x5x4xi8>) outs(%{{.+}} : tensor<1x5x4x2xi8>)
// CHECK: %[[PADV:.+]] = tensor.extract %[[XZP]][] : tensor<i8>
// CHECK: tensor.pad %{{.+}} low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: tensor.yield %[[PADV]] : i8
// CHECK: linalg.generic {indexing_maps = [#[[$IM2COL]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%{{.+}} : tensor<1x7x6x2xi8>) outs(%{{.+}} : tensor<1x3x4x3x3x2xi8>)
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0, 1, 2], [3, 4, 5]] : tensor<1x3x4x3x3x2xi8> into tensor<12x18xi8>
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2, 3]] : tensor<3x3x3x2xi8> into tensor<3x18xi8>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}}, %{{.+}} : tensor<12x18xi8>, tensor<3x18xi8>) outs(%{{.+}} : tensor<12x3xi32>)
// CHECK-SAME: kiln.int8_matmul = {a_shifted = false, w_unsigned = false}
// rowsum(A), for the weight zero point.
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<12x18xi8>) outs(%{{.+}} : tensor<12xi32>)
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0, 1, 2], [3]] output_shape [1, 3, 4, 3] : tensor<12x3xi32> into tensor<1x3x4x3xi32>
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0, 1, 2]] output_shape [1, 3, 4] : tensor<12xi32> into tensor<1x3x4xi32>
// CHECK: linalg.generic {indexing_maps = [#[[$ACC]], #[[$COL]], #[[$COL]], #[[$COL]], #[[$COL]], #[[$ROW]], #{{.+}}]
// CHECK-SAME: outs(%{{.+}} : tensor<1x3x3x4xi8>)
// The f32 bias is added after the scale.
// CHECK: arith.sitofp
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK: arith.maximumf
// CHECK: arith.divf
// CHECK: math.roundeven
// CHECK: arith.fptoui %{{.+}} : f32 to i8
func.func @conv(%x: tensor<1x2x5x4xui8>) -> tensor<1x3x3x4xui8> {
  %xzp = kiln.constant dense<130> : tensor<ui8>
  %w = kiln.constant dense<1> : tensor<3x3x3x2xi8>
  %wzp = kiln.constant dense<[1, 0, -2]> : tensor<3xi8>
  %sums = kiln.constant dense<18> : tensor<3xi32>
  %scale = kiln.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %bias = kiln.constant dense<[0.5, 1.0, -1.0]> : tensor<3xf32>
  %ys = kiln.constant dense<0.25> : tensor<f32>
  %yzp = kiln.constant dense<7> : tensor<ui8>
  %y = kiln.quantized_conv %x, %xzp, %w, %wzp, %sums, %scale, %bias, %ys, %yzp {activation = "relu", dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 1>}
      : (tensor<1x2x5x4xui8>, tensor<ui8>, tensor<3x3x3x2xi8>, tensor<3xi8>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x3x3x4xui8>
  return %y : tensor<1x3x3x4xui8>
}
