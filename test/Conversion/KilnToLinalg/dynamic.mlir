// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | FileCheck %s
// Dynamic dims through the lowering: tensors are sized from the symbols
// (tensor.dim of the graph inputs at @main's start) by the symbolic shapes
// of the graph; the inputs' and outputs' dims over the symbols are recorded
// for the entry (kiln.shape, kiln.symbols).

// A Linear layer on a dynamic batch: the accumulator has the batch rows.
// CHECK: module attributes {kiln.symbols = ["batch"]}
// CHECK: func.func @main(%[[X:[^:]+]]: tensor<?x16xf32> {{{.*}}kiln.shape = affine_map<()[s0] -> (s0, 16)>}
// CHECK-SAME: -> (tensor<?x8xf32> {kiln.shape = #{{.*}}})
// CHECK: tensor.empty() : tensor<16x8xf32>
// CHECK: %[[B:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x16xf32>
// CHECK-NEXT: arith.constant 0.0
// CHECK-NEXT: %[[ACC:.+]] = tensor.empty(%[[B]]) : tensor<?x8xf32>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%{{.+}}) outs(%[[ACC]] : tensor<?x8xf32>)
// CHECK: linalg.matmul ins(%[[X]], %{{.+}} : tensor<?x16xf32>, tensor<16x8xf32>) outs(%[[FILL]] : tensor<?x8xf32>)
func.func @main(%x: tensor<?x16xf32> {kiln.name = "x", kiln.dims = ["batch", ""]}, %w: tensor<8x16xf32>, %bias: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.gemm %x, %w, %bias {transB = 1 : i64} : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = kiln.relu %0 : tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// -----

// A convolution on a dynamic batch: padded and accumulated with `n` images.
// CHECK: module attributes {kiln.symbols = ["n"]}
// CHECK: %[[N:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x3x8x8xf32>
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: } : tensor<?x3x8x8xf32> to tensor<?x3x10x10xf32>
// CHECK: %[[ACC:.+]] = tensor.empty(%[[N]]) : tensor<?x4x8x8xf32>
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%{{.+}}, %arg1 : tensor<?x3x10x10xf32>, tensor<4x3x3x3xf32>)
func.func @main(%x: tensor<?x3x8x8xf32> {kiln.name = "x", kiln.dims = ["n", "", "", ""]}, %w: tensor<4x3x3x3xf32>) -> tensor<?x4x8x8xf32> {
  %none = kiln.none
  %0 = kiln.conv %x, %w, %none {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<?x4x8x8xf32>
  return %0 : tensor<?x4x8x8xf32>
}

// -----

// Reshape to [-1, 4] collapses; a cache grown by Concat has past + seq
// rows, the second input at a run-time offset; Shape reads the run-time
// dims.
// CHECK: #[[FLAT:.+]] = affine_map<()[s0, s1, s2] -> (s0 * s1, 4)>
// CHECK: #[[GROWN:.+]] = affine_map<()[s0, s1, s2] -> (s0, s1 + s2, 4)>
// CHECK: module attributes {kiln.symbols = ["b", "s", "p"]}
// CHECK: -> (tensor<?x4xf32> {kiln.shape = #[[FLAT]]}, tensor<?x?x4xf32> {kiln.shape = #[[GROWN]]}, tensor<3xi64>)
// CHECK: %[[S:.+]] = tensor.dim %arg0, %c1
// CHECK: %[[P:.+]] = tensor.dim %arg1, %c1
// CHECK: %[[FLATV:.+]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<?x?x4xf32> into tensor<?x4xf32>
// CHECK: %[[ROWS:.+]] = arith.addi %[[S]], %[[P]] : index
// CHECK: %[[CACHE:.+]] = tensor.empty(%{{.+}}, %[[ROWS]]) : tensor<?x?x4xf32>
// CHECK: %[[FIRST:.+]] = tensor.insert_slice %arg1 into %[[CACHE]][0, 0, 0]
// CHECK: %[[OFF:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK: %[[BOTH:.+]] = tensor.insert_slice %arg0 into %[[FIRST]][0, %[[OFF]], 0]
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %{{.+}}, %{{.+}}, %{{.+}} : tensor<3xi64>
// CHECK: return %[[FLATV]], %[[BOTH]], %[[SHAPE]]
func.func @main(%x: tensor<?x?x4xf32> {kiln.name = "x", kiln.dims = ["b", "s", ""]}, %past: tensor<?x?x4xf32> {kiln.name = "past", kiln.dims = ["b", "p", ""]}) -> (tensor<?x4xf32>, tensor<?x?x4xf32>, tensor<3xi64>) {
  %shape = kiln.constant dense<[-1, 4]> : tensor<2xi64>
  %0 = kiln.reshape %x, %shape : (tensor<?x?x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %1 = kiln.concat %past, %x {axis = 1 : i64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %2 = kiln.shape %1 : (tensor<?x?x4xf32>) -> tensor<3xi64>
  return %0, %1, %2 : tensor<?x4xf32>, tensor<?x?x4xf32>, tensor<3xi64>
}

// -----

// Slices to run-time bounds: [:s] rows of a static table (sized by the
// symbol: the artifact's constraint s <= 8 keeps it in bounds) and [1:] of
// a dynamic dim (s - 1 rows), as strided extract_slices.
// CHECK: module attributes {kiln.symbols = ["s"]}
// CHECK: %[[S:.+]] = tensor.dim %arg0, %c0 : tensor<?x4xf32>
// CHECK: tensor.extract_slice %{{.+}}[0, 0] [%[[S]], 4] [1, 1] : tensor<8x4xf32> to tensor<?x4xf32>
// CHECK: %[[REST:.+]] = arith.addi %[[S]], %{{.+}} : index
// CHECK: tensor.extract_slice %arg0[1, 0] [%[[REST]], 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
func.func @main(%x: tensor<?x4xf32> {kiln.name = "x", kiln.dims = ["s", ""]}) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %table = kiln.constant dense<1.0> : tensor<8x4xf32>
  %shape = kiln.shape %x {end = 1 : i64} : (tensor<?x4xf32>) -> tensor<1xi64>
  %zero = kiln.constant dense<0> : tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %end = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %none = kiln.none
  %0 = kiln.slice %table, %zero, %shape, %zero, %none : (tensor<8x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x4xf32>
  %1 = kiln.slice %x, %one, %end, %zero, %none : (tensor<?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x4xf32>
  return %0, %1 : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// A mean over a dynamic dim divides by its run-time size.
// CHECK: module attributes {kiln.symbols = ["b", "s"]}
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: %[[S:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x?x4xf32>
// CHECK: %[[N:.+]] = arith.muli %[[S]], %{{.+}} : index
// CHECK: %[[I:.+]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[F:.+]] = arith.sitofp %[[I]] : i64 to f32
// CHECK: arith.divf %{{.+}}, %[[F]] : f32
func.func @main(%x: tensor<?x?x4xf32> {kiln.name = "x", kiln.dims = ["b", "s", ""]}) -> tensor<?x1x4xf32> {
  %ax = kiln.constant dense<1> : tensor<1xi64>
  %0 = kiln.reduce_mean %x, %ax {keepdims = 1 : i64} : (tensor<?x?x4xf32>, tensor<1xi64>) -> tensor<?x1x4xf32>
  return %0 : tensor<?x1x4xf32>
}

// -----

// Split of a dynamic tensor: each part sized from the symbolic shapes.
// CHECK: module attributes {kiln.symbols = ["b"]}
// CHECK: %[[B:.+]] = tensor.dim %arg0, %c0
// CHECK: tensor.extract_slice %arg0[0, 0] [%[[B]], 3] [1, 1] : tensor<?x8xf32> to tensor<?x3xf32>
// CHECK: tensor.extract_slice %arg0[0, 3] [%[[B]], 5] [1, 1] : tensor<?x8xf32> to tensor<?x5xf32>
func.func @main(%x: tensor<?x8xf32> {kiln.name = "x", kiln.dims = ["b", ""]}) -> (tensor<?x3xf32>, tensor<?x5xf32>) {
  %sizes = kiln.constant dense<[3, 5]> : tensor<2xi64>
  %0:2 = kiln.split %x, %sizes {axis = 1 : i64} : (tensor<?x8xf32>, tensor<2xi64>) -> (tensor<?x3xf32>, tensor<?x5xf32>)
  return %0#0, %0#1 : tensor<?x3xf32>, tensor<?x5xf32>
}

// -----

// Gather over a dynamic axis (a Loop body's x[:, t] over the sequence): the
// index wraps and clamps by the axis's run-time size; GatherElements the
// same over its axis, its result the indices' shape.
// CHECK: module attributes {kiln.symbols = ["b", "s", "n"]}
// CHECK: tensor.dim %arg2, %{{.+}} : tensor<?x?x4xi64>
// CHECK: %[[S:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x?x4xf32>
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<i64>) outs(%{{.+}} : tensor<?x4xf32>)
// CHECK: %[[B:.+]] = linalg.index 0
// CHECK: %[[J:.+]] = linalg.index 1
// CHECK: %[[I:.+]] = arith.index_cast %{{.+}} : i64 to index
// CHECK: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK: %[[ONE:.+]] = arith.constant 1 : index
// CHECK: %[[NEG:.+]] = arith.cmpi slt, %[[I]], %[[ZERO]]
// CHECK: %[[WRAP:.+]] = arith.addi %[[I]], %[[S]] : index
// CHECK: %[[AT:.+]] = arith.select %[[NEG]], %[[WRAP]], %[[I]]
// CHECK: %[[LAST:.+]] = arith.subi %[[S]], %[[ONE]]
// CHECK: %[[LAST0:.+]] = arith.maxsi %[[LAST]], %[[ZERO]]
// CHECK: %[[LOW:.+]] = arith.maxsi %[[AT]], %[[ZERO]]
// CHECK: %[[IN:.+]] = arith.minsi %[[LOW]], %[[LAST0]]
// CHECK: tensor.extract %arg0[%[[B]], %[[IN]], %[[J]]] : tensor<?x?x4xf32>
// CHECK: %[[S2:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x?x4xf32>
// CHECK: linalg.generic {{.*}} ins(%arg2 : tensor<?x?x4xi64>) outs(%{{.+}} : tensor<?x?x4xf32>)
// CHECK: arith.addi %{{.+}}, %[[S2]] : index
// CHECK: arith.subi %[[S2]], %{{.+}}
func.func @main(%x: tensor<?x?x4xf32> {kiln.name = "x", kiln.dims = ["b", "s", ""]}, %t: tensor<i64> {kiln.name = "t"}, %e: tensor<?x?x4xi64> {kiln.name = "e", kiln.dims = ["b", "n", ""]}) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) {
  %0 = kiln.gather %x, %t {axis = 1 : i64} : (tensor<?x?x4xf32>, tensor<i64>) -> tensor<?x4xf32>
  %1 = kiln.gather_elements %x, %e {axis = 1 : i64} : (tensor<?x?x4xf32>, tensor<?x?x4xi64>) -> tensor<?x?x4xf32>
  return %0, %1 : tensor<?x4xf32>, tensor<?x?x4xf32>
}
