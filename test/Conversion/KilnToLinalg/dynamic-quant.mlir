// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | mlir-opt --one-shot-bufferize=bufferize-function-boundaries --split-input-file > /dev/null
// The QDQ ops on dynamic dims (an int8 decoder's batch, sequence and past
// length): elementwise quantization sized from the run-time dims, per-axis
// parameters along a static dim, and the int8 GEMM with run-time rows.

// QuantizeLinear per-tensor, then DequantizeLinear per-axis along the static
// last dim: both sized by the symbols b and s.
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[AXIS:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK: module attributes {kiln.symbols = ["b", "s"]}
// CHECK: %[[B:.+]] = tensor.dim %arg0, %c0{{.*}} : tensor<?x?x8xf32>
// CHECK: %[[S:.+]] = tensor.dim %arg0, %c1{{.*}} : tensor<?x?x8xf32>
// CHECK: %[[QE:.+]] = tensor.empty(%{{.+}}, %{{.+}}) : tensor<?x?x8xi8>
// CHECK: %[[Q:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<?x?x8xf32>) outs(%[[QE]] : tensor<?x?x8xi8>)
// CHECK: arith.divf
// CHECK: math.roundeven
// CHECK: arith.fptoui %{{.+}} : f32 to i8
// CHECK: %[[DE:.+]] = tensor.empty(%{{.+}}, %{{.+}}) : tensor<?x?x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[AXIS]], #[[AXIS]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[Q]], %{{.+}}, %{{.+}} : tensor<?x?x8xi8>, tensor<8xf32>, tensor<8xi8>) outs(%[[DE]] : tensor<?x?x8xf32>)
// CHECK: arith.subi
// CHECK: arith.sitofp
// CHECK: arith.mulf
func.func @main(%x: tensor<?x?x8xf32> {kiln.name = "x", kiln.dims = ["b", "s", ""]}) -> (tensor<?x?x8xui8>, tensor<?x?x8xf32>) {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %zp = kiln.constant dense<128> : tensor<ui8>
  %q = kiln.quantize_linear %x, %s, %zp : (tensor<?x?x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<?x?x8xui8>
  %sa = kiln.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]> : tensor<8xf32>
  %za = kiln.constant dense<[1, 2, 3, 4, 5, 6, 7, 8]> : tensor<8xui8>
  %d = kiln.dequantize_linear %q, %sa, %za {axis = 2 : i64} : (tensor<?x?x8xui8>, tensor<8xf32>, tensor<8xui8>) -> tensor<?x?x8xf32>
  return %q, %d : tensor<?x?x8xui8>, tensor<?x?x8xf32>
}

// -----

// kiln.quantized_matmul with A [b, s, K]: the rows b * s collapse into M
// (run-time), the accumulator and the epilogue have M rows, and the result
// is reshaped back to [b, s, N] by the run-time dims of A (two dynamic dims
// in one group: tensor.reshape). With A [n, 3, K] one dim is dynamic: an
// expand_shape to [n, 3, N]; the row sums of A (a weight zero point) have M
// elements too.
// CHECK: module attributes {kiln.symbols = ["b", "s", "n"]}
// (The symbols' dims at the start, then the lowering's.)
// CHECK: tensor.dim %{{.+}} : tensor<?x3x4xi8>
// CHECK: %[[B:.+]] = tensor.dim %arg0, %c0{{.*}} : tensor<?x?x4xi8>
// CHECK: %[[S:.+]] = tensor.dim %arg0, %c1{{.*}} : tensor<?x?x4xi8>
// CHECK-NEXT: %[[A:.+]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<?x?x4xi8> into tensor<?x4xi8>
// CHECK: %[[M:.+]] = tensor.dim %[[A]], %c0{{.*}} : tensor<?x4xi8>
// CHECK: %[[ACC0:.+]] = tensor.empty(%[[M]]) : tensor<?x5xi32>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%{{.+}} : i32) outs(%[[ACC0]] : tensor<?x5xi32>)
// CHECK: %[[ACC:.+]] = linalg.generic
// CHECK-SAME: ins(%[[A]], %{{.+}} : tensor<?x4xi8>, tensor<5x4xi8>) outs(%[[FILL]] : tensor<?x5xi32>)
// CHECK-SAME: kiln.int8_matmul = {a_shifted = true, w_unsigned = false}
// CHECK: %[[ROWS:.+]] = tensor.dim %[[ACC]], %c0{{.*}} : tensor<?x5xi32>
// CHECK: %[[OUT0:.+]] = tensor.empty(%[[ROWS]]) : tensor<?x5xi8>
// CHECK: %[[OUT:.+]] = linalg.generic {{.*}} ins(%[[ACC]], {{.*}}) outs(%[[OUT0]] : tensor<?x5xi8>)
// CHECK: math.roundeven
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[B]], %[[S]], %c5 : tensor<3xindex>
// CHECK: %[[Y:.+]] = tensor.reshape %[[OUT]](%[[SHAPE]]) : (tensor<?x5xi8>, tensor<3xindex>) -> tensor<?x?x5xi8>
// CHECK: %[[N:.+]] = tensor.dim %arg1, %c0{{.*}} : tensor<?x3x4xi8>
// CHECK: %[[A2:.+]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2]] : tensor<?x3x4xi8> into tensor<?x4xi8>
// CHECK: %[[M2:.+]] = tensor.dim %[[A2]], %c0{{.*}} : tensor<?x4xi8>
// CHECK: tensor.empty(%[[M2]]) : tensor<?x5xi32>
// CHECK: linalg.generic
// CHECK-SAME: kiln.int8_matmul = {a_shifted = true, w_unsigned = false}
// CHECK: %[[SUMS0:.+]] = tensor.empty(%[[M2]]) : tensor<?xi32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[A2]] : tensor<?x4xi8>) outs(%{{.+}} : tensor<?xi32>)
// CHECK: %[[F0:.+]] = tensor.empty(%{{.+}}) : tensor<?x5xf32>
// CHECK: %[[F:.+]] = linalg.generic {{.*}} outs(%[[F0]] : tensor<?x5xf32>)
// CHECK: %[[Y2:.+]] = tensor.expand_shape %[[F]] {{\[}}[0, 1], [2]] output_shape [%[[N]], 3, 5] : tensor<?x5xf32> into tensor<?x3x5xf32>
// CHECK: return %[[Y]], %[[Y2]]
func.func @main(%a: tensor<?x?x4xi8> {kiln.name = "a", kiln.dims = ["b", "s", ""]}, %a2: tensor<?x3x4xi8> {kiln.name = "a2", kiln.dims = ["n", "", ""]}) -> (tensor<?x?x5xi8>, tensor<?x3x5xf32>) {
  %azp = kiln.constant dense<-3> : tensor<i8>
  %w = kiln.constant dense<1> : tensor<5x4xi8>
  %none = kiln.none
  %sums = kiln.constant dense<4> : tensor<5xi32>
  %scale = kiln.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5]> : tensor<5xf32>
  %bias = kiln.constant dense<[1, 2, 3, 4, 5]> : tensor<5xi32>
  %ys = kiln.constant dense<0.25> : tensor<f32>
  %yzp = kiln.constant dense<0> : tensor<i8>
  %y = kiln.quantized_matmul %a, %azp, %w, %none, %sums, %scale, %bias, %ys, %yzp
      : (tensor<?x?x4xi8>, tensor<i8>, tensor<5x4xi8>, none, tensor<5xi32>, tensor<5xf32>, tensor<5xi32>, tensor<f32>, tensor<i8>) -> tensor<?x?x5xi8>
  %uzp = kiln.constant dense<7> : tensor<i8>
  %wzp = kiln.constant dense<[1, 2, 3, 4, 5]> : tensor<5xi8>
  %y2 = kiln.quantized_matmul %a2, %uzp, %w, %wzp, %sums, %scale, %none, %none, %none
      : (tensor<?x3x4xi8>, tensor<i8>, tensor<5x4xi8>, tensor<5xi8>, tensor<5xi32>, tensor<5xf32>, none, none, none) -> tensor<?x3x5xf32>
  return %y, %y2 : tensor<?x?x5xi8>, tensor<?x3x5xf32>
}

