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

// Grouped f16 conv with SAME_UPPER: a generic over
// [N, G, M/G, oh, ow, C/G, kh, kw] accumulating in f32, then truncated.
// CHECK-DAG: #[[$GX:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
// CHECK-DAG: #[[$GW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-DAG: #[[$GO:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv_grouped
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[X:.*]] = tensor.expand_shape {{.*}} into tensor<1x2x2x10x10xf16>
// CHECK: %[[W:.*]] = tensor.expand_shape %arg1 {{.*}} into tensor<2x3x2x3x3xf16>
// CHECK: %[[ACC:.*]] = tensor.expand_shape {{.*}} into tensor<1x2x3x8x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$GX]], #[[$GW]], #[[$GO]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[X]], %[[W]] : {{.*}}) outs(%[[ACC]] : tensor<1x2x3x8x8xf32>)
// CHECK: arith.extf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x6x8x8xf32>
// CHECK: arith.truncf
func.func @conv_grouped(%x: tensor<1x4x8x8xf16>, %w: tensor<6x2x3x3xf16>) -> tensor<1x6x8x8xf16> {
  %none = kiln.none
  %0 = kiln.conv %x, %w, %none {auto_pad = "SAME_UPPER", group = 2 : i64} : (tensor<1x4x8x8xf16>, tensor<6x2x3x3xf16>, none) -> tensor<1x6x8x8xf16>
  return %0 : tensor<1x6x8x8xf16>
}

// -----

