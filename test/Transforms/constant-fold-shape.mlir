// RUN: kiln-opt %s -split-input-file -kiln-constant-fold | FileCheck %s
// kiln-constant-fold on shape and data-movement ops, generators and MatMul.

// The exported shape arithmetic folds completely: the Reshape's shape is a
// constant and nothing of the chain is left.
// CHECK-LABEL: func.func @shape_chain
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x256xf32>)
// CHECK: %[[S:.+]] = kiln.constant dense<[2, 16, 8, 32]> : tensor<4xi64>
// CHECK-NOT: kiln.shape
// CHECK-NOT: kiln.gather
// CHECK-NOT: kiln.unsqueeze
// CHECK-NOT: kiln.concat
// CHECK: %[[R:.+]] = kiln.reshape %[[X]], %[[S]]
// CHECK-NEXT: return %[[R]]
func.func @shape_chain(%x: tensor<2x16x256xf32>) -> tensor<2x16x8x32xf32> {
  %s = kiln.shape %x : (tensor<2x16x256xf32>) -> tensor<3xi64>
  %i0 = kiln.constant dense<0> : tensor<i64>
  %d0 = kiln.gather %s, %i0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %i1 = kiln.constant dense<1> : tensor<i64>
  %d1 = kiln.gather %s, %i1 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %u0 = kiln.unsqueeze %d0, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %u1 = kiln.unsqueeze %d1, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %h = kiln.constant dense<8> : tensor<1xi64>
  %w = kiln.constant dense<32> : tensor<1xi64>
  %shape = kiln.concat %u0, %u1, %h, %w {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %y = kiln.reshape %x, %shape : (tensor<2x16x256xf32>, tensor<4xi64>) -> tensor<2x16x8x32xf32>
  return %y : tensor<2x16x8x32xf32>
}

// -----

// The causal mask as PyTorch exports it becomes one lower-triangular i1
// constant feeding Where.
// CHECK-LABEL: func.func @causal_mask
// CHECK-DAG: %[[M:.+]] = kiln.constant dense<{{\[}}[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
// CHECK-NOT: kiln.constant_of_shape
// CHECK-NOT: kiln.trilu
// CHECK-NOT: kiln.cast
// CHECK: kiln.where %[[M]]
func.func @causal_mask(%scores: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %none = kiln.none
  %s = kiln.shape %scores {start = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<1xi64>
  %ss = kiln.concat %s, %s {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %ones = kiln.constant_of_shape %ss {value = dense<1.0> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<4x4xf32>
  %tri = kiln.trilu %ones, %none {upper = 0 : i64} : (tensor<4x4xf32>, none) -> tensor<4x4xf32>
  %mask = kiln.cast %tri {to = i1} : (tensor<4x4xf32>) -> tensor<4x4xi1>
  %min = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %y = kiln.where %mask, %scores, %min : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

// Trilu with k, upper; Range accumulates in the element type.
// CHECK-LABEL: func.func @trilu_range
// CHECK-DAG: %[[U:.+]] = kiln.constant dense<{{\[}}[0, 2, 3], [0, 0, 6]]> : tensor<2x3xi32>
// CHECK-DAG: %[[R:.+]] = kiln.constant dense<[10, 7, 4, 1]> : tensor<4xi64>
// CHECK-DAG: %[[F:.+]] = kiln.constant dense<[0.000000e+00, 5.000000e-01, 1.000000e+00]> : tensor<3xf32>
// CHECK: return %[[U]], %[[R]], %[[F]]
func.func @trilu_range() -> (tensor<2x3xi32>, tensor<4xi64>, tensor<3xf32>) {
  %x = kiln.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %k = kiln.constant dense<1> : tensor<i64>
  %0 = kiln.trilu %x, %k {upper = 1 : i64} : (tensor<2x3xi32>, tensor<i64>) -> tensor<2x3xi32>
  %start = kiln.constant dense<10> : tensor<i64>
  %limit = kiln.constant dense<0> : tensor<i64>
  %delta = kiln.constant dense<-3> : tensor<i64>
  %1 = kiln.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %fs = kiln.constant dense<0.0> : tensor<f32>
  %fl = kiln.constant dense<1.5> : tensor<f32>
  %fd = kiln.constant dense<0.5> : tensor<f32>
  %2 = kiln.range %fs, %fl, %fd : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<3xf32>
  return %0, %1, %2 : tensor<2x3xi32>, tensor<4xi64>, tensor<3xf32>
}

// -----

// Data movement of non-splat float constants.
// CHECK-LABEL: func.func @data_movement
// CHECK-DAG: %[[T:.+]] = kiln.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-DAG: %[[E:.+]] = kiln.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<2x3xf32>
// CHECK-DAG: %[[TI:.+]] = kiln.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<1x6xf32>
// CHECK-DAG: %[[S:.+]] = kiln.constant dense<{{\[}}[6.000000e+00, 4.000000e+00]]> : tensor<1x2xf32>
// CHECK-DAG: %[[G:.+]] = kiln.constant dense<{{\[}}[3.000000e+00, 1.000000e+00], [6.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[C:.+]] = kiln.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00, 1.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00, 2.000000e+00]]> : tensor<2x4xf32>
// CHECK-NOT: kiln.transpose
// CHECK-NOT: kiln.expand
// CHECK-NOT: kiln.tile
// CHECK-NOT: kiln.slice
// CHECK-NOT: kiln.gather
// CHECK-NOT: kiln.concat
// CHECK: return %[[T]], %[[E]], %[[TI]], %[[S]], %[[G]], %[[C]]
func.func @data_movement() -> (tensor<3x2xf32>, tensor<2x3xf32>, tensor<1x6xf32>, tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x4xf32>) {
  %none = kiln.none
  %x = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %0 = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %v = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %shape = kiln.constant dense<[2, 1]> : tensor<2xi64>
  %1 = kiln.expand %v, %shape : (tensor<3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %row = kiln.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>
  %rep = kiln.constant dense<[1, 2]> : tensor<2xi64>
  %2 = kiln.tile %row, %rep : (tensor<1x3xf32>, tensor<2xi64>) -> tensor<1x6xf32>
  %st = kiln.constant dense<[1, -1]> : tensor<2xi64>
  %en = kiln.constant dense<[2, -9223372036854775807]> : tensor<2xi64>
  %ax = kiln.constant dense<[0, 1]> : tensor<2xi64>
  %sp = kiln.constant dense<[1, -2]> : tensor<2xi64>
  %3 = kiln.slice %x, %st, %en, %ax, %sp : (tensor<2x3xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x2xf32>
  %idx = kiln.constant dense<[2, -3]> : tensor<2xi64>
  %4 = kiln.gather %x, %idx {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  %col = kiln.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %5 = kiln.concat %x, %col {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<3x2xf32>, tensor<2x3xf32>, tensor<1x6xf32>, tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x4xf32>
}

// -----

// An out-of-range Gather index is a run-time error: not folded.
// CHECK-LABEL: func.func @gather_out_of_range_stays
// CHECK: kiln.gather
func.func @gather_out_of_range_stays() -> tensor<1xf32> {
  %x = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %i = kiln.constant dense<[3]> : tensor<1xi64>
  %0 = kiln.gather %x, %i {axis = 0 : i64} : (tensor<3xf32>, tensor<1xi64>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

// A splat broadcast to a large shape stays a splat.
// CHECK-LABEL: func.func @splat_stays_splat
// CHECK: %[[C:.+]] = kiln.constant dense<1.000000e+00> : tensor<64x64x64xf32>
// CHECK-NEXT: return %[[C]]
func.func @splat_stays_splat() -> tensor<64x64x64xf32> {
  %s = kiln.constant dense<[64, 64, 64]> : tensor<3xi64>
  %0 = kiln.constant_of_shape %s {value = dense<1.0> : tensor<1xf32>} : (tensor<3xi64>) -> tensor<64x64x64xf32>
  %t = kiln.transpose %0 {perm = array<i64: 2, 0, 1>} : (tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  return %t : tensor<64x64x64xf32>
}

// -----

// Small MatMuls of constants: 2-D, batched with broadcasting, 1-D.
// CHECK-LABEL: func.func @matmul
// CHECK-DAG: %[[M:.+]] = kiln.constant dense<{{\[}}[1.900000e+01, 2.200000e+01], [4.300000e+01, 5.000000e+01]]> : tensor<2x2xf32>
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<{{\[}}{{\[}}[5, 6]], {{\[}}[15, 18]]]> : tensor<2x1x2xi32>
// CHECK-DAG: %[[V:.+]] = kiln.constant dense<[1.700000e+01, 3.900000e+01]> : tensor<2xf32>
// CHECK-NOT: kiln.matmul
// CHECK: return %[[M]], %[[B]], %[[V]]
func.func @matmul() -> (tensor<2x2xf32>, tensor<2x1x2xi32>, tensor<2xf32>) {
  %a = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = kiln.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %0 = kiln.matmul %a, %b : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %ia = kiln.constant dense<[[[1]], [[3]]]> : tensor<2x1x1xi32>
  %ib = kiln.constant dense<[[5, 6]]> : tensor<1x2xi32>
  %1 = kiln.matmul %ia, %ib : (tensor<2x1x1xi32>, tensor<1x2xi32>) -> tensor<2x1x2xi32>
  %v = kiln.constant dense<[5.0, 6.0]> : tensor<2xf32>
  %2 = kiln.matmul %a, %v : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1, %2 : tensor<2x2xf32>, tensor<2x1x2xi32>, tensor<2xf32>
}

// -----

// Split of a constant: each result is a constant.
// CHECK-LABEL: func.func @split
// CHECK-DAG: %[[A:.+]] = kiln.constant dense<{{\[}}[1, 2], [5, 6]]> : tensor<2x2xi64>
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<{{\[}}[3], [7]]> : tensor<2x1xi64>
// CHECK-DAG: %[[C:.+]] = kiln.constant dense<{{\[}}[4], [8]]> : tensor<2x1xi64>
// CHECK-NOT: kiln.split
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @split() -> (tensor<2x2xi64>, tensor<2x1xi64>, tensor<2x1xi64>) {
  %x = kiln.constant dense<[[1, 2, 3, 4], [5, 6, 7, 8]]> : tensor<2x4xi64>
  %sizes = kiln.constant dense<[2, 1, 1]> : tensor<3xi64>
  %0:3 = kiln.split %x, %sizes {axis = -1 : i64} : (tensor<2x4xi64>, tensor<3xi64>) -> (tensor<2x2xi64>, tensor<2x1xi64>, tensor<2x1xi64>)
  return %0#0, %0#1, %0#2 : tensor<2x2xi64>, tensor<2x1xi64>, tensor<2x1xi64>
}

// -----

// Reductions: ReduceProd of a shape's dims (exported flatten sizes), Sum and
// Max over axes given as an attribute or an operand, keepdims, Mean of floats;
// integer sums wrap.
// CHECK-LABEL: func.func @reductions
// CHECK-DAG: %[[P:.+]] = kiln.constant dense<512> : tensor<1xi64>
// CHECK-DAG: %[[S:.+]] = kiln.constant dense<[5, 7, 9]> : tensor<3xi32>
// CHECK-DAG: %[[M:.+]] = kiln.constant dense<{{\[}}[3], [6]]> : tensor<2x1xi32>
// CHECK-DAG: %[[A:.+]] = kiln.constant dense<2.500000e+00> : tensor<f32>
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<-2147483648> : tensor<i32>
// CHECK-NOT: kiln.reduce
// CHECK: return %[[P]], %[[S]], %[[M]], %[[A]], %[[W]]
func.func @reductions(%x: tensor<2x32x16xf32>) -> (tensor<1xi64>, tensor<3xi32>, tensor<2x1xi32>, tensor<f32>, tensor<i32>) {
  %none = kiln.none
  %s = kiln.shape %x {start = 1 : i64} : (tensor<2x32x16xf32>) -> tensor<2xi64>
  %0 = kiln.reduce_prod %s, %none {keepdims = 1 : i64} : (tensor<2xi64>, none) -> tensor<1xi64>
  %m = kiln.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %ax0 = kiln.constant dense<0> : tensor<1xi64>
  %1 = kiln.reduce_sum %m, %ax0 {keepdims = 0 : i64} : (tensor<2x3xi32>, tensor<1xi64>) -> tensor<3xi32>
  %2 = kiln.reduce_max %m, %none {axes = array<i64: -1>} : (tensor<2x3xi32>, none) -> tensor<2x1xi32>
  %f = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %3 = kiln.reduce_mean %f, %none {keepdims = 0 : i64} : (tensor<4xf32>, none) -> tensor<f32>
  %b = kiln.constant dense<[2147483647, 1]> : tensor<2xi32>
  %4 = kiln.reduce_sum %b, %none {keepdims = 0 : i64} : (tensor<2xi32>, none) -> tensor<i32>
  return %0, %1, %2, %3, %4 : tensor<1xi64>, tensor<3xi32>, tensor<2x1xi32>, tensor<f32>, tensor<i32>
}
