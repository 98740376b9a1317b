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

// -----

// Slice with run-time starts and steps: clamped at run time, read through
// offset + step * i.
// CHECK-LABEL: func.func @slice_runtime
// CHECK: %[[START:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<1xi64>
// CHECK: %[[STEP:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<1xi64>
// CHECK: arith.maxsi
// CHECK: %[[OFF:.+]] = arith.minsi
// CHECK: linalg.generic
// CHECK: %[[M:.+]] = arith.muli %{{.+}}, %[[STEP]] : i64
// CHECK: arith.addi %[[OFF]], %[[M]] : i64
// CHECK: tensor.extract %{{.+}} : tensor<8x6xf32>
func.func @slice_runtime(%x: tensor<8x6xf32>, %st: tensor<1xi64>, %sp: tensor<1xi64>) -> tensor<8x3xf32> {
  %en = kiln.constant dense<[100]> : tensor<1xi64>
  %ax = kiln.constant dense<[1]> : tensor<1xi64>
  %a = kiln.slice %x, %st, %en, %ax, %sp : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x3xf32>
  return %a : tensor<8x3xf32>
}

// -----

// Gather reads the index through the indices dims of the result and wraps
// negative ones; GatherElements replaces the axis index.
// CHECK-DAG: #[[$IDX:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[X:.+]]: tensor<5x4xf32>, %[[I:.+]]: tensor<2x3xi64>, %[[E:.+]]: tensor<5x2xi32>)
// CHECK: linalg.generic {indexing_maps = [#[[$IDX]], {{.+}}]{{.*}} ins(%[[I]] : tensor<2x3xi64>) outs(%{{.+}} : tensor<5x2x3xf32>)
// CHECK: ^bb0(%[[IN:.+]]: i64, %{{.+}}: f32):
// CHECK: %[[D0:.+]] = linalg.index 0
// CHECK: %[[C:.+]] = arith.index_cast %[[IN]] : i64 to index
// CHECK: %[[NEG:.+]] = arith.cmpi slt, %[[C]]
// CHECK: %[[W:.+]] = arith.select %[[NEG]]
// CHECK: tensor.extract %[[X]][%[[D0]], %{{.+}}] : tensor<5x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[E]] : tensor<5x2xi32>) outs(%{{.+}} : tensor<5x2xf32>)
// CHECK: %[[R:.+]] = linalg.index 0
// CHECK: arith.index_cast %{{.+}} : i32 to index
// CHECK: tensor.extract %[[X]][%[[R]], %{{.+}}] : tensor<5x4xf32>
func.func @gather(%x: tensor<5x4xf32>, %i: tensor<2x3xi64>, %e: tensor<5x2xi32>) -> (tensor<5x2x3xf32>, tensor<5x2xf32>) {
  %a = kiln.gather %x, %i {axis = 1 : i64} : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<5x2x3xf32>
  %b = kiln.gather_elements %x, %e {axis = 1 : i64} : (tensor<5x4xf32>, tensor<5x2xi32>) -> tensor<5x2xf32>
  return %a, %b : tensor<5x2x3xf32>, tensor<5x2xf32>
}

// -----

// GatherND with batch_dims = 1: data index = (batch, indices[b, i, 0], j).
// CHECK-LABEL: func.func @gather_nd
// CHECK-SAME: (%[[X:.+]]: tensor<2x5x6xf32>, %[[I:.+]]: tensor<2x3x1xi64>)
// CHECK: %[[B:.+]] = linalg.index 0
// CHECK: %[[P:.+]] = linalg.index 1
// CHECK: %[[J:.+]] = linalg.index 2
// CHECK: tensor.extract %[[I]][%[[B]], %[[P]], %{{.+}}] : tensor<2x3x1xi64>
// CHECK: tensor.extract %[[X]][%[[B]], %{{.+}}, %[[J]]] : tensor<2x5x6xf32>
func.func @gather_nd(%x: tensor<2x5x6xf32>, %i: tensor<2x3x1xi64>) -> tensor<2x3x6xf32> {
  %y = kiln.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x5x6xf32>, tensor<2x3x1xi64>) -> tensor<2x3x6xf32>
  return %y : tensor<2x3x6xf32>
}