// Depthwise (group = C = M): linalg.depthwise_conv_2d_nchw_chw on the
// [C, kh, kw] filter.
// CHECK-LABEL: func.func @conv_depthwise
// CHECK: %[[F:.*]] = tensor.collapse_shape %arg1 {{.*}} : tensor<4x1x3x3xf32> into tensor<4x3x3xf32>
// CHECK: linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%{{.*}}, %[[F]] : tensor<1x4x9x9xf32>, tensor<4x3x3xf32>)
func.func @conv_depthwise(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %none = kiln.none
  %0 = kiln.conv %x, %w, %none {auto_pad = "SAME_UPPER", group = 4 : i64, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>, none) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// MaxPool pads with -inf; a 2-D float pool is linalg.pooling_nchw_max.
// Others are a generic whose window operand gives the kernel loops their
// extent; with ceil_mode the overhang is padded too (ui8: with 0, the
// lowest ui8, and compared unsigned).
// CHECK-DAG: #[[$PX:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-DAG: #[[$PK:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
// CHECK-LABEL: func.func @max_pool
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[P:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[NEGINF]]
// CHECK: %[[K:.*]] = tensor.empty() : tensor<3x3xf32>
// CHECK: linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[P]], %[[K]] : tensor<1x2x7x7xf32>, tensor<3x3xf32>)
// CHECK: tensor.pad %arg1 low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: %[[K2:.*]] = tensor.empty() : tensor<2x2xi8>
// CHECK: linalg.generic {indexing_maps = [#[[$PX]], #[[$PK]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins({{.*}}, %[[K2]]
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
// CHECK: linalg.pooling_nchw_sum
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

// -----

// BatchNormalization: one elementwise generic with the per-channel vectors
// read along dim 1.
// CHECK-DAG: #[[$BNC:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @batch_norm
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[$BNC]], #[[$BNC]], #[[$BNC]], #[[$BNC]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK: arith.subf
// CHECK: arith.constant 9.99999974E-6 : f32
// CHECK: math.rsqrt
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @batch_norm(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3x4xf32> {
  %0 = kiln.batch_normalization %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// LayerNormalization over the last dim in f32 (stash_type 1) for f16 data:
// sum, mean, squared deviations, then the normalized output and the Mean /
// InvStdDev outputs with the normalized dim kept as 1.
// CHECK-DAG: #[[$LX:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$LS:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$LP:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[$LX]], #[[$LS]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<2x3x8xf16>) outs({{.*}} : tensor<2x3xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]]
// CHECK: arith.constant 8.000000e+00 : f32
// CHECK: %[[SQ:.*]] = linalg.generic {indexing_maps = [#[[$LX]], #[[$LS]], #[[$LS]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %[[MEAN]]
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%[[SQ]]
// CHECK: linalg.generic {indexing_maps = [#[[$LX]], #[[$LS]], #[[$LS]], #[[$LP]], #[[$LP]], #[[$LX]]], {{.*}} ins(%arg0, %[[MEAN]], %[[VAR]], %arg1, %arg2 : {{.*}}) outs({{.*}} : tensor<2x3x8xf16>)
// CHECK: math.rsqrt
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: tensor.expand_shape %[[MEAN]] {{\[}}[0], [1, 2]] output_shape [2, 3, 1]
// CHECK: linalg.generic {{.*}} ins(%[[VAR]]
// CHECK: math.rsqrt
func.func @layer_norm(%x: tensor<2x3x8xf16>, %s: tensor<8xf16>, %b: tensor<8xf16>) -> (tensor<2x3x8xf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) {
  %y, %m, %i = kiln.layer_normalization %x, %s, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32, stash_type = 1 : i64} : (tensor<2x3x8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x3x8xf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  return %y, %m, %i : tensor<2x3x8xf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
}

// -----

// GroupNormalization: X as [N, G, C/G, H, W], statistics over the last
// three, scale and bias as [G, C/G].
// CHECK-DAG: #[[$GP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2)>
// CHECK-LABEL: func.func @group_norm
// CHECK: tensor.expand_shape %arg0 {{\[}}[0], [1, 2], [3], [4]] output_shape [2, 4, 2, 4, 4]
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK: tensor.expand_shape %arg1 {{\[}}[0, 1]] output_shape [4, 2]
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}, #[[$GP]], #[[$GP]], #{{.*}}]
// CHECK: tensor.collapse_shape {{.*}} {{\[}}[0], [1, 2], [3], [4]] : tensor<2x4x2x4x4xf32> into tensor<2x8x4x4xf32>
func.func @group_norm(%x: tensor<2x8x4x4xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x8x4x4xf32> {
  %0 = kiln.group_normalization %x, %s, %b {epsilon = 1.0e-05 : f32, num_groups = 4 : i64} : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  return %0 : tensor<2x8x4x4xf32>
}

// -----

// LRN: X zero-padded along C by floor((size-1)/2) / ceil((size-1)/2), the
// window summed over an extra loop.
// CHECK-DAG: #[[$LRNX:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 + d4, d2, d3)>
// CHECK-DAG: #[[$LRNK:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d4)>
// CHECK-LABEL: func.func @lrn_dropout
// CHECK: tensor.pad %arg0 low[0, 1, 0, 0] high[0, 2, 0, 0]
// CHECK: linalg.generic {indexing_maps = [#[[$LRNX]], #[[$LRNK]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK: math.powf
// Dropout: the data and an all-true mask.
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: %[[MASK:.*]] = linalg.fill ins(%[[TRUE]] : i1) outs({{.*}} : tensor<2x5x4x4xi1>)
// CHECK: return {{.*}}, %arg0, %[[MASK]]
func.func @lrn_dropout(%x: tensor<2x5x4x4xf32>) -> (tensor<2x5x4x4xf32>, tensor<2x5x4x4xf32>, tensor<2x5x4x4xi1>) {
  %none = kiln.none
  %0 = kiln.lrn %x {size = 4 : i64} : (tensor<2x5x4x4xf32>) -> tensor<2x5x4x4xf32>
  %1, %2 = kiln.dropout %x, %none, %none : (tensor<2x5x4x4xf32>, none, none) -> (tensor<2x5x4x4xf32>, tensor<2x5x4x4xi1>)
  return %0, %1, %2 : tensor<2x5x4x4xf32>, tensor<2x5x4x4xf32>, tensor<2x5x4x4xi1>
}

// -----

// Pad with constant pads: negative pads crop with extract_slice, constant
// mode is a tensor.pad yielding the constant_value, reflect reads mirrored
// indices (period 2(n-1)), edge clamps.
// CHECK-LABEL: func.func @pad_modes
// CHECK: %[[CV:.*]] = tensor.extract %{{.*}}[] : tensor<f32>
// CHECK: %[[CROP:.*]] = tensor.extract_slice %arg0[0, 0] [3, 3] [1, 1] : tensor<3x4xf32> to tensor<3x3xf32>
// CHECK: tensor.pad %[[CROP]] low[1, 0] high[1, 0]
// CHECK: tensor.yield %[[CV]] : f32
// CHECK: linalg.generic
// CHECK: arith.remsi
// CHECK: arith.cmpi slt
// CHECK: arith.select
// CHECK: tensor.extract
// CHECK: linalg.generic
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract %arg0
func.func @pad_modes(%x: tensor<3x4xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>, tensor<3x8xf32>) {
  %none = kiln.none
  %p = kiln.constant dense<[1, 0, 1, -1]> : tensor<4xi64>
  %cv = kiln.constant dense<2.5> : tensor<f32>
  %q = kiln.constant dense<[2, 2]> : tensor<2xi64>
  %ax = kiln.constant dense<[1]> : tensor<1xi64>
  %0 = kiln.pad %x, %p, %cv, %none {mode = "constant"} : (tensor<3x4xf32>, tensor<4xi64>, tensor<f32>, none) -> tensor<5x3xf32>
  %1 = kiln.pad %x, %p, %none, %none {mode = "reflect"} : (tensor<3x4xf32>, tensor<4xi64>, none, none) -> tensor<5x3xf32>
  %2 = kiln.pad %x, %q, %none, %ax {mode = "edge"} : (tensor<3x4xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<3x8xf32>
  return %0, %1, %2 : tensor<5x3xf32>, tensor<5x3xf32>, tensor<3x8xf32>
}

// -----

// Pads computed at run time: the begin pads are read from the tensor and
// positions outside the data take the pad value.
// CHECK-LABEL: func.func @pad_runtime
// CHECK: linalg.generic
// CHECK: tensor.extract %arg1
// CHECK: arith.index_cast
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: tensor.extract %arg0
// CHECK: arith.select
func.func @pad_runtime(%x: tensor<3x4xf32>, %p: tensor<4xi64>) -> tensor<5x6xf32> {
  %none = kiln.none
  %0 = kiln.pad %x, %p, %none, %none {mode = "constant"} : (tensor<3x4xf32>, tensor<4xi64>, none, none) -> tensor<5x6xf32>
  return %0 : tensor<5x6xf32>
}

// -----

// ConvTranspose: X upsampled by the strides into zeros, padded by
// dilation * (k - 1) - pad_begin (and what the output size needs at the
// end), convolved at stride 1 with the kernel flipped and its channel dims
// swapped.
// CHECK-DAG: #[[$FLIP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, -d3 + 2, -d4 + 2)>
// CHECK-LABEL: func.func @conv_transpose
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<1x2x5x5xf32>
// CHECK: %[[UP:.*]] = tensor.insert_slice %arg0 into %[[Z]][0, 0, 0, 0] [1, 2, 3, 3] [1, 1, 2, 2]
// CHECK: %[[PAD:.*]] = tensor.pad %[[UP]] low[0, 0, 1, 1] high[0, 0, 2, 2]
// CHECK: %[[WG:.*]] = tensor.expand_shape %arg1 {{\[}}[0, 1], [2], [3], [4]] output_shape [1, 2, 3, 3, 3]
// CHECK: %[[F:.*]] = linalg.generic {indexing_maps = [#[[$FLIP]], {{.*}}]} ins(%[[WG]] : tensor<1x2x3x3x3xf32>) outs({{.*}} : tensor<1x3x2x3x3xf32>)
// CHECK: %[[W:.*]] = tensor.collapse_shape %[[F]] {{.*}} into tensor<3x2x3x3xf32>
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[PAD]], %[[W]] : tensor<1x2x8x8xf32>, tensor<3x2x3x3xf32>)
func.func @conv_transpose(%x: tensor<1x2x3x3xf32>, %w: tensor<2x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x3x6x6xf32> {
  %0 = kiln.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : (tensor<1x2x3x3xf32>, tensor<2x3x3x3xf32>, tensor<3xf32>) -> tensor<1x3x6x6xf32>
  return %0 : tensor<1x3x6x6xf32>
}

// -----

// Resize: a generic over the result computing source coordinates in f32.
// Nearest with constant scales (N and C have scale 1: read directly),
// half_pixel and round_prefer_floor (ceil(x - 0.5)), clamped.
// CHECK-LABEL: func.func @resize_nearest
// CHECK: linalg.generic {{.*}} outs({{.*}} : tensor<1x1x4x4xf32>)
// CHECK: %[[N:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK: linalg.index 2 : index
// CHECK: arith.divf
// CHECK: math.ceil
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: linalg.index 3 : index
// CHECK: math.ceil
// CHECK: tensor.extract %arg0[%[[N]], %[[C]], %{{.*}}, %{{.*}}] : tensor<1x1x2x2xf32>
func.func @resize_nearest(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %none = kiln.none
  %c = kiln.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  %0 = kiln.resize %x, %none, %c, %none {mode = "nearest"} : (tensor<1x1x2x2xf32>, none, tensor<4xf32>, none) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// Linear with run-time scales and align_corners: the scale read from the
// tensor, length_resized = in * scale, floor and the clamped neighbour, four
// weighted corners.
// CHECK-LABEL: func.func @resize_linear
// CHECK: tensor.extract %arg1[%{{.*}}] : tensor<4xf32>
// CHECK: arith.cmpf oeq
// CHECK: math.floor
// CHECK-COUNT-4: tensor.extract %arg0
// CHECK-NOT: tensor.extract %arg0
func.func @resize_linear(%x: tensor<1x1x2x2xf32>, %s: tensor<4xf32>) -> tensor<1x1x4x4xf32> {
  %none = kiln.none
  %0 = kiln.resize %x, %none, %s, %none {mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x1x2x2xf32>, none, tensor<4xf32>, none) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// Cubic: four edge-clamped taps per resized axis (16 reads for two axes)
// with Keys' coefficients; exclude_outside zeroes the taps outside the input
// and renormalizes.
// CHECK-LABEL: func.func @resize_cubic
// CHECK: math.floor
// CHECK: arith.cmpi sge
// CHECK: arith.divf
// CHECK-COUNT-16: tensor.extract %arg0
// CHECK-NOT: tensor.extract %arg0
func.func @resize_cubic(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x8x8xf32> {
  %none = kiln.none
  %c = kiln.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  %0 = kiln.resize %x, %none, %c, %none {mode = "cubic", cubic_coeff_a = -5.0e-01 : f32, exclude_outside = 1 : i64} : (tensor<1x1x4x4xf32>, none, tensor<4xf32>, none) -> tensor<1x1x8x8xf32>
  return %0 : tensor<1x1x8x8xf32>
}

// -----

// tf_crop_and_resize: coordinates from the roi; outside the input the
// result is extrapolation_value.
// CHECK-LABEL: func.func @resize_crop
// CHECK: tensor.extract %arg1
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf ogt
// CHECK: arith.ori
// CHECK: %[[FILL:.*]] = arith.constant 1.000000e+01 : f32
// CHECK: arith.select %{{.*}}, %[[FILL]], %{{.*}} : f32
func.func @resize_crop(%x: tensor<1x1x4x4xf32>, %roi: tensor<8xf32>) -> tensor<1x1x3x3xf32> {
  %none = kiln.none
  %s = kiln.constant dense<[1, 1, 3, 3]> : tensor<4xi64>
  %0 = kiln.resize %x, %roi, %none, %s {coordinate_transformation_mode = "tf_crop_and_resize", extrapolation_value = 1.000000e+01 : f32, mode = "linear"} : (tensor<1x1x4x4xf32>, tensor<8xf32>, none, tensor<4xi64>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

// Einsum: a loop per label, the output's parallel; a repeated label is a
// diagonal; `...` covers the leading dims.
// CHECK-DAG: #[[$EA:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$EB:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[$EO:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[$ED:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2, d2)>
// CHECK-LABEL: func.func @einsum
// CHECK: linalg.generic {indexing_maps = [#[[$EA]], #[[$EB]], #[[$EO]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [#[[$ED]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg2 : tensor<3x5x7x7xf32>)
func.func @einsum(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %e: tensor<3x5x7x7xf32>) -> (tensor<2x3x5xf32>, tensor<3x5x7xf32>) {
  %0 = kiln.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %1 = kiln.einsum %e {equation = "...ii->...i"} : (tensor<3x5x7x7xf32>) -> tensor<3x5x7xf32>
  return %0, %1 : tensor<2x3x5xf32>, tensor<3x5x7xf32>
}

// -----

// Implicit output: the labels occurring once, in order ("ij,jk" is "ik").
// CHECK-LABEL: func.func @einsum_implicit
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs({{.*}} : tensor<3x6xf32>)
func.func @einsum_implicit(%c: tensor<3x4xf32>, %d: tensor<4x6xf32>) -> tensor<3x6xf32> {
  %0 = kiln.einsum %c, %d {equation = "ij,jk"} : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

// kiln.fused_matmul: B transposed (trans_b), the matmul, then one epilogue:
// alpha, bias, GELU (erf), residual after the activation.
// CHECK-LABEL: func.func @fused_matmul
// CHECK: %[[BT:.*]] = linalg.transpose ins(%arg1 : tensor<6x8xf32>) outs({{.*}} : tensor<8x6xf32>) permutation = [1, 0]
// CHECK: %[[A:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[A]], %[[BT]] :
// CHECK: %[[E:.*]] = tensor.expand_shape %[[P]]
// CHECK: linalg.generic {{.*}} ins(%[[E]], %arg2, %arg3 : tensor<2x4x6xf32>, tensor<6xf32>, tensor<2x4x6xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: math.erf
// CHECK: arith.addf
func.func @fused_matmul(%a: tensor<2x4x8xf32>, %b: tensor<6x8xf32>, %bias: tensor<6xf32>, %res: tensor<2x4x6xf32>) -> tensor<2x4x6xf32> {
  %0 = kiln.fused_matmul %a, %b, %bias, %res {activation = "gelu", trans_b = true, alpha = 2.0 : f32} : (tensor<2x4x8xf32>, tensor<6x8xf32>, tensor<6xf32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}

// -----

// kiln.fused_conv: the conv with the bias as accumulator, then residual
// before the ReLU.
// CHECK-LABEL: func.func @fused_conv
// CHECK: %[[C:.*]] = linalg.conv_2d_nchw_fchw
// CHECK: linalg.generic {{.*}} ins(%[[C]], %arg3 :
// CHECK: %[[S:.*]] = arith.addf
// CHECK: arith.maximumf %[[S]]
func.func @fused_conv(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>, %r: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %0 = kiln.fused_conv %x, %w, %b, %r {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// The hard_swish and relu6 epilogues: x * clamp(x / 6 + 1/2, 0, 1) and
// clamp(x, 0, 6).
// CHECK-LABEL: func.func @fused_conv_hard_swish_relu6
// CHECK: linalg.generic
// CHECK: ^bb0(%[[V:[^:]*]]: f32,
// CHECK-DAG: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[SIXTH:.*]] = arith.constant 0.16666{{[0-9]*}} : f32
// CHECK: %[[T:.*]] = arith.mulf %[[V]], %[[SIXTH]]
// CHECK: %[[U:.*]] = arith.addf %[[T]], %[[HALF]]
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[LO:.*]] = arith.maximumf %[[U]], %[[ZERO]]
// CHECK: %[[HI:.*]] = arith.minimumf %[[LO]], %[[ONE]]
// CHECK: arith.mulf %[[V]], %[[HI]]
// CHECK: linalg.generic
// CHECK: ^bb0(%[[W:[^:]*]]: f32,
// CHECK-DAG: %[[SIX:.*]] = arith.constant 6.000000e+00 : f32
// CHECK-DAG: %[[ZERO6:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[L6:.*]] = arith.maximumf %[[W]], %[[ZERO6]]
// CHECK: arith.minimumf %[[L6]], %[[SIX]]
func.func @fused_conv_hard_swish_relu6(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %none = kiln.none
  %0 = kiln.fused_conv %x, %w, %b, %none {activation = "hard_swish", pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>, none) -> tensor<1x4x6x6xf32>
  %1 = kiln.fused_conv %x, %w, %b, %none {activation = "relu6", pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>, none) -> tensor<1x4x6x6xf32>
  return %0, %1 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

// kiln.rms_norm on f16 with an f32 stash: the sum of squares in f32, then
// x * rsqrt(mean + eps) rounded to f16 before the scale.
// CHECK-LABEL: func.func @rms_norm
// CHECK: %[[SS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<1x3x16xf16>) outs({{.*}} : tensor<1x3xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[SS]], %arg1 :
// CHECK: arith.constant 1.600000e+01 : f32
// CHECK: math.rsqrt
// CHECK: arith.truncf
// CHECK: arith.extf
// CHECK: arith.mulf
// CHECK: arith.truncf
func.func @rms_norm(%x: tensor<1x3x16xf16>, %w: tensor<16xf16>) -> tensor<1x3x16xf16> {
  %0 = kiln.rms_norm %x, %w {axis = -1 : i64, epsilon = 1.0e-06 : f32, stash_type = 1 : i64} : (tensor<1x3x16xf16>, tensor<16xf16>) -> tensor<1x3x16xf16>
  return %0 : tensor<1x3x16xf16>
}

// -----

// Channels-last ops (kiln-optimize-layout): group-1 2-D conv_nhwc is
// linalg.conv_2d_nhwc_fhwc on the OHWI filter (bias broadcast along the
// last dim); the pools are the NHWC named pooling ops; the global pool
// reduces the spatial dims between N and C.
// CHECK-DAG: #[[$BL:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-LABEL: func.func @nhwc
// CHECK: %[[P:.*]] = tensor.pad %arg0 low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: %[[B:.*]] = linalg.generic {indexing_maps = [#[[$BL]], {{.*}}]} ins(%arg2 : tensor<8xf32>)
// CHECK: %[[C:.*]] = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[P]], %arg1 : tensor<1x14x14x3xf32>, tensor<8x3x3x3xf32>) outs(%[[B]] : tensor<1x6x6x8xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[C]], %arg3 :
// CHECK: arith.maximumf
// CHECK: %[[MP:.*]] = linalg.pooling_nhwc_max {{.*}} -> tensor<1x3x3x8xf32>
// CHECK: linalg.pooling_nhwc_sum
// CHECK: arith.divf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction", "parallel"]} ins({{.*}} : tensor<1x3x3x8xf32>) outs({{.*}} : tensor<1x8xf32>)
// CHECK: tensor.expand_shape {{.*}} : tensor<1x8xf32> into tensor<1x1x1x8xf32>
func.func @nhwc(%x: tensor<1x12x12x3xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>, %r: tensor<1x6x6x8xf32>) -> tensor<1x1x1x8xf32> {
  %0 = kiln.fused_conv_nhwc %x, %w, %b, %r {activation = "relu", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x12x12x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>, tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %1 = kiln.max_pool_nhwc %0 {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x6x6x8xf32>) -> tensor<1x3x3x8xf32>
  %2 = kiln.average_pool_nhwc %1 {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>} : (tensor<1x3x3x8xf32>) -> tensor<1x3x3x8xf32>
  %3 = kiln.global_average_pool_nhwc %2 : (tensor<1x3x3x8xf32>) -> tensor<1x1x1x8xf32>
  return %3 : tensor<1x1x1x8xf32>
}

// -----

// Grouped conv_nhwc: a generic over [N, oh, ow, G, M/G, C/G, kh, kw] on X as
// [N, H, W, G, C/G] and the OHWI filter as [G, M/G, kh, kw, C/G].
// CHECK-DAG: #[[$NX:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d6, d2 + d7, d3, d5)>
// CHECK-DAG: #[[$NW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d6, d7, d5)>
// CHECK-DAG: #[[$NO:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv_nhwc_grouped
// CHECK: tensor.expand_shape {{.*}} into tensor<1x5x5x2x2xf32>
// CHECK: tensor.expand_shape %arg1 {{.*}} into tensor<2x3x3x3x2xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$NX]], #[[$NW]], #[[$NO]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x3x3x6xf32>
func.func @conv_nhwc_grouped(%x: tensor<1x5x5x4xf32>, %w: tensor<6x3x3x2xf32>) -> tensor<1x3x3x6xf32> {
  %none = kiln.none
  %0 = kiln.conv_nhwc %x, %w, %none {group = 2 : i64} : (tensor<1x5x5x4xf32>, tensor<6x3x3x2xf32>, none) -> tensor<1x3x3x6xf32>
  return %0 : tensor<1x3x3x6xf32>
}

// -----

// kiln.attention, grouped-query (8 heads over 2 KV heads), causal, bshd:
// Q read as [B, Sq, Hkv, rep, D]; the scores generic reads K in place
// (KV heads never copied), then scale and the bottom-right causal mask,
// a max-shifted softmax along the keys, and P·V.
// CHECK-DAG: #[[$AQ:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1, d2, d5)>
// CHECK-DAG: #[[$AK:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d4, d1, d5)>
// CHECK-DAG: #[[$AV:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d5, d1, d4)>
// CHECK-LABEL: func.func @attention_gqa
// CHECK: %[[Q:.*]] = tensor.expand_shape %arg0 {{.*}} into tensor<2x6x2x4x16xf32>
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[$AQ]], #[[$AK]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[Q]], %arg1 : {{.*}}) outs({{.*}} : tensor<2x2x4x6x6xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<2x2x4x6x6xf32>)
// CHECK: arith.mulf
// CHECK: arith.constant -3.40282347E+38 : f32
// CHECK: linalg.index 3
// CHECK: linalg.index 4
// CHECK: arith.cmpi sle
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[$AV]], #[[$AQ2:.*]]], {{.*}} ins({{.*}}, %arg2 :
// CHECK: tensor.collapse_shape {{.*}} into tensor<2x6x8x16xf32>
func.func @attention_gqa(%q: tensor<2x6x8x16xf32>, %k: tensor<2x6x2x16xf32>, %v: tensor<2x6x2x16xf32>) -> tensor<2x6x8x16xf32> {
  %none = kiln.none
  %0 = kiln.attention %q, %k, %v, %none {causal = true, layout = "bshd", num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32} : (tensor<2x6x8x16xf32>, tensor<2x6x2x16xf32>, tensor<2x6x2x16xf32>, none) -> tensor<2x6x8x16xf32>
  return %0 : tensor<2x6x8x16xf32>
}

// -----

// An i1 mask [B, 1, 1, Skv] broadcasts over heads and queries and selects
// the lowest finite value where false.
// CHECK-DAG: #[[$MM:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, 0, d4)>
// CHECK-LABEL: func.func @attention_mask
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[$MM]], #{{.*}}]
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
func.func @attention_mask(%q: tensor<1x4x3x8xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x5x8xf32>, %m: tensor<1x1x1x5xi1>) -> tensor<1x4x3x8xf32> {
  %0 = kiln.attention %q, %k, %v, %m {num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.353553385 : f32} : (tensor<1x4x3x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x1x1x5xi1>) -> tensor<1x4x3x8xf32>
  return %0 : tensor<1x4x3x8xf32>
}

// -----

// kiln.rotary_embedding: the partner feature (i + D/2 in the first half,
// negated; i - D/2 in the second) read with tensor.extract.
// CHECK-LABEL: func.func @rotary
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1, %arg2 : tensor<1x2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: arith.cmpi slt
// CHECK: tensor.extract %arg0
// CHECK: arith.negf
// CHECK: arith.select
func.func @rotary(%x: tensor<1x2x4x8xf32>, %c: tensor<4x8xf32>, %s: tensor<4x8xf32>) -> tensor<1x2x4x8xf32> {
  %0 = kiln.rotary_embedding %x, %c, %s : (tensor<1x2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  return %0 : tensor<1x2x4x8xf32>
}
