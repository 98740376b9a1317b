// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s

// Declared result types are the inferred ones: a static dim that inference
// got wrong, or a `?` that it made static, fails verification (nn-invalid.mlir
// pins the value-dependent cases from the other side).

// CHECK-LABEL: func.func @matmul_batch_broadcast
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x1x4x8xf32>, tensor<3x8x16xf32>) -> tensor<?x3x4x16xf32>
func.func @matmul_batch_broadcast(%a: tensor<?x1x4x8xf32>, %b: tensor<3x8x16xf32>) -> tensor<?x3x4x16xf32> {
  %y = kiln.matmul %a, %b : (tensor<?x1x4x8xf32>, tensor<3x8x16xf32>) -> tensor<?x3x4x16xf32>
  return %y : tensor<?x3x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_vectors
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<2x8x5xf32>) -> tensor<2x5xf32>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x?xi32>, tensor<?x7xi32>) -> tensor<?x7xi32>
func.func @matmul_vectors(%m: tensor<4x8xf32>, %v: tensor<8xf32>, %b: tensor<2x8x5xf32>, %d: tensor<?x?xi32>, %e: tensor<?x7xi32>) -> (tensor<4xf32>, tensor<2x5xf32>, tensor<f32>, tensor<?x7xi32>) {
  %0 = kiln.matmul %m, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  %1 = kiln.matmul %v, %b : (tensor<8xf32>, tensor<2x8x5xf32>) -> tensor<2x5xf32>
  %2 = kiln.matmul %v, %v : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  %3 = kiln.matmul %d, %e : (tensor<?x?xi32>, tensor<?x7xi32>) -> tensor<?x7xi32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<2x5xf32>, tensor<f32>, tensor<?x7xi32>
}

// -----

// CHECK-LABEL: func.func @gemm
// CHECK: kiln.gemm %{{.*}} {transB = 1 : i64} : (tensor<?x256xf32>, tensor<10x256xf32>, tensor<10xf32>) -> tensor<?x10xf32>
// CHECK: kiln.gemm %{{.*}} {alpha = 2.000000e+00 : f32, transA = 1 : i64} : (tensor<256x3xf32>, tensor<256x10xf32>, none) -> tensor<3x10xf32>
// CHECK: kiln.gemm %{{.*}} : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
func.func @gemm(%a: tensor<?x256xf32>, %b: tensor<10x256xf32>, %c: tensor<10xf32>, %at: tensor<256x3xf32>, %bt: tensor<256x10xf32>, %p: tensor<3x4xf32>, %q: tensor<4x5xf32>, %col: tensor<3x1xf32>) -> (tensor<?x10xf32>, tensor<3x10xf32>, tensor<3x5xf32>) {
  %none = kiln.none
  %0 = kiln.gemm %a, %b, %c {transB = 1 : i64} : (tensor<?x256xf32>, tensor<10x256xf32>, tensor<10xf32>) -> tensor<?x10xf32>
  %1 = kiln.gemm %at, %bt, %none {alpha = 2.0 : f32, transA = 1 : i64} : (tensor<256x3xf32>, tensor<256x10xf32>, none) -> tensor<3x10xf32>
  %2 = kiln.gemm %p, %q, %col : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  return %0, %1, %2 : tensor<?x10xf32>, tensor<3x10xf32>, tensor<3x5xf32>
}

// -----

