// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file \
// RUN:   | mlir-opt --split-input-file --one-shot-bufferize=bufferize-function-boundaries -o /dev/null
// Lowering of the Shape family: shapes are static, so the shape operands
// are not read; the static result types determine the lowering.

// Shape and Size fold into constants from the static input type.
// CHECK-LABEL: func.func @shape_size
// CHECK-DAG: %[[S:.+]] = arith.constant dense<[3, 4]> : tensor<2xi64>
// CHECK-DAG: %[[N:.+]] = arith.constant dense<24> : tensor<i64>
// CHECK: return %[[S]], %[[N]]
func.func @shape_size(%x: tensor<2x3x4xf32>) -> (tensor<2xi64>, tensor<i64>) {
  %s = kiln.shape %x {start = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2xi64>
  %n = kiln.size %x : (tensor<2x3x4xf32>) -> tensor<i64>
  return %s, %n : tensor<2xi64>, tensor<i64>
}

// -----

// A reshape with a reassociation is one collapse_shape/expand_shape; one
// without goes through 1-D.
// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK: %[[A:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: %[[F:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK: %[[B:.+]] = tensor.expand_shape %[[F]] {{\[\[}}0, 1]] output_shape [4, 6]
// CHECK: %[[C:.+]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 3, 1, 4]
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @reshape(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<4x6xf32>, tensor<2x3x1x4xf32>) {
  %s = kiln.constant dense<[6, -1]> : tensor<2xi64>
  %a = kiln.reshape %x, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %s2 = kiln.constant dense<[4, 6]> : tensor<2xi64>
  %b = kiln.reshape %x, %s2 : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  %s3 = kiln.constant dense<[0, 0, 1, 4]> : tensor<4xi64>
  %c = kiln.reshape %x, %s3 : (tensor<2x3x4xf32>, tensor<4xi64>) -> tensor<2x3x1x4xf32>
  return %a, %b, %c : tensor<6x4xf32>, tensor<4x6xf32>, tensor<2x3x1x4xf32>
}

// -----

// Squeeze/Unsqueeze/Flatten of an unsigned tensor work on its signless form.
// CHECK-LABEL: func.func @squeeze_unsqueeze_flatten
// CHECK-SAME: (%[[X:.+]]: tensor<1x3x1xi8>)
// CHECK: %[[A:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : tensor<1x3x1xi8> into tensor<3xi8>
// CHECK: %[[B:.+]] = tensor.expand_shape %[[X]] {{.*}} : tensor<1x3x1xi8> into tensor<1x1x3x1xi8>
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0], [1, 2]] : tensor<1x3x1xi8> into tensor<1x3xi8>
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @squeeze_unsqueeze_flatten(%x: tensor<1x3x1xui8>) -> (tensor<3xui8>, tensor<1x1x3x1xui8>, tensor<1x3xui8>) {
  %none = kiln.none
  %a = kiln.squeeze %x, %none : (tensor<1x3x1xui8>, none) -> tensor<3xui8>
  %ax = kiln.constant dense<[0]> : tensor<1xi64>
  %b = kiln.unsqueeze %x, %ax : (tensor<1x3x1xui8>, tensor<1xi64>) -> tensor<1x1x3x1xui8>
  %c = kiln.flatten %x {axis = 0 : i64} : (tensor<1x3x1xui8>) -> tensor<1x3xui8>
  return %a, %b, %c : tensor<3xui8>, tensor<1x1x3x1xui8>, tensor<1x3xui8>
}

// -----