// -----

// Scatters: loops over the updates on a tensor carried from `data`;
// reductions combine with the current value (unsigned max for ui8).
// CHECK-LABEL: func.func @scatter
// CHECK-SAME: (%[[X:.+]]: tensor<3x3xf32>, %{{.+}}: tensor<2x3xi64>, %{{.+}}: tensor<2x3xf32>, %[[D:.+]]: tensor<8xi8>
// CHECK: scf.for {{.*}} iter_args(%{{.+}} = %[[X]]) -> (tensor<3x3xf32>)
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (tensor<3x3xf32>)
// CHECK: %[[OLD:.+]] = tensor.extract %[[ACC]]
// CHECK: %[[NEW:.+]] = arith.addf %[[OLD]], %{{.+}} : f32
// CHECK: tensor.insert %[[NEW]] into %[[ACC]]
// CHECK: scf.for {{.*}} iter_args(%[[ACC2:.+]] = %[[D]]) -> (tensor<8xi8>)
// CHECK: arith.maxui %{{.+}}, %{{.+}} : i8
// CHECK: tensor.insert %{{.+}} into %[[ACC2]]
func.func @scatter(%x: tensor<3x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>, %d: tensor<8xui8>, %ni: tensor<4x1xi64>, %nu: tensor<4xui8>) -> (tensor<3x3xf32>, tensor<8xui8>) {
  %y = kiln.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "add"} : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  %z = kiln.scatter_nd %d, %ni, %nu {reduction = "max"} : (tensor<8xui8>, tensor<4x1xi64>, tensor<4xui8>) -> tensor<8xui8>
  return %y, %z : tensor<3x3xf32>, tensor<8xui8>
}

// -----

