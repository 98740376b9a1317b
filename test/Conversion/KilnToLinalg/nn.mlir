// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | FileCheck %s

// 2-D MatMul is one linalg.matmul into a zero-filled accumulator.
// CHECK-LABEL: func.func @matmul_2d
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32)
// CHECK: linalg.matmul ins(%arg0, %arg1 : tensor<3x4xf32>, tensor<4x5xf32>) outs(%[[ACC]] : tensor<3x5xf32>)
func.func @matmul_2d(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %0 = kiln.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Batch dims broadcast (1 against 6, missing against 2), collapse into one
// batch dim; f16 accumulates in f32 and is truncated once.
// CHECK-DAG: #[[$BCAST_A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
// CHECK-DAG: #[[$BCAST_B:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
// CHECK-LABEL: func.func @matmul_batch_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[$BCAST_A]], {{.*}}]} ins(%arg0 : tensor<2x1x3x4xf16>) outs({{.*}} : tensor<2x6x3x4xf16>)
// CHECK: tensor.collapse_shape {{.*}} {{\[}}[0, 1], [2], [3]] : tensor<2x6x3x4xf16> into tensor<12x3x4xf16>
// CHECK: linalg.generic {indexing_maps = [#[[$BCAST_B]], {{.*}}]} ins(%arg1 : tensor<6x4x5xf16>)
// CHECK: %[[P:.*]] = linalg.batch_matmul ins({{.*}} : tensor<12x3x4xf16>, tensor<12x4x5xf16>) outs({{.*}} : tensor<12x3x5xf32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[P]] {{\[}}[0, 1], [2], [3]] output_shape [2, 6, 3, 5]
// CHECK: linalg.generic {{.*}} ins(%[[E]] : tensor<2x6x3x5xf32>) outs({{.*}} : tensor<2x6x3x5xf16>)
// CHECK: arith.truncf {{.*}} : f32 to f16
func.func @matmul_batch_broadcast(%a: tensor<2x1x3x4xf16>, %b: tensor<6x4x5xf16>) -> tensor<2x6x3x5xf16> {
  %0 = kiln.matmul %a, %b : (tensor<2x1x3x4xf16>, tensor<6x4x5xf16>) -> tensor<2x6x3x5xf16>
  return %0 : tensor<2x6x3x5xf16>
}

// -----

// An N-D lhs against a 2-D rhs: batch dims become rows of one matmul.
// Unsigned integers multiply as signless (same bits).
// CHECK-LABEL: func.func @matmul_rows
// CHECK: %[[A:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<2x3x4xi32> into tensor<6x4xi32>
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[A]], %arg1 : tensor<6x4xi32>, tensor<4x5xi32>)
// CHECK: tensor.expand_shape %[[P]] {{\[}}[0, 1], [2]] output_shape [2, 3, 5]
func.func @matmul_rows(%a: tensor<2x3x4xui32>, %b: tensor<4x5xui32>) -> tensor<2x3x5xui32> {
  %0 = kiln.matmul %a, %b : (tensor<2x3x4xui32>, tensor<4x5xui32>) -> tensor<2x3x5xui32>
  return %0 : tensor<2x3x5xui32>
}

// -----

// 1-D operands are promoted to a row / a column and the promoted dim dropped.
// CHECK-LABEL: func.func @matmul_vectors
// CHECK: tensor.expand_shape %arg0 {{\[}}[0, 1]] output_shape [1, 8]
// CHECK: tensor.expand_shape %arg0 {{\[}}[0, 1]] output_shape [8, 1]
// CHECK: %[[D:.*]] = linalg.matmul {{.*}} -> tensor<1x1xf32>
// CHECK: tensor.collapse_shape %[[D]] [] : tensor<1x1xf32> into tensor<f32>
// CHECK: tensor.expand_shape %arg0 {{\[}}[0, 1]] output_shape [8, 1]
// CHECK: %[[V:.*]] = linalg.matmul {{.*}} -> tensor<4x1xf32>
// CHECK: tensor.collapse_shape %[[V]] {{\[}}[0, 1]] : tensor<4x1xf32> into tensor<4xf32>
func.func @matmul_vectors(%v: tensor<8xf32>, %m: tensor<4x8xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %0 = kiln.matmul %v, %v : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  %1 = kiln.matmul %m, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<f32>, tensor<4xf32>
}

// -----