// CHECK-LABEL: func.func @einsum
// CHECK: kiln.einsum {{.*}} {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
// CHECK: kiln.einsum {{.*}} {equation = "ij,jk"} : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
// CHECK: kiln.einsum {{.*}} {equation = "...ii->...i"} : (tensor<?x5x7x7xf32>) -> tensor<?x5x7xf32>
// CHECK: kiln.einsum {{.*}} {equation = "ij->"} : (tensor<3x4xf32>) -> tensor<f32>
func.func @einsum(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %c: tensor<3x4xf32>, %d: tensor<4x6xf32>, %e: tensor<?x5x7x7xf32>) -> (tensor<2x3x5xf32>, tensor<3x6xf32>, tensor<?x5x7xf32>, tensor<f32>) {
  %0 = kiln.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %1 = kiln.einsum %c, %d {equation = "ij,jk"} : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  %2 = kiln.einsum %e {equation = "...ii->...i"} : (tensor<?x5x7x7xf32>) -> tensor<?x5x7xf32>
  %3 = kiln.einsum %c {equation = "ij->"} : (tensor<3x4xf32>) -> tensor<f32>
  return %0, %1, %2, %3 : tensor<2x3x5xf32>, tensor<3x6xf32>, tensor<?x5x7xf32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @conv_strided_padded
// CHECK: kiln.conv {{.*}} -> tensor<?x64x112x112xf32>
func.func @conv_strided_padded(%x: tensor<?x3x224x224xf32>, %w: tensor<64x3x3x3xf32>, %b: tensor<64xf32>) -> tensor<?x64x112x112xf32> {
  %y = kiln.conv %x, %w, %b {auto_pad = "NOTSET", group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x3x224x224xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>) -> tensor<?x64x112x112xf32>
  return %y : tensor<?x64x112x112xf32>
}

// -----

// Defaults: kernel from W, strides/dilations 1, no padding.
// CHECK-LABEL: func.func @conv_defaults_1d
// CHECK: kiln.conv {{.*}} : (tensor<2x4x10xf32>, tensor<8x4x3xf32>, none) -> tensor<2x8x8xf32>
func.func @conv_defaults_1d(%x: tensor<2x4x10xf32>, %w: tensor<8x4x3xf32>) -> tensor<2x8x8xf32> {
  %none = kiln.none
  %y = kiln.conv %x, %w, %none : (tensor<2x4x10xf32>, tensor<8x4x3xf32>, none) -> tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}

// -----

// SAME_UPPER: ceil(in / stride) = ceil(15 / 2) = 8; VALID with dilation 2:
// the kernel spans 5, floor((15 - 5) / 2) + 1 = 6.
// CHECK-LABEL: func.func @conv_auto_pad
// CHECK: kiln.conv {{.*}}auto_pad = "SAME_UPPER"{{.*}} -> tensor<1x4x8x8xf32>
// CHECK: kiln.conv {{.*}}auto_pad = "SAME_LOWER"{{.*}} -> tensor<1x4x15x15xf32>
// CHECK: kiln.conv {{.*}}auto_pad = "VALID"{{.*}} -> tensor<1x4x6x6xf32>
func.func @conv_auto_pad(%x: tensor<1x3x15x15xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x15x15xf32>, tensor<1x4x6x6xf32>) {
  %none = kiln.none
  %0 = kiln.conv %x, %w, %none {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<1x3x15x15xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  %1 = kiln.conv %x, %w, %none {auto_pad = "SAME_LOWER"} : (tensor<1x3x15x15xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x15x15xf32>
  %2 = kiln.conv %x, %w, %none {auto_pad = "VALID", dilations = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x15x15xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return %0, %1, %2 : tensor<1x4x8x8xf32>, tensor<1x4x15x15xf32>, tensor<1x4x6x6xf32>
}

// -----

// Grouped and depthwise convolutions: C == W.dim1 * group.
// CHECK-LABEL: func.func @conv_groups
// CHECK: kiln.conv {{.*}}group = 4 : i64{{.*}} -> tensor<1x8x6x6xf32>
// CHECK: kiln.conv {{.*}}group = 32 : i64{{.*}} -> tensor<?x32x?x8xf32>
func.func @conv_groups(%x: tensor<1x8x8x8xf32>, %w: tensor<8x2x3x3xf32>, %dx: tensor<?x32x?x8xf32>, %dw: tensor<32x1x3x3xf32>) -> (tensor<1x8x6x6xf32>, tensor<?x32x?x8xf32>) {
  %none = kiln.none
  %0 = kiln.conv %x, %w, %none {group = 4 : i64, kernel_shape = array<i64: 3, 3>} : (tensor<1x8x8x8xf32>, tensor<8x2x3x3xf32>, none) -> tensor<1x8x6x6xf32>
  %1 = kiln.conv %dx, %dw, %none {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x32x?x8xf32>, tensor<32x1x3x3xf32>, none) -> tensor<?x32x?x8xf32>
  return %0, %1 : tensor<1x8x6x6xf32>, tensor<?x32x?x8xf32>
}

// -----

// CHECK-LABEL: func.func @conv_transpose
// CHECK: kiln.conv_transpose {{.*}} -> tensor<1x4x10x10xf32>
// CHECK: kiln.conv_transpose {{.*}} -> tensor<1x6x10x10xf32>
// CHECK: kiln.conv_transpose {{.*}} -> tensor<1x4x7x7xf32>
// CHECK: kiln.conv_transpose {{.*}} -> tensor<?x4x?x7xf32>
func.func @conv_transpose(%x: tensor<1x8x5x5xf32>, %w: tensor<8x4x3x3xf32>, %wg: tensor<8x3x3x3xf32>, %b: tensor<4xf32>, %dx: tensor<?x8x?x5xf32>) -> (tensor<1x4x10x10xf32>, tensor<1x6x10x10xf32>, tensor<1x4x7x7xf32>, tensor<?x4x?x7xf32>) {
  %none = kiln.none
  // 2 * (5 - 1) + 1 + 3 - 2 = 10
  %0 = kiln.conv_transpose %x, %w, %b {output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x5x5xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x10x10xf32>
  // SAME_UPPER: 5 * 2; channels W.dim1 * group = 3 * 2.
  %1 = kiln.conv_transpose %x, %wg, %none {auto_pad = "SAME_UPPER", group = 2 : i64, strides = array<i64: 2, 2>} : (tensor<1x8x5x5xf32>, tensor<8x3x3x3xf32>, none) -> tensor<1x6x10x10xf32>
  %2 = kiln.conv_transpose %x, %w, %none : (tensor<1x8x5x5xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x4x7x7xf32>
  %3 = kiln.conv_transpose %dx, %w, %none : (tensor<?x8x?x5xf32>, tensor<8x4x3x3xf32>, none) -> tensor<?x4x?x7xf32>
  return %0, %1, %2, %3 : tensor<1x4x10x10xf32>, tensor<1x6x10x10xf32>, tensor<1x4x7x7xf32>, tensor<?x4x?x7xf32>
}

// -----

// CHECK-LABEL: func.func @conv_transpose_output_shape
// CHECK: kiln.conv_transpose {{.*}}output_shape = array<i64: 11, 12>{{.*}} -> tensor<1x4x11x12xf32>
func.func @conv_transpose_output_shape(%x: tensor<1x8x5x5xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x4x11x12xf32> {
  %none = kiln.none
  %0 = kiln.conv_transpose %x, %w, %none {output_shape = array<i64: 11, 12>, strides = array<i64: 2, 2>} : (tensor<1x8x5x5xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x4x11x12xf32>
  return %0 : tensor<1x4x11x12xf32>
}

// -----

// floor((112 + 2 - 3) / 2) + 1 = 56; ceil_mode: ceil((7 - 2) / 2) + 1 = 4
// (floor gives 3); ceil_mode drops a window that would start in the end
// padding: in 6, pad_end 1, k 2, s 2 gives 3, not 4.
// CHECK-LABEL: func.func @max_pool
// CHECK: kiln.max_pool {{.*}} -> (tensor<?x64x56x56xf32>, tensor<?x64x56x56xi64>)
// CHECK: kiln.max_pool {{.*}}ceil_mode = 1 : i64{{.*}} -> (tensor<1x2x4x3xf32>, tensor<1x2x4x3xi64>)
// CHECK: kiln.max_pool {{.*}}ceil_mode = 1 : i64{{.*}} -> (tensor<1x2x3xf32>, tensor<1x2x3xi64>)
func.func @max_pool(%x: tensor<?x64x112x112xf32>, %s: tensor<1x2x7x7xf32>, %t: tensor<1x2x6xf32>) -> (tensor<?x64x56x56xf32>, tensor<?x64x56x56xi64>, tensor<1x2x4x3xf32>, tensor<1x2x3xf32>) {
  %y, %i = kiln.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x64x112x112xf32>) -> (tensor<?x64x56x56xf32>, tensor<?x64x56x56xi64>)
  %y2, %i2 = kiln.max_pool %s {ceil_mode = 1 : i64, kernel_shape = array<i64: 2, 3>, strides = array<i64: 2, 2>} : (tensor<1x2x7x7xf32>) -> (tensor<1x2x4x3xf32>, tensor<1x2x4x3xi64>)
  %y3, %i3 = kiln.max_pool %t {ceil_mode = 1 : i64, kernel_shape = array<i64: 2>, pads = array<i64: 0, 1>, strides = array<i64: 2>} : (tensor<1x2x6xf32>) -> (tensor<1x2x3xf32>, tensor<1x2x3xi64>)
  return %y, %i, %y2, %y3 : tensor<?x64x56x56xf32>, tensor<?x64x56x56xi64>, tensor<1x2x4x3xf32>, tensor<1x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @average_and_lp_pool
// CHECK: kiln.average_pool {{.*}} -> tensor<?x16x4x4xf32>
// CHECK: kiln.average_pool {{.*}}auto_pad = "SAME_UPPER"{{.*}} -> tensor<?x16x3x3xf32>
// CHECK: kiln.average_pool {{.*}}dilations = array<i64: 2, 2>{{.*}} -> tensor<?x16x4x4xf32>
// CHECK: kiln.lp_pool {{.*}} -> tensor<1x4x8xf32>
func.func @average_and_lp_pool(%x: tensor<?x16x8x8xf32>, %v: tensor<1x4x10xf32>) -> (tensor<?x16x4x4xf32>, tensor<?x16x3x3xf32>, tensor<?x16x4x4xf32>, tensor<1x4x8xf32>) {
  %0 = kiln.average_pool %x {count_include_pad = 0 : i64, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  %1 = kiln.average_pool %x {auto_pad = "SAME_UPPER", kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>} : (tensor<?x16x8x8xf32>) -> tensor<?x16x3x3xf32>
  %2 = kiln.average_pool %x {ceil_mode = 1 : i64, dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  %3 = kiln.lp_pool %v {kernel_shape = array<i64: 3>, p = 2 : i64} : (tensor<1x4x10xf32>) -> tensor<1x4x8xf32>
  return %0, %1, %2, %3 : tensor<?x16x4x4xf32>, tensor<?x16x3x3xf32>, tensor<?x16x4x4xf32>, tensor<1x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @global_pools
// CHECK: kiln.global_average_pool {{.*}} -> tensor<?x512x1x1xf32>
// CHECK: kiln.global_max_pool {{.*}} -> tensor<1x8x1x1x1xf32>
// CHECK: kiln.global_lp_pool {{.*}} -> tensor<?x512x1x1xf32>
func.func @global_pools(%x: tensor<?x512x7x?xf32>, %v: tensor<1x8x5x5x5xf32>) -> (tensor<?x512x1x1xf32>, tensor<1x8x1x1x1xf32>, tensor<?x512x1x1xf32>) {
  %0 = kiln.global_average_pool %x : (tensor<?x512x7x?xf32>) -> tensor<?x512x1x1xf32>
  %1 = kiln.global_max_pool %v : (tensor<1x8x5x5x5xf32>) -> tensor<1x8x1x1x1xf32>
  %2 = kiln.global_lp_pool %x {p = 3 : i64} : (tensor<?x512x7x?xf32>) -> tensor<?x512x1x1xf32>
  return %0, %1, %2 : tensor<?x512x1x1xf32>, tensor<1x8x1x1x1xf32>, tensor<?x512x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @normalizations
// CHECK: kiln.batch_normalization {{.*}} -> tensor<?x64x56x56xf32>
// CHECK: kiln.instance_normalization {{.*}} -> tensor<?x64x56x56xf32>
// CHECK: kiln.group_normalization {{.*}}num_groups = 4 : i64{{.*}} -> tensor<?x64x56x56xf32>
// CHECK: kiln.lp_normalization {{.*}} -> tensor<?x64x56x56xf32>
// CHECK: kiln.lrn {{.*}}size = 5 : i64{{.*}} -> tensor<?x64x56x56xf32>
// CHECK: kiln.mean_variance_normalization {{.*}} -> tensor<?x64x56x56xf32>
// CHECK: kiln.mean_variance_normalization {{.*}}axes = array<i64: 1, -1>{{.*}} -> tensor<?x64x56x56xf32>
func.func @normalizations(%x: tensor<?x64x56x56xf32>, %c: tensor<64xf32>) -> (tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>) {
  %0 = kiln.batch_normalization %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training_mode = 0 : i64} : (tensor<?x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64x56x56xf32>
  %1 = kiln.instance_normalization %x, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<?x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64x56x56xf32>
  %2 = kiln.group_normalization %x, %c, %c {num_groups = 4 : i64} : (tensor<?x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64x56x56xf32>
  %3 = kiln.lp_normalization %x {axis = 1 : i64, p = 1 : i64} : (tensor<?x64x56x56xf32>) -> tensor<?x64x56x56xf32>
  %4 = kiln.lrn %x {size = 5 : i64} : (tensor<?x64x56x56xf32>) -> tensor<?x64x56x56xf32>
  %5 = kiln.mean_variance_normalization %x : (tensor<?x64x56x56xf32>) -> tensor<?x64x56x56xf32>
  %6 = kiln.mean_variance_normalization %x {axes = array<i64: 1, -1>} : (tensor<?x64x56x56xf32>) -> tensor<?x64x56x56xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>, tensor<?x64x56x56xf32>
}

// -----

// CHECK-LABEL: func.func @layer_normalization
// CHECK: kiln.layer_normalization {{.*}} -> (tensor<?x128x768xf16>, tensor<?x128x1xf32>, tensor<?x128x1xf32>)
// CHECK: kiln.layer_normalization {{.*}}axis = 1 : i64, stash_type = 11 : i64{{.*}} -> (tensor<?x128x768xf16>, tensor<?x1x1xf64>, tensor<?x1x1xf64>)
func.func @layer_normalization(%x: tensor<?x128x768xf16>, %s: tensor<768xf16>, %s2: tensor<128x768xf16>) -> (tensor<?x128x1xf32>, tensor<?x1x1xf64>) {
  %none = kiln.none
  %y, %mean, %inv = kiln.layer_normalization %x, %s, %s {axis = -1 : i64, epsilon = 1.0e-05 : f32, stash_type = 1 : i64} : (tensor<?x128x768xf16>, tensor<768xf16>, tensor<768xf16>) -> (tensor<?x128x768xf16>, tensor<?x128x1xf32>, tensor<?x128x1xf32>)
  %y2, %mean2, %inv2 = kiln.layer_normalization %x, %s2, %none {axis = 1 : i64, stash_type = 11 : i64} : (tensor<?x128x768xf16>, tensor<128x768xf16>, none) -> (tensor<?x128x768xf16>, tensor<?x1x1xf64>, tensor<?x1x1xf64>)
  return %mean, %mean2 : tensor<?x128x1xf32>, tensor<?x1x1xf64>
}

// -----

// CHECK-LABEL: func.func @softmaxes
// CHECK: kiln.softmax {{.*}} -> tensor<?x12x128x128xf32>
// CHECK: kiln.log_softmax {{.*}}axis = 1 : i64{{.*}} -> tensor<?x12x128x128xf32>
// CHECK: kiln.hardmax {{.*}}axis = -4 : i64{{.*}} -> tensor<?x12x128x128xf32>
func.func @softmaxes(%x: tensor<?x12x128x128xf32>) -> (tensor<?x12x128x128xf32>, tensor<?x12x128x128xf32>, tensor<?x12x128x128xf32>) {
  %0 = kiln.softmax %x {axis = -1 : i64} : (tensor<?x12x128x128xf32>) -> tensor<?x12x128x128xf32>
  %1 = kiln.log_softmax %x {axis = 1 : i64} : (tensor<?x12x128x128xf32>) -> tensor<?x12x128x128xf32>
  %2 = kiln.hardmax %x {axis = -4 : i64} : (tensor<?x12x128x128xf32>) -> tensor<?x12x128x128xf32>
  return %0, %1, %2 : tensor<?x12x128x128xf32>, tensor<?x12x128x128xf32>, tensor<?x12x128x128xf32>
}

// -----

// CHECK-LABEL: func.func @dropout
// CHECK: kiln.dropout {{.*}} : (tensor<?x768xf32>, none, none) -> (tensor<?x768xf32>, tensor<?x768xi1>)
// CHECK: kiln.dropout {{.*}}seed = 7 : i64{{.*}} : (tensor<?x768xf32>, tensor<f32>, tensor<i1>) -> (tensor<?x768xf32>, tensor<?x768xi1>)
func.func @dropout(%x: tensor<?x768xf32>) -> (tensor<?x768xf32>, tensor<?x768xi1>, tensor<?x768xf32>) {
  %none = kiln.none
  %ratio = kiln.constant dense<0.1> : tensor<f32>
  %false = kiln.constant dense<false> : tensor<i1>
  %y, %mask = kiln.dropout %x, %none, %none : (tensor<?x768xf32>, none, none) -> (tensor<?x768xf32>, tensor<?x768xi1>)
  %y2, %mask2 = kiln.dropout %x, %ratio, %false {seed = 7 : i64} : (tensor<?x768xf32>, tensor<f32>, tensor<i1>) -> (tensor<?x768xf32>, tensor<?x768xi1>)
  return %y, %mask, %y2 : tensor<?x768xf32>, tensor<?x768xi1>, tensor<?x768xf32>
}

// -----

// Known pads (negative ones crop), pads over some axes, a `?` input dim.
// CHECK-LABEL: func.func @pad_constant_operands
// CHECK: kiln.pad {{.*}}mode = "reflect"{{.*}} -> tensor<1x3x10x10xf32>
// CHECK: kiln.pad {{.*}} : (tensor<?x3x8x8xf32>, tensor<4xi64>, tensor<f32>, tensor<2xi64>) -> tensor<?x5x8x7xf32>
// CHECK: kiln.pad {{.*}} : (tensor<?x3x8x8xf32>, tensor<4xi64>, none, tensor<2xi32>) -> tensor<?x3x8x7xf32>
func.func @pad_constant_operands(%x: tensor<1x3x8x8xf32>, %d: tensor<?x3x8x8xf32>) -> (tensor<1x3x10x10xf32>, tensor<?x5x8x7xf32>, tensor<?x3x8x7xf32>) {
  %none = kiln.none
  %pads = kiln.constant dense<[0, 0, 1, 1, 0, 0, 1, 1]> : tensor<8xi64>
  %0 = kiln.pad %x, %pads, %none, %none {mode = "reflect"} : (tensor<1x3x8x8xf32>, tensor<8xi64>, none, none) -> tensor<1x3x10x10xf32>
  %p2 = kiln.constant dense<[1, 0, 1, -1]> : tensor<4xi64>
  %axes = kiln.constant dense<[1, -1]> : tensor<2xi64>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %1 = kiln.pad %d, %p2, %zero, %axes : (tensor<?x3x8x8xf32>, tensor<4xi64>, tensor<f32>, tensor<2xi64>) -> tensor<?x5x8x7xf32>
  %axes32 = kiln.constant dense<[0, 3]> : tensor<2xi32>
  %2 = kiln.pad %d, %p2, %none, %axes32 {mode = "edge"} : (tensor<?x3x8x8xf32>, tensor<4xi64>, none, tensor<2xi32>) -> tensor<?x3x8x7xf32>
  return %0, %1, %2 : tensor<1x3x10x10xf32>, tensor<?x5x8x7xf32>, tensor<?x3x8x7xf32>
}

// -----

// Unknown pads: the padded dims are `?`; unknown axes: every dim is.
// CHECK-LABEL: func.func @pad_unknown_operands
// CHECK: kiln.pad {{.*}} : (tensor<1x3x8x8xf32>, tensor<8xi64>, none, none) -> tensor<?x?x?x?xf32>
// CHECK: kiln.pad {{.*}} : (tensor<1x3x8x8xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<?x?x?x?xf32>
// CHECK: kiln.pad {{.*}} : (tensor<1x3x8x8xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<1x?x8x8xf32>
func.func @pad_unknown_operands(%x: tensor<1x3x8x8xf32>, %pads: tensor<8xi64>, %p2: tensor<2xi64>, %axes: tensor<1xi64>) -> (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<1x?x8x8xf32>) {
  %none = kiln.none
  %0 = kiln.pad %x, %pads, %none, %none : (tensor<1x3x8x8xf32>, tensor<8xi64>, none, none) -> tensor<?x?x?x?xf32>
  %1 = kiln.pad %x, %p2, %none, %axes : (tensor<1x3x8x8xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<?x?x?x?xf32>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %2 = kiln.pad %x, %p2, %none, %one : (tensor<1x3x8x8xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<1x?x8x8xf32>
  return %0, %1, %2 : tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<1x?x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @resize_constant_operands
// CHECK: kiln.resize {{.*}} : (tensor<1x3x8x8xf32>, none, tensor<4xf32>, none) -> tensor<1x3x16x16xf32>
// CHECK: kiln.resize {{.*}} : (tensor<1x3x8x?xf32>, none, tensor<4xf32>, none) -> tensor<1x3x4x?xf32>
// CHECK: kiln.resize {{.*}} : (tensor<1x3x8x8xf32>, none, none, tensor<4xi64>) -> tensor<1x3x5x7xf32>
// CHECK: kiln.resize {{.*}}axes = array<i64: 2, 3>{{.*}}keep_aspect_ratio_policy = "not_larger"{{.*}} -> tensor<1x3x5x5xf32>
// CHECK: kiln.resize {{.*}} : (tensor<1x3x8x8xf32>, tensor<0xf32>, tensor<0xf32>, tensor<2xi64>) -> tensor<1x3x9x9xf32>
func.func @resize_constant_operands(%x: tensor<1x3x8x8xf32>, %d: tensor<1x3x8x?xf32>) -> (tensor<1x3x16x16xf32>, tensor<1x3x4x?xf32>, tensor<1x3x5x7xf32>, tensor<1x3x5x5xf32>, tensor<1x3x9x9xf32>) {
  %none = kiln.none
  %up = kiln.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  %0 = kiln.resize %x, %none, %up, %none {mode = "nearest"} : (tensor<1x3x8x8xf32>, none, tensor<4xf32>, none) -> tensor<1x3x16x16xf32>
  // floor(8 * 0.6) = 4
  %down = kiln.constant dense<[1.0, 1.0, 0.6, 0.6]> : tensor<4xf32>
  %1 = kiln.resize %d, %none, %down, %none {mode = "linear"} : (tensor<1x3x8x?xf32>, none, tensor<4xf32>, none) -> tensor<1x3x4x?xf32>
  %sizes = kiln.constant dense<[1, 3, 5, 7]> : tensor<4xi64>
  %2 = kiln.resize %x, %none, %none, %sizes : (tensor<1x3x8x8xf32>, none, none, tensor<4xi64>) -> tensor<1x3x5x7xf32>
  // not_larger: scale = min(5/8, 7/8), round(8 * 5/8) = 5 for both axes.
  %s2 = kiln.constant dense<[5, 7]> : tensor<2xi64>
  %3 = kiln.resize %x, %none, %none, %s2 {axes = array<i64: 2, 3>, keep_aspect_ratio_policy = "not_larger"} : (tensor<1x3x8x8xf32>, none, none, tensor<2xi64>) -> tensor<1x3x5x5xf32>
  // Empty roi and scales placeholders, as opset-11 exporters write them.
  %empty = kiln.constant dense<> : tensor<0xf32>
  %s3 = kiln.constant dense<[9, 9]> : tensor<2xi64>
  %4 = kiln.resize %x, %empty, %empty, %s3 {axes = array<i64: -2, -1>} : (tensor<1x3x8x8xf32>, tensor<0xf32>, tensor<0xf32>, tensor<2xi64>) -> tensor<1x3x9x9xf32>
  return %0, %1, %2, %3, %4 : tensor<1x3x16x16xf32>, tensor<1x3x4x?xf32>, tensor<1x3x5x7xf32>, tensor<1x3x5x5xf32>, tensor<1x3x9x9xf32>
}

// -----

// CHECK-LABEL: func.func @resize_unknown_operands
// CHECK: kiln.resize {{.*}} : (tensor<1x3x8x8xf32>, none, tensor<4xf32>, none) -> tensor<?x?x?x?xf32>
// CHECK: kiln.resize {{.*}} : (tensor<1x3x8x8xf32>, none, none, tensor<2xi64>) -> tensor<1x3x?x?xf32>
func.func @resize_unknown_operands(%x: tensor<1x3x8x8xf32>, %scales: tensor<4xf32>, %sizes: tensor<2xi64>) -> (tensor<?x?x?x?xf32>, tensor<1x3x?x?xf32>) {
  %none = kiln.none
  %0 = kiln.resize %x, %none, %scales, %none : (tensor<1x3x8x8xf32>, none, tensor<4xf32>, none) -> tensor<?x?x?x?xf32>
  %1 = kiln.resize %x, %none, %none, %sizes {axes = array<i64: 2, 3>} : (tensor<1x3x8x8xf32>, none, none, tensor<2xi64>) -> tensor<1x3x?x?xf32>
  return %0, %1 : tensor<?x?x?x?xf32>, tensor<1x3x?x?xf32>
}
