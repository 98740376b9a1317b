// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | mlir-opt --one-shot-bufferize=bufferize-function-boundaries --split-input-file > /dev/null

// Per-axis QuantizeLinear: scale and zero point follow the axis dim; divide,
// round half to even, add the zero point, saturate to [-128, 127].
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$AXIS:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @quantize_per_axis
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$AXIS]], #[[$AXIS]], #[[$ID]]]
// CHECK: ^bb0(%[[X:.+]]: f32, %[[S:.+]]: f32, %[[Z:.+]]: i8, %{{.+}}: i8):
// CHECK: %[[ZF:.+]] = arith.sitofp %[[Z]] : i8 to f32
// CHECK: %[[D:.+]] = arith.divf %[[X]], %[[S]] : f32
// CHECK: %[[R:.+]] = math.roundeven %[[D]] : f32
// CHECK: %[[A:.+]] = arith.addf %[[R]], %[[ZF]] : f32
// CHECK: arith.constant -1.280000e+02 : f32
// CHECK: arith.maximumf %[[A]]
// CHECK: arith.constant 1.270000e+02 : f32
// CHECK: arith.minimumf
// CHECK: arith.fptosi %{{.+}} : f32 to i8
func.func @quantize_per_axis(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %z: tensor<3xi8>) -> tensor<2x3xi8> {
  %0 = kiln.quantize_linear %x, %s, %z {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xi8>) -> tensor<2x3xi8>
  return %0 : tensor<2x3xi8>
}

// -----

