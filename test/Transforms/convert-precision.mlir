// RUN: kiln-opt %s -split-input-file -kiln-convert-precision | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-convert-precision=precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: kiln-opt %s -split-input-file -kiln-convert-precision -kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// kiln-convert-precision: float32 computation and weights in fp16 (bf16),
// softmax, normalizations, accumulating reductions and residual adds kept in
// float32, casts at the boundaries, inputs and outputs keeping their types.

// An MLP layer: the input is cast once, the weight and bias are converted
// at compile time (no cast on them), matmul/add/relu compute in f16, the
// residual add (two activations of the result's shape) and the softmax stay
// in f32, and one cast goes back before them. The output keeps f32.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-DAG: %[[XH:.+]] = kiln.cast %[[X]] {to = f16} : (tensor<2x4xf32>) -> tensor<2x4xf16>
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]{{.*}}> : tensor<4x4xf16>
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<[5.000000e-01, 2.500000e-01, 1.250000e-01, 1.000000e+00]> : tensor<4xf16>
// CHECK: %[[M:.+]] = kiln.matmul %[[XH]], %[[W]] : (tensor<2x4xf16>, tensor<4x4xf16>) -> tensor<2x4xf16>
// CHECK: %[[A:.+]] = kiln.add %[[M]], %[[B]] : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
// CHECK: %[[R:.+]] = kiln.relu %[[A]] : tensor<2x4xf16>
// CHECK: %[[RF:.+]] = kiln.cast %[[R]] {to = f32} : (tensor<2x4xf16>) -> tensor<2x4xf32>
// CHECK: %[[S:.+]] = kiln.add %[[RF]], %[[X]] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[SM:.+]] = kiln.softmax %[[S]] : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: return %[[SM]] : tensor<2x4xf32>
// CHECK-NOT: f32>
// BF16-LABEL: func.func @mlp
// BF16: kiln.cast %{{.*}} {to = bf16} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// BF16: kiln.matmul %{{.*}} : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
// BF16: kiln.relu %{{.*}} : tensor<2x4xbf16>
// BF16: kiln.softmax %{{.*}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
func.func @mlp(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]> : tensor<4x4xf32>
  %b = kiln.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %m = kiln.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %a = kiln.add %m, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = kiln.relu %a : tensor<2x4xf32>
  %s = kiln.add %r, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %sm = kiln.softmax %s : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %sm : tensor<2x4xf32>
}

// -----