// A scalar reshaped to [1, 1] and back.
// CHECK-LABEL: func.func @reshape_scalar
// CHECK: tensor.expand_shape %{{.+}} [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK: tensor.collapse_shape %{{.+}} [] : tensor<1x1xf32> into tensor<f32>
func.func @reshape_scalar(%x: tensor<f32>) -> tensor<f32> {
  %s = kiln.constant dense<[1, 1]> : tensor<2xi64>
  %a = kiln.reshape %x, %s : (tensor<f32>, tensor<2xi64>) -> tensor<1x1xf32>
  %e = kiln.constant dense<> : tensor<0xi64>
  %b = kiln.reshape %a, %e : (tensor<1x1xf32>, tensor<0xi64>) -> tensor<f32>
  return %b : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @transpose
// CHECK: linalg.transpose ins(%{{.+}} : tensor<2x3x4xf32>) outs(%{{.+}} : tensor<2x4x3xf32>) permutation = [0, 2, 1]
// CHECK: linalg.transpose ins(%{{.+}} : tensor<2x3x4xf32>) outs(%{{.+}} : tensor<4x3x2xf32>) permutation = [2, 1, 0]
func.func @transpose(%x: tensor<2x3x4xf32>) -> (tensor<2x4x3xf32>, tensor<4x3x2xf32>) {
  %a = kiln.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %b = kiln.transpose %x : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  return %a, %b : tensor<2x4x3xf32>, tensor<4x3x2xf32>
}

// -----

// Expand broadcasts (size-1 dims read index 0); Tile broadcasts into
// [r0, d0, r1, d1] and collapses the pairs.
// CHECK-DAG: #[[$EXPAND:.+]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG: #[[$TILE:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-LABEL: func.func @expand_tile
// CHECK: linalg.generic {indexing_maps = [#[[$EXPAND]], {{.+}}]{{.*}} outs(%{{.+}} : tensor<2x3x4xf32>)
// CHECK: %[[W:.+]] = linalg.generic {indexing_maps = [#[[$TILE]], {{.+}}]{{.*}} outs(%{{.+}} : tensor<2x3x2x1xf32>)
// CHECK: tensor.collapse_shape %[[W]] {{\[\[}}0, 1], [2, 3]] : tensor<2x3x2x1xf32> into tensor<6x2xf32>
func.func @expand_tile(%x: tensor<3x1xf32>) -> (tensor<2x3x4xf32>, tensor<6x2xf32>) {
  %s = kiln.constant dense<[2, 1, 4]> : tensor<3xi64>
  %a = kiln.expand %x, %s : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %r = kiln.constant dense<[2, 2]> : tensor<2xi64>
  %b = kiln.tile %x, %r : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<6x2xf32>
  return %a, %b : tensor<2x3x4xf32>, tensor<6x2xf32>
}

// -----

// CHECK-LABEL: func.func @concat_split
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<2x5xf32>)
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x8xf32>
// CHECK: %[[I0:.+]] = tensor.insert_slice %[[A]] into %[[E]][0, 0] [2, 3] [1, 1]
// CHECK: %[[I1:.+]] = tensor.insert_slice %[[B]] into %[[I0]][0, 3] [2, 5] [1, 1]
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[B]][0, 0] [2, 3] [1, 1]
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[B]][0, 3] [2, 2] [1, 1]
// CHECK: return %[[I1]], %[[S0]], %[[S1]]
func.func @concat_split(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> (tensor<2x8xf32>, tensor<2x3xf32>, tensor<2x2xf32>) {
  %c = kiln.concat %a, %b {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %none = kiln.none
  %s:2 = kiln.split %b, %none {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x5xf32>, none) -> (tensor<2x3xf32>, tensor<2x2xf32>)
  return %c, %s#0, %s#1 : tensor<2x8xf32>, tensor<2x3xf32>, tensor<2x2xf32>
}

// -----

// Positive steps: a strided extract_slice (end clamped, negative axis).
// Negative steps: start clamped to dim - 1, read at start + step * i.
// CHECK-LABEL: func.func @slice
// CHECK: tensor.extract_slice %{{.+}}[0, 1] [8, 3] [1, 2] : tensor<8x6xf32> to tensor<8x3xf32>
// CHECK: linalg.generic
// CHECK: %[[I:.+]] = linalg.index 0 : index
// CHECK: %[[STEP:.+]] = arith.constant -3 : index
// CHECK: %[[M:.+]] = arith.muli %[[I]], %[[STEP]]
// CHECK: %[[START:.+]] = arith.constant 7 : index
// CHECK: %[[R:.+]] = arith.addi %[[M]], %[[START]]
// CHECK: tensor.extract %{{.+}}[%[[R]], %{{.+}}] : tensor<8x6xf32>
func.func @slice(%x: tensor<8x6xf32>) -> (tensor<8x3xf32>, tensor<3x6xf32>) {
  %st = kiln.constant dense<[1]> : tensor<1xi64>
  %en = kiln.constant dense<[100]> : tensor<1xi64>
  %ax = kiln.constant dense<[-1]> : tensor<1xi64>
  %sp = kiln.constant dense<[2]> : tensor<1xi64>
  %a = kiln.slice %x, %st, %en, %ax, %sp : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x3xf32>
  %st2 = kiln.constant dense<[20]> : tensor<1xi32>
  %en2 = kiln.constant dense<[-100]> : tensor<1xi32>
  %ax2 = kiln.constant dense<[0]> : tensor<1xi32>
  %sp2 = kiln.constant dense<[-3]> : tensor<1xi32>
  %b = kiln.slice %x, %st2, %en2, %ax2, %sp2 : (tensor<8x6xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3x6xf32>
  return %a, %b : tensor<8x3xf32>, tensor<3x6xf32>
}