// Per-tensor DequantizeLinear of ui8: parameters read once; zero-extended,
// subtracted in i32, then scaled in f32.
// CHECK-LABEL: func.func @dequantize
// CHECK-DAG: %[[S:.+]] = tensor.extract %arg1[] : tensor<f32>
// CHECK-DAG: %[[Z:.+]] = tensor.extract %arg2[] : tensor<i8>
// CHECK: linalg.generic
// CHECK: %[[X:.+]] = arith.extui %{{.+}} : i8 to i32
// CHECK: %[[ZI:.+]] = arith.extui %[[Z]] : i8 to i32
// CHECK: %[[D:.+]] = arith.subi %[[X]], %[[ZI]] : i32
// CHECK: %[[F:.+]] = arith.sitofp %[[D]] : i32 to f32
// CHECK: arith.mulf %[[F]], %[[S]] : f32
func.func @dequantize(%q: tensor<2x3xui8>, %s: tensor<f32>, %z: tensor<ui8>) -> tensor<2x3xf32> {
  %0 = kiln.dequantize_linear %q, %s, %z : (tensor<2x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// DynamicQuantizeLinear: one generic for min and max (both from 0), scale 1
// when the range is empty, the zero point clamped then rounded.
// CHECK-LABEL: func.func @dynamic_quantize
// CHECK: %[[MM:.+]]:2 = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK: arith.minimumf
// CHECK: arith.maximumf
// CHECK: %[[MIN:.+]] = tensor.extract %[[MM]]#0[]
// CHECK: %[[MAX:.+]] = tensor.extract %[[MM]]#1[]
// CHECK: %[[EQ:.+]] = arith.cmpf oeq, %[[MAX]], %[[MIN]]
// CHECK: %[[SCALE:.+]] = arith.select %[[EQ]]
// CHECK: %[[ZPF:.+]] = math.roundeven
// CHECK: %[[ZP:.+]] = arith.fptoui %[[ZPF]] : f32 to i8
// CHECK: %[[Y:.+]] = linalg.generic
// CHECK: arith.divf %{{.+}}, %[[SCALE]]
// CHECK: arith.fptoui
// CHECK: %[[ST:.+]] = tensor.from_elements %[[SCALE]] : tensor<f32>
// CHECK: %[[ZT:.+]] = tensor.from_elements %[[ZP]] : tensor<i8>
// CHECK: return %[[Y]], %[[ST]], %[[ZT]]
func.func @dynamic_quantize(%x: tensor<2x3xf32>) -> (tensor<2x3xui8>, tensor<f32>, tensor<ui8>) {
  %y, %s, %z = kiln.dynamic_quantize_linear %x : (tensor<2x3xf32>) -> (tensor<2x3xui8>, tensor<f32>, tensor<ui8>)
  return %y, %s, %z : tensor<2x3xui8>, tensor<f32>, tensor<ui8>
}

// -----

// MatMulInteger: operands widened to i32 minus their zero points (B's per
// column), then linalg.matmul in i32; 3-D x 2-D is a generic contraction.
// CHECK-DAG: #[[$COLS:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$A3:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$B2:.+]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-LABEL: func.func @matmul_integer
// CHECK: %[[A:.+]] = linalg.generic
// CHECK: arith.extui
// CHECK: arith.subi
// CHECK: %[[B:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #[[$COLS]], #{{.+}}]
// CHECK: arith.extsi
// CHECK: arith.subi
// CHECK: %[[INIT:.+]] = linalg.fill
// CHECK: linalg.matmul ins(%[[A]], %[[B]] : tensor<2x4xi32>, tensor<4x3xi32>) outs(%[[INIT]] : tensor<2x3xi32>)
// CHECK: linalg.generic {indexing_maps = [#[[$A3]], #[[$B2]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: arith.muli
// CHECK: arith.addi
func.func @matmul_integer(%a: tensor<2x4xui8>, %b: tensor<4x3xi8>, %az: tensor<ui8>, %bz: tensor<3xi8>, %a3: tensor<5x2x4xui8>) -> (tensor<2x3xi32>, tensor<5x2x3xi32>) {
  %none = kiln.none
  %0 = kiln.matmul_integer %a, %b, %az, %bz : (tensor<2x4xui8>, tensor<4x3xi8>, tensor<ui8>, tensor<3xi8>) -> tensor<2x3xi32>
  %1 = kiln.matmul_integer %a3, %b, %none, %none : (tensor<5x2x4xui8>, tensor<4x3xi8>, none, none) -> tensor<5x2x3xi32>
  return %0, %1 : tensor<2x3xi32>, tensor<5x2x3xi32>
}

// -----

// QLinearMatMul: the i32 matmul requantized with a_scale * b_scale / y_scale.
// CHECK-LABEL: func.func @qlinear_matmul
// CHECK: %[[ACC:.+]] = linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%[[ACC]] : tensor<2x3xi32>)
// CHECK: %[[AB:.+]] = arith.mulf
// CHECK: %[[M:.+]] = arith.divf %[[AB]]
// CHECK: %[[F:.+]] = arith.sitofp %{{.+}} : i32 to f32
// CHECK: arith.mulf %[[F]], %[[M]]
// CHECK: math.roundeven
// CHECK: arith.fptoui %{{.+}} : f32 to i8
func.func @qlinear_matmul(%a: tensor<2x4xui8>, %as: tensor<f32>, %az: tensor<ui8>, %b: tensor<4x3xi8>, %bs: tensor<f32>, %bz: tensor<i8>, %ys: tensor<f32>, %yz: tensor<ui8>) -> tensor<2x3xui8> {
  %0 = kiln.qlinear_matmul %a, %as, %az, %b, %bs, %bz, %ys, %yz : (tensor<2x4xui8>, tensor<f32>, tensor<ui8>, tensor<4x3xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<ui8>) -> tensor<2x3xui8>
  return %0 : tensor<2x3xui8>
}

// -----

// ConvInteger with groups and pads: shifted operands, a zero pad (the zero
// point once shifted), group-split views and one i32 generic over
// (n, g, m, oh, ow, c, kh, kw) with strided window reads.
// CHECK-DAG: #[[$X:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6, d4 * 2 + d7)>
// CHECK-DAG: #[[$W:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-DAG: #[[$O:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv_integer
// CHECK: %[[XS:.+]] = linalg.generic
// CHECK: arith.extui
// CHECK: arith.subi
// CHECK: %[[WS:.+]] = linalg.generic
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK: %[[PAD:.+]] = tensor.pad %[[XS]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[ZERO]]
// CHECK: %[[XG:.+]] = tensor.expand_shape %[[PAD]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 6, 6]
// CHECK: %[[WG:.+]] = tensor.expand_shape %[[WS]] {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 2, 2, 3, 3]
// CHECK: %[[C:.+]] = linalg.generic {indexing_maps = [#[[$X]], #[[$W]], #[[$O]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[XG]], %[[WG]] :
// CHECK: tensor.collapse_shape %[[C]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x2x2x2xi32> into tensor<1x4x2x2xi32>
func.func @conv_integer(%x: tensor<1x4x4x4xui8>, %w: tensor<4x2x3x3xui8>, %xz: tensor<ui8>) -> tensor<1x4x2x2xi32> {
  %none = kiln.none
  %0 = kiln.conv_integer %x, %w, %xz, %none {group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xui8>, tensor<4x2x3x3xui8>, tensor<ui8>, none) -> tensor<1x4x2x2xi32>
  return %0 : tensor<1x4x2x2xi32>
}

// -----

// QLinearConv: bias added in i32, per-channel w_scale read along dim 1.
// CHECK-DAG: #[[$CH:.+]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @qlinear_conv
// CHECK: %[[ACC:.+]] = tensor.collapse_shape
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[$CH]], #[[$CH]], #{{.+}}], {{.*}} ins(%[[ACC]], %arg4, %arg8 :
// CHECK: ^bb0(%[[A:.+]]: i32, %[[WS:.+]]: f32, %[[B:.+]]: i32, %{{.+}}: i8):
// CHECK: %[[SUM:.+]] = arith.addi %[[A]], %[[B]] : i32
// CHECK: arith.mulf %{{.+}}, %[[WS]]
// CHECK: arith.sitofp %[[SUM]] : i32 to f32
// CHECK: math.roundeven
func.func @qlinear_conv(%x: tensor<1x3x4x4xui8>, %xs: tensor<f32>, %xz: tensor<ui8>, %w: tensor<2x3x3x3xi8>, %ws: tensor<2xf32>, %wz: tensor<2xi8>, %ys: tensor<f32>, %yz: tensor<ui8>, %b: tensor<2xi32>) -> tensor<1x2x2x2xui8> {
  %0 = kiln.qlinear_conv %x, %xs, %xz, %w, %ws, %wz, %ys, %yz, %b : (tensor<1x3x4x4xui8>, tensor<f32>, tensor<ui8>, tensor<2x3x3x3xi8>, tensor<2xf32>, tensor<2xi8>, tensor<f32>, tensor<ui8>, tensor<2xi32>) -> tensor<1x2x2x2xui8>
  return %0 : tensor<1x2x2x2xui8>
}