// -----

// ONNX Runtime's dynamic quantization (DynamicQuantizeLinear, then
// MatMulInteger with a per-column weight zero point) and QLinearMatMul
// (per-column b_scale) on [b, s, K]: min/max over all of x, the shifted
// operands and the i32 contractions sized by b and s.
// CHECK: module attributes {kiln.symbols = ["b", "s"]}
// CHECK: %[[B:.+]] = tensor.dim %arg0, %c0{{.*}} : tensor<?x?x4xf32>
// CHECK: %[[S:.+]] = tensor.dim %arg0, %c1{{.*}} : tensor<?x?x4xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "reduction"]} ins(%arg0 : tensor<?x?x4xf32>) outs(%{{.+}}, %{{.+}} : tensor<f32>, tensor<f32>)
// CHECK: %[[YQ0:.+]] = tensor.empty(%{{.+}}, %{{.+}}) : tensor<?x?x4xi8>
// CHECK: %[[YQ:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<?x?x4xf32>) outs(%[[YQ0]] : tensor<?x?x4xi8>)
// CHECK: %[[SH0:.+]] = tensor.empty(%{{.+}}, %{{.+}}) : tensor<?x?x4xi32>
// CHECK: %[[SH:.+]] = linalg.generic {{.*}} ins(%[[YQ]] : tensor<?x?x4xi8>) outs(%[[SH0]] : tensor<?x?x4xi32>)
// CHECK: %[[ACC0:.+]] = tensor.empty(%[[B]], %[[S]]) : tensor<?x?x3xi32>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%{{.+}} : i32) outs(%[[ACC0]] : tensor<?x?x3xi32>)
// CHECK: %[[ACC:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[SH]], %{{.+}} : tensor<?x?x4xi32>, tensor<4x3xi32>) outs(%[[FILL]] : tensor<?x?x3xi32>)
// CHECK: tensor.empty(%{{.+}}, %{{.+}}) : tensor<?x?x4xi32>
// CHECK: %[[QACC0:.+]] = tensor.empty(%[[B]], %[[S]]) : tensor<?x?x3xi32>
// CHECK: %[[QACC:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: %[[R0:.+]] = tensor.empty(%{{.+}}, %{{.+}}) : tensor<?x?x3xi8>
// CHECK: %[[R:.+]] = linalg.generic {{.*}} ins(%[[QACC]], %{{.+}} : tensor<?x?x3xi32>, tensor<3xf32>) outs(%[[R0]] : tensor<?x?x3xi8>)
// CHECK: return %[[ACC]], %[[R]]
func.func @main(%x: tensor<?x?x4xf32> {kiln.name = "x", kiln.dims = ["b", "s", ""]}, %q: tensor<?x?x4xui8> {kiln.name = "q", kiln.dims = ["b", "s", ""]}) -> (tensor<?x?x3xi32>, tensor<?x?x3xui8>) {
  %y, %ys, %yz = kiln.dynamic_quantize_linear %x : (tensor<?x?x4xf32>) -> (tensor<?x?x4xui8>, tensor<f32>, tensor<ui8>)
  %w = kiln.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]> : tensor<4x3xi8>
  %wz = kiln.constant dense<[1, 0, -1]> : tensor<3xi8>
  %acc = kiln.matmul_integer %y, %w, %yz, %wz : (tensor<?x?x4xui8>, tensor<4x3xi8>, tensor<ui8>, tensor<3xi8>) -> tensor<?x?x3xi32>
  %as = kiln.constant dense<0.5> : tensor<f32>
  %az = kiln.constant dense<128> : tensor<ui8>
  %bs = kiln.constant dense<[0.25, 0.5, 1.0]> : tensor<3xf32>
  %bz = kiln.constant dense<0> : tensor<i8>
  %os = kiln.constant dense<2.0> : tensor<f32>
  %oz = kiln.constant dense<10> : tensor<ui8>
  %r = kiln.qlinear_matmul %q, %as, %az, %w, %bs, %bz, %os, %oz : (tensor<?x?x4xui8>, tensor<f32>, tensor<ui8>, tensor<4x3xi8>, tensor<3xf32>, tensor<i8>, tensor<f32>, tensor<ui8>) -> tensor<?x?x3xui8>
  return %acc, %r : tensor<?x?x3xi32>, tensor<?x?x3xui8>
}