// CHECK-LABEL: func.func @generators
// CHECK: %[[SEVEN:.+]] = arith.constant 7 : i64
// CHECK: linalg.fill ins(%[[SEVEN]] : i64) outs(%{{.+}} : tensor<2x3xi64>)
// CHECK: %[[START:.+]] = tensor.extract %{{.+}}[] : tensor<f32>
// CHECK: %[[DELTA:.+]] = tensor.extract %{{.+}}[] : tensor<f32>
// CHECK: linalg.generic
// CHECK: %[[F:.+]] = arith.sitofp
// CHECK: %[[M:.+]] = arith.mulf %[[F]], %[[DELTA]]
// CHECK: arith.addf %[[START]], %[[M]]
// CHECK: linalg.generic
// CHECK: %[[R:.+]] = linalg.index 0
// CHECK: %[[C:.+]] = linalg.index 1
// CHECK: %[[DIFF:.+]] = arith.subi %[[C]], %[[R]]
// CHECK: arith.cmpi eq, %[[DIFF]], %c1
func.func @generators(%s: tensor<2xi64>, %a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %x: tensor<3x4xi64>) -> (tensor<2x3xi64>, tensor<5xf32>, tensor<3x4xf32>) {
  %y = kiln.constant_of_shape %s {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<2x3xi64>
  %r = kiln.range %a, %b, %c : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<5xf32>
  %e = kiln.eye_like %x {k = 1 : i64, dtype = f32} : (tensor<3x4xi64>) -> tensor<3x4xf32>
  return %y, %r, %e : tensor<2x3xi64>, tensor<5xf32>, tensor<3x4xf32>
}

// -----

// OneHot along axis 0: the indices are read without the axis dim, float
// indices truncate, negative ones count from the depth (10).
// CHECK-DAG: #[[$NOAXIS:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @one_hot
// CHECK: linalg.generic {indexing_maps = [#[[$NOAXIS]], {{.+}}]
// CHECK: %[[P:.+]] = linalg.index 0
// CHECK: %[[I:.+]] = arith.fptosi %{{.+}} : f32 to i64
// CHECK: %[[DEPTH:.+]] = arith.constant 10 : i64
// CHECK: arith.addi %[[I]], %[[DEPTH]]
// CHECK: arith.index_cast %[[P]] : index to i64
func.func @one_hot(%i: tensor<4xf32>, %d: tensor<i64>, %v: tensor<2xi32>) -> tensor<10x4xi32> {
  %y = kiln.one_hot %i, %d, %v {axis = 0 : i64} : (tensor<4xf32>, tensor<i64>, tensor<2xi32>) -> tensor<10x4xi32>
  return %y : tensor<10x4xi32>
}

// -----

// Trilu (lower, run-time k) keeps j - i <= k. CumSum (axis 1, exclusive,
// reverse) loops over the axis positions backwards, stores the running sum
// before adding the slice into it in place.
// CHECK-LABEL: func.func @trilu_cumsum
// CHECK: %[[K:.+]] = tensor.extract %{{.+}}[] : tensor<i64>
// CHECK: arith.cmpi sle, %{{.+}}, %[[K]] : i64
// CHECK: scf.for %[[T:.+]] = {{.*}} iter_args(%[[ACC:.+]] = %{{.+}}, %[[OUT:.+]] = %{{.+}}) -> (tensor<2x1x4xf32>, tensor<2x4x4xf32>)
// CHECK: %[[POS:.+]] = arith.subi %c3, %[[T]]
// CHECK: %[[SLICE:.+]] = tensor.extract_slice %{{.+}}[0, %[[POS]], 0] [2, 1, 4] [1, 1, 1]
// CHECK: %[[STORED:.+]] = tensor.insert_slice %[[ACC]] into %[[OUT]][0, %[[POS]], 0]
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[SLICE]] : tensor<2x1x4xf32>) outs(%[[ACC]] : tensor<2x1x4xf32>)
// CHECK: scf.yield %[[SUM]], %[[STORED]]
func.func @trilu_cumsum(%x: tensor<2x4x4xf32>, %k: tensor<i64>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %a = kiln.trilu %x, %k {upper = 0 : i64} : (tensor<2x4x4xf32>, tensor<i64>) -> tensor<2x4x4xf32>
  %axis = kiln.constant dense<1> : tensor<i32>
  %b = kiln.cum_sum %x, %axis {exclusive = 1 : i64, reverse = 1 : i64} : (tensor<2x4x4xf32>, tensor<i32>) -> tensor<2x4x4xf32>
  return %a, %b : tensor<2x4x4xf32>, tensor<2x4x4xf32>
}

// -----

// CumSum with a run-time axis: one loop per possible axis under scf.if.
// CHECK-LABEL: func.func @cumsum_runtime_axis
// CHECK: %[[A:.+]] = arith.index_cast %{{.+}} : i64 to index
// CHECK: scf.if
// CHECK: scf.for {{.*}} -> (tensor<1x3xi32>, tensor<2x3xi32>)
// CHECK: } else {
// CHECK: scf.for {{.*}} -> (tensor<2x1xi32>, tensor<2x3xi32>)
func.func @cumsum_runtime_axis(%x: tensor<2x3xi32>, %axis: tensor<i64>) -> tensor<2x3xi32> {
  %y = kiln.cum_sum %x, %axis : (tensor<2x3xi32>, tensor<i64>) -> tensor<2x3xi32>
  return %y : tensor<2x3xi32>
}

// -----