// Gemm: transposes, the matmul, then alpha * AB + beta * C with C broadcast.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @gemm
// CHECK: %[[AT:.*]] = linalg.transpose ins(%arg0 : tensor<4x3xf32>) outs({{.*}} : tensor<3x4xf32>) permutation = [1, 0]
// CHECK: %[[BT:.*]] = linalg.transpose ins(%arg1 : tensor<5x4xf32>) outs({{.*}} : tensor<4x5xf32>) permutation = [1, 0]
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[AT]], %[[BT]] :
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], {{.*}}} ins(%[[P]], %arg2 : tensor<3x5xf32>, tensor<5xf32>)
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: arith.mulf
// CHECK: arith.constant 2.000000e+00 : f32
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @gemm(%a: tensor<4x3xf32>, %b: tensor<5x4xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = kiln.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, transA = 1 : i64, transB = 1 : i64} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Gemm without C and with alpha 1 is the bare matmul.
// CHECK-LABEL: func.func @gemm_plain
// CHECK: %[[P:.*]] = linalg.matmul ins(%arg0, %arg1
// CHECK-NEXT: return %[[P]]
func.func @gemm_plain(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %none = kiln.none
  %0 = kiln.gemm %a, %b, %none : (tensor<3x4xf32>, tensor<4x5xf32>, none) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Softmax over axis 1: max (from -inf), sum of exp(x - max), divide; f16
// computes in f32.
// CHECK-DAG: #[[$X:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$R:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @softmax
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MI:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs({{.*}} : tensor<2x4xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[$X]], #[[$R]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : tensor<2x3x4xf16>) outs(%[[MI]] : tensor<2x4xf32>)
// CHECK: arith.extf
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[$X]], #[[$R]], #[[$R]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0, %[[MAX]]
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [#[[$X]], #[[$R]], #[[$R]], #[[$X]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %[[MAX]], %[[SUM]]
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.truncf
func.func @softmax(%x: tensor<2x3x4xf16>) -> tensor<2x3x4xf16> {
  %0 = kiln.softmax %x {axis = 1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  return %0 : tensor<2x3x4xf16>
}

// -----

// LogSoftmax: x - max - log(sum).
// CHECK-LABEL: func.func @log_softmax
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.generic
// CHECK: %[[SH:.*]] = arith.subf
// CHECK: %[[L:.*]] = math.log
// CHECK: arith.subf %[[SH]], %[[L]]
func.func @log_softmax(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.log_softmax %x {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Hardmax: the max, the first index holding it (min of the matching
// indices), then 1.0 there.
// CHECK-LABEL: func.func @hardmax
// CHECK: arith.maximumf
// CHECK: %[[FIRST:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK: linalg.index 0
// CHECK: arith.cmpf oeq
// CHECK: arith.minsi
// CHECK: arith.select
// CHECK: linalg.generic {{.*}} ins(%[[FIRST]] : tensor<3xi64>)
// CHECK: arith.cmpi eq
// CHECK: arith.select
func.func @hardmax(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.hardmax %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Conv group 1, 2-D: explicit zero padding, the bias broadcast along the
// channels as the accumulator, linalg.conv_2d_nchw_fchw with the strides.
// CHECK-DAG: #[[$CH:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @conv_2d
// CHECK: %[[PAD:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
// CHECK: %[[BIAS:.*]] = linalg.generic {indexing_maps = [#[[$CH]], {{.*}}]} ins(%arg2 : tensor<4xf32>)
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[PAD]], %arg1 : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%[[BIAS]] : tensor<1x4x4x4xf32>)
func.func @conv_2d(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = kiln.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// 1-D and 3-D group-1 convs use the named ops; VALID pads nothing.
// CHECK-LABEL: func.func @conv_1d_3d
// CHECK-NOT: tensor.pad
// CHECK: linalg.conv_1d_ncw_fcw {dilations = dense<2> : tensor<1xi64>, strides = dense<1> : tensor<1xi64>}
// CHECK: linalg.conv_3d_ncdhw_fcdhw
func.func @conv_1d_3d(%x: tensor<1x2x9xf32>, %w: tensor<3x2x3xf32>, %y: tensor<1x2x4x4x4xf32>, %v: tensor<3x2x2x2x2xf32>) -> (tensor<1x3x5xf32>, tensor<1x3x3x3x3xf32>) {
  %none = kiln.none
  %0 = kiln.conv %x, %w, %none {auto_pad = "VALID", dilations = array<i64: 2>} : (tensor<1x2x9xf32>, tensor<3x2x3xf32>, none) -> tensor<1x3x5xf32>
  %1 = kiln.conv %y, %v, %none : (tensor<1x2x4x4x4xf32>, tensor<3x2x2x2x2xf32>, none) -> tensor<1x3x3x3x3xf32>
  return %0, %1 : tensor<1x3x5xf32>, tensor<1x3x3x3x3xf32>
}

// -----

// Depthwise (group = C) f16 conv with SAME_UPPER: grouped generic over
// [N, G, M/G, oh, ow, C/G, kh, kw] accumulating in f32, then truncated.
// CHECK-DAG: #[[$GX:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
// CHECK-DAG: #[[$GW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-DAG: #[[$GO:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv_depthwise
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[X:.*]] = tensor.expand_shape {{.*}} into tensor<1x4x1x10x10xf16>
// CHECK: %[[W:.*]] = tensor.expand_shape %arg1 {{.*}} into tensor<4x1x1x3x3xf16>
// CHECK: %[[ACC:.*]] = tensor.expand_shape {{.*}} into tensor<1x4x1x8x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$GX]], #[[$GW]], #[[$GO]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[X]], %[[W]] : {{.*}}) outs(%[[ACC]] : tensor<1x4x1x8x8xf32>)
// CHECK: arith.extf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x4x8x8xf32>
// CHECK: arith.truncf
func.func @conv_depthwise(%x: tensor<1x4x8x8xf16>, %w: tensor<4x1x3x3xf16>) -> tensor<1x4x8x8xf16> {
  %none = kiln.none
  %0 = kiln.conv %x, %w, %none {auto_pad = "SAME_UPPER", group = 4 : i64} : (tensor<1x4x8x8xf16>, tensor<4x1x3x3xf16>, none) -> tensor<1x4x8x8xf16>
  return %0 : tensor<1x4x8x8xf16>
}

// -----

// MaxPool pads with -inf; the window operand gives the kernel loops their
// extent. With ceil_mode the overhang is padded too (ui8: with 0, the
// lowest ui8, and compared unsigned).
// CHECK-DAG: #[[$PX:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-DAG: #[[$PK:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
// CHECK-LABEL: func.func @max_pool
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[NEGINF]]
// CHECK: %[[K:.*]] = tensor.empty() : tensor<3x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$PX]], #[[$PK]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins({{.*}}, %[[K]]
// CHECK: arith.maximumf
// CHECK: tensor.pad %arg1 low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: arith.maxui
func.func @max_pool(%x: tensor<1x2x5x5xf32>, %u: tensor<1x2x5x5xui8>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xui8>) {
  %y, %i = kiln.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
  %z, %j = kiln.max_pool %u {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x2x5x5xui8>) -> (tensor<1x2x3x3xui8>, tensor<1x2x3x3xi64>)
  return %y, %z : tensor<1x2x3x3xf32>, tensor<1x2x3x3xui8>
}

// -----

// MaxPool with Indices: a second accumulator holds the flattened index
// ((n * C + c) * 25 + h * 5 + w); ties keep the smaller index.
// CHECK-LABEL: func.func @max_pool_indices
// CHECK: linalg.generic {{.*}} outs({{.*}}, {{.*}} : tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
// CHECK: arith.constant 25 : i64
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpi slt
// CHECK: linalg.yield {{.*}} : f32, i64
func.func @max_pool_indices(%x: tensor<1x2x5x5xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>) {
  %y, %i = kiln.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
  return %y, %i : tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>
}

// -----

// AveragePool without count_include_pad divides by the taps inside the
// input: 4 at the corners, 6 on the edges, 9 inside.
// CHECK-LABEL: func.func @average_pool
// CHECK: arith.addf
// CHECK: %[[DIV:.*]] = arith.constant dense<{{\[}}[4.000000e+00, 6.000000e+00, 4.000000e+00], [6.000000e+00, 9.000000e+00, 6.000000e+00], [4.000000e+00, 6.000000e+00, 4.000000e+00]]> : tensor<3x3xf32>
// CHECK: linalg.generic {{.*}} ins({{.*}}, %[[DIV]] :
// CHECK: arith.divf
func.func @average_pool(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %y = kiln.average_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// count_include_pad counts the explicit padding but not the ceil_mode
// overhang: 5 + 1 padded = 6 wide, windows of 3 at stride 2 start at 0, 2
// and 4, the last covering 2 padded elements and 1 past: 3, 3, 2.
// CHECK-LABEL: func.func @average_pool_include_pad
// CHECK: tensor.pad %arg0 low[0, 0, 1] high[0, 0, 1]
// CHECK: arith.constant dense<[3.000000e+00, 3.000000e+00, 2.000000e+00]> : tensor<3xf32>
func.func @average_pool_include_pad(%x: tensor<1x1x5xf32>) -> tensor<1x1x3xf32> {
  %y = kiln.average_pool %x {kernel_shape = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 0>, ceil_mode = 1 : i64, count_include_pad = 1 : i64} : (tensor<1x1x5xf32>) -> tensor<1x1x3xf32>
  return %y : tensor<1x1x3xf32>
}

// -----

// Global pools reduce the spatial dims into [N, C] and expand back.
// CHECK-LABEL: func.func @global_pools
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%arg0 : tensor<1x2x5x5xf16>) outs({{.*}} : tensor<1x2xf32>)
// CHECK: arith.constant 2.500000e+01 : f32
// CHECK: arith.divf
// CHECK: tensor.expand_shape {{.*}} {{\[}}[0], [1, 2, 3]] output_shape [1, 2, 1, 1]
// CHECK: arith.maximumf
// CHECK: math.sqrt
func.func @global_pools(%x: tensor<1x2x5x5xf16>) -> (tensor<1x2x1x1xf16>, tensor<1x2x1x1xf16>, tensor<1x2x1x1xf16>) {
  %0 = kiln.global_average_pool %x : (tensor<1x2x5x5xf16>) -> tensor<1x2x1x1xf16>
  %1 = kiln.global_max_pool %x : (tensor<1x2x5x5xf16>) -> tensor<1x2x1x1xf16>
  %2 = kiln.global_lp_pool %x {p = 2 : i64} : (tensor<1x2x5x5xf16>) -> tensor<1x2x1x1xf16>
  return %0, %1, %2 : tensor<1x2x1x1xf16>, tensor<1x2x1x1xf16>, tensor<1x2x1x1xf16>
}