// A normalization and a reduction between half ops stay f32 (one cast in,
// one cast out each); ReduceMax does not accumulate and converts. A
// broadcast mask add (operand shapes differ) is not a residual add.
// CHECK-LABEL: func.func @norms_and_reductions
// CHECK: kiln.matmul {{.*}} -> tensor<2x4xf16>
// CHECK: %[[MF:.+]] = kiln.cast %{{.*}} {to = f32} : (tensor<2x4xf16>) -> tensor<2x4xf32>
// CHECK: kiln.layer_normalization %[[MF]]{{.*}} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>,
// CHECK: kiln.rms_norm %[[MF]]{{.*}} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: kiln.reduce_sum %[[MF]]{{.*}} -> tensor<2x1xf32>
// CHECK: kiln.reduce_max %{{.*}} : (tensor<2x4xf16>, tensor<1xi64>) -> tensor<2x1xf16>
// CHECK: kiln.add %{{.*}} : (tensor<2x4xf16>, tensor<1x4xf16>) -> tensor<2x4xf16>
func.func @norms_and_reductions(%x: tensor<2x4xf32>, %mask: tensor<1x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>) {
  %w = kiln.constant dense<1.0> : tensor<4x4xf32>
  %g = kiln.constant dense<1.0> : tensor<4xf32>
  %bb = kiln.constant dense<0.0> : tensor<4xf32>
  %axes = kiln.constant dense<1> : tensor<1xi64>
  %m = kiln.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %ln:3 = kiln.layer_normalization %m, %g, %bb {axis = -1 : i64, epsilon = 1.0e-05 : f32, stash_type = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %rms = kiln.rms_norm %m, %g {epsilon = 1.0e-06 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %sum = kiln.reduce_sum %m, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %max = kiln.reduce_max %m, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %masked = kiln.add %m, %mask : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  return %ln#0, %rms, %sum, %max, %masked : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>
}

// -----

// Ops without float results read the half value itself (no cast back) when
// their verifier accepts it: Shape, a cast to i64, a comparison with a
// constant the half type holds exactly (0). A comparison with 0.1 (not
// exact in f16) reads the f32 value, through the one shared cast back. A
// cast to f32 in the model reads the half value too, and the model's own
// cast down to f16 of it folds away.
// CHECK-LABEL: func.func @type_agnostic_users
// CHECK: %[[M:.+]] = kiln.matmul {{.*}} -> tensor<2x4xf16>
// CHECK-NEXT: %[[MF:.+]] = kiln.cast %[[M]] {to = f32} : (tensor<2x4xf16>) -> tensor<2x4xf32>
// CHECK-NEXT: kiln.shape %[[M]] : (tensor<2x4xf16>) -> tensor<2xi64>
// CHECK-NEXT: kiln.greater %[[M]], %{{.*}} : (tensor<2x4xf16>, tensor<f16>) -> tensor<2x4xi1>
// CHECK-NEXT: kiln.less %[[MF]], %{{.*}} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xi1>
// CHECK-NEXT: kiln.cast %[[M]] {to = i64} : (tensor<2x4xf16>) -> tensor<2x4xi64>
// CHECK-NEXT: %[[UP:.+]] = kiln.cast %[[M]] {to = f32} : (tensor<2x4xf16>) -> tensor<2x4xf32>
// CHECK-NOT: kiln.cast {{.*}} {to = f16}
// CHECK: return {{.*}}, %[[UP]], %[[M]] :
func.func @type_agnostic_users(%x: tensor<2x4xf32>) -> (tensor<2xi64>, tensor<2x4xi1>, tensor<2x4xi1>, tensor<2x4xi64>, tensor<2x4xf32>, tensor<2x4xf16>) {
  %w = kiln.constant dense<1.0> : tensor<4x4xf32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %tenth = kiln.constant dense<0.1> : tensor<f32>
  %m = kiln.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = kiln.shape %m : (tensor<2x4xf32>) -> tensor<2xi64>
  %g = kiln.greater %m, %zero : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xi1>
  %l = kiln.less %m, %tenth : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xi1>
  %i = kiln.cast %m {to = i64} : (tensor<2x4xf32>) -> tensor<2x4xi64>
  %f = kiln.cast %m {to = f32} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %h = kiln.cast %m {to = f16} : (tensor<2x4xf32>) -> tensor<2x4xf16>
  return %s, %g, %l, %i, %f, %h : tensor<2xi64>, tensor<2x4xi1>, tensor<2x4xi1>, tensor<2x4xi64>, tensor<2x4xf32>, tensor<2x4xf16>
}

// -----

// Cast pairs: a model that already casts f16 -> f32 in front of a converted
// op gives that op the f16 value (the pair is cancelled, no cast left back
// to back); an f32 -> f16 -> f32 round trip rounds, and is kept.
// CHECK-LABEL: func.func @cast_pairs
// CHECK-SAME: (%[[H:.+]]: tensor<2x4xf16>, %[[X:.+]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[R:.+]] = kiln.relu %[[H]] : tensor<2x4xf16>
// CHECK-NEXT: %[[RF:.+]] = kiln.cast %[[R]] {to = f32}
// CHECK-NEXT: %[[XH:.+]] = kiln.cast %[[X]] {to = f16}
// CHECK-NEXT: %[[XF:.+]] = kiln.cast %[[XH]] {to = f32}
// CHECK-NEXT: kiln.softmax %[[XF]]
func.func @cast_pairs(%h: tensor<2x4xf16>, %x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %up = kiln.cast %h {to = f32} : (tensor<2x4xf16>) -> tensor<2x4xf32>
  %r = kiln.relu %up : tensor<2x4xf32>
  %down = kiln.cast %x {to = f16} : (tensor<2x4xf32>) -> tensor<2x4xf16>
  %back = kiln.cast %down {to = f32} : (tensor<2x4xf16>) -> tensor<2x4xf32>
  %sm = kiln.softmax %back : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r, %sm : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A converted constant shared by two ops is converted once; a constant beyond
// the fp16 range becomes an infinity (counted in constants-overflowed), as a
// Cast at run time would give. A kept op reads the original f32 constant.
// CHECK-LABEL: func.func @constants
// CHECK-DAG: %[[C32:.+]] = kiln.constant dense<[1.000000e+00, 7.000000e+04]> : tensor<2xf32>
// CHECK-DAG: %[[C16:.+]] = kiln.constant dense<[1.000000e+00, 0x7C00]> : tensor<2xf16>
// CHECK: kiln.mul %{{.*}}, %[[C16]] : (tensor<2xf16>, tensor<2xf16>)
// CHECK: kiln.sub %{{.*}}, %[[C16]] : (tensor<2xf16>, tensor<2xf16>)
// CHECK: kiln.softmax %[[C32]]
// The statistics are the totals over this file's functions.
// STATS-LABEL: kiln-convert-precision
// STATS-DAG: (ops-converted) 11 :
// STATS-DAG: (ops-kept) 9 :
// STATS-DAG: (constants-converted) 8 :
// STATS-DAG: (constants-overflowed) 1 :
// STATS-DAG: (cast-pairs-removed) 1 :
func.func @constants(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %c = kiln.constant dense<[1.0, 70000.0]> : tensor<2xf32>
  %a = kiln.mul %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %b = kiln.sub %a, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %s = kiln.softmax %c : (tensor<2xf32>) -> tensor<2xf32>
  return %a, %b, %s : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Fused ops: kiln.attention holds a softmax and is kept whole (the CPU
// pipeline decomposes it first, so that only the softmax stays f32); a
// fused matmul with a residual operand holds a residual add and is kept; one
// with only a bias and an activation converts.
// CHECK-LABEL: func.func @fused_ops
// CHECK: kiln.attention {{.*}} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, none) -> tensor<1x2x4x8xf32>
// CHECK: kiln.fused_matmul {{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>, none, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: kiln.fused_matmul {{.*}} {activation = "relu"} : (tensor<4x8xf16>, tensor<8x8xf16>, tensor<8xf16>, none) -> tensor<4x8xf16>
func.func @fused_ops(%q: tensor<1x2x4x8xf32>, %x: tensor<4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %none = kiln.none
  %w = kiln.constant dense<0.5> : tensor<8x8xf32>
  %b = kiln.constant dense<0.25> : tensor<8xf32>
  %a = kiln.attention %q, %q, %q, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.35355339 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, none) -> tensor<1x2x4x8xf32>
  %r = kiln.fused_matmul %x, %w, %none, %x : (tensor<4x8xf32>, tensor<8x8xf32>, none, tensor<4x8xf32>) -> tensor<4x8xf32>
  %f = kiln.fused_matmul %x, %w, %b, %none {activation = "relu"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, none) -> tensor<4x8xf32>
  return %a, %r, %f : tensor<1x2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