// ReverseSequence reads sequence_lens[batch]; DepthToSpace (CRD) and
// SpaceToDepth are reshape -> transpose -> reshape.
// CHECK-LABEL: func.func @reverse_depth_space
// CHECK: %[[T:.+]] = linalg.index 0
// CHECK: %[[LEN:.+]] = arith.index_cast %{{.+}} : i64 to index
// CHECK: arith.cmpi slt, %[[T]], %[[LEN]]
// CHECK: tensor.expand_shape %{{.+}} output_shape [1, 2, 2, 2, 2, 3] : tensor<1x8x2x3xf32> into tensor<1x2x2x2x2x3xf32>
// CHECK: linalg.transpose {{.*}} permutation = [0, 1, 4, 2, 5, 3]
// CHECK: tensor.collapse_shape %{{.+}} : tensor<1x2x2x2x3x2xf32> into tensor<1x2x4x6xf32>
// CHECK: tensor.expand_shape %{{.+}} output_shape [1, 2, 2, 2, 3, 2] : tensor<1x2x4x6xf32> into tensor<1x2x2x2x3x2xf32>
// CHECK: linalg.transpose {{.*}} permutation = [0, 3, 5, 1, 2, 4]
// CHECK: tensor.collapse_shape %{{.+}} : tensor<1x2x2x2x2x3xf32> into tensor<1x8x2x3xf32>
func.func @reverse_depth_space(%x: tensor<4x2x3xf32>, %l: tensor<2xi64>, %y: tensor<1x8x2x3xf32>) -> (tensor<4x2x3xf32>, tensor<1x2x4x6xf32>, tensor<1x8x2x3xf32>) {
  %a = kiln.reverse_sequence %x, %l {batch_axis = 1 : i64, time_axis = 0 : i64} : (tensor<4x2x3xf32>, tensor<2xi64>) -> tensor<4x2x3xf32>
  %b = kiln.depth_to_space %y {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  %c = kiln.space_to_depth %b {blocksize = 2 : i64} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  return %a, %b, %c : tensor<4x2x3xf32>, tensor<1x2x4x6xf32>, tensor<1x8x2x3xf32>
}

// -----

// TopK: per row, K selection passes over the axis; ties go to the lower
// index; unsigned compares for ui8 (smallest).
// CHECK-LABEL: func.func @top_k
// CHECK: scf.for {{.*}} -> (tensor<2x3xf32>, tensor<2x3xi64>)
// CHECK: scf.for {{.*}} -> (tensor<2x3xf32>, tensor<2x3xi64>, f32, index)
// CHECK: scf.for {{.*}} -> (f32, index, i1)
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK: tensor.insert %{{.+}} : tensor<2x3xf32>
// CHECK: arith.index_cast %{{.+}} : index to i64
// CHECK: tensor.insert %{{.+}} : tensor<2x3xi64>
// CHECK: arith.cmpi ult, %{{.+}}, %{{.+}} : i8
func.func @top_k(%x: tensor<2x10xf32>, %u: tensor<6xui8>) -> (tensor<2x3xf32>, tensor<2x3xi64>, tensor<2xui8>, tensor<2xi64>) {
  %k = kiln.constant dense<3> : tensor<1xi64>
  %v, %i = kiln.top_k %x, %k {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<2x10xf32>, tensor<1xi64>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  %k2 = kiln.constant dense<2> : tensor<1xi64>
  %v2, %i2 = kiln.top_k %u, %k2 {axis = 0 : i64, largest = 0 : i64, sorted = 1 : i64} : (tensor<6xui8>, tensor<1xi64>) -> (tensor<2xui8>, tensor<2xi64>)
  return %v, %i, %v2, %i2 : tensor<2x3xf32>, tensor<2x3xi64>, tensor<2xui8>, tensor<2xi64>
}

// -----

// Empty results are just tensor.empty: nothing to read.
// CHECK-LABEL: func.func @empty_results
// CHECK-DAG: %[[R:.+]] = tensor.empty() : tensor<3x0xf32>
// CHECK-DAG: %[[S:.+]] = tensor.empty() : tensor<0x3xf32>
// CHECK: return %[[R]], %[[S]]
func.func @empty_results(%x: tensor<0x3xf32>, %y: tensor<4x3xf32>) -> (tensor<3x0xf32>, tensor<0x3xf32>) {
  %s = kiln.constant dense<[3, 0]> : tensor<2xi64>
  %r = kiln.reshape %x, %s {allowzero = 1 : i64} : (tensor<0x3xf32>, tensor<2xi64>) -> tensor<3x0xf32>
  %st = kiln.constant dense<[10]> : tensor<1xi64>
  %en = kiln.constant dense<[20]> : tensor<1xi64>
  %none = kiln.none
  %e = kiln.slice %y, %st, %en, %none, %none : (tensor<4x3xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<0x3xf32>
  return %r, %e : tensor<3x0xf32>, tensor<0x3xf32>
}
