// RUN: kiln-opt %s -split-input-file -kiln-fuse-attention | FileCheck %s

// Grouped-query attention of one decode step as PyTorch exports it with
// dynamic batch and cache length (models/export_torch_dynamic.py
// gqa_kv_cache): K and V repeated from 2 to 8 heads by Unsqueeze, Expand
// and Reshape whose targets are computed at run time (Shape, Gather,
// Concat, and Expand's Where(Equal(shape, -1), 1, shape)), the scores
// divided by sqrt(head_dim). The batch dim of the probabilities (through
// the Div) and of V (a Reshape target entry) are the same symbol only by
// the symbolic shapes: the attention is fused over the 2 KV heads, as it
// is when the shapes are static.
// CHECK-LABEL: func.func @gqa_decode_dynamic
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x8x1x8xf32> {{.*}}, %[[K:.+]]: tensor<?x2x?x8xf32> {{.*}}, %[[V:.+]]: tensor<?x2x?x8xf32>
//       CHECK: %[[A:.+]] = kiln.attention %[[Q]], %[[K]], %[[V]], %{{.+}} {num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.353553385 : f32} : (tensor<?x8x1x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, none) -> tensor<?x8x1x8xf32>
//   CHECK-NOT: kiln.softmax
//       CHECK: return %[[A]]
func.func @gqa_decode_dynamic(%q: tensor<?x8x1x8xf32> {kiln.dims = ["batch", "", "", ""]},
                              %k: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "kv", ""]},
                              %v: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "kv", ""]}) -> tensor<?x8x1x8xf32> {
  %minus1 = kiln.constant dense<-1> : tensor<5xi64>
  %ones = kiln.constant dense<1> : tensor<5xi64>
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %i0 = kiln.constant dense<0> : tensor<i64>
  %i2 = kiln.constant dense<2> : tensor<i64>
  %ax0 = kiln.constant dense<0> : tensor<1xi64>
  %scale = kiln.constant dense<2.82842708> : tensor<f32>
  %shape = kiln.shape %k : (tensor<?x2x?x8xf32>) -> tensor<4xi64>
  %b0 = kiln.gather %shape, %i0 : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %s0 = kiln.gather %shape, %i2 : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %b = kiln.unsqueeze %b0, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %s = kiln.unsqueeze %s0, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %t5 = kiln.concat %b, %c2, %c4, %s, %c8 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %isneg = kiln.equal %t5, %minus1 : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
  %e5 = kiln.where %isneg, %ones, %t5 : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %t4 = kiln.concat %b, %c8, %s, %c8 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %ku = kiln.unsqueeze %k, %c2 : (tensor<?x2x?x8xf32>, tensor<1xi64>) -> tensor<?x2x1x?x8xf32>
  %ke = kiln.expand %ku, %e5 : (tensor<?x2x1x?x8xf32>, tensor<5xi64>) -> tensor<?x2x4x?x8xf32>
  %kk = kiln.reshape %ke, %t4 : (tensor<?x2x4x?x8xf32>, tensor<4xi64>) -> tensor<?x8x?x8xf32>
  %vu = kiln.unsqueeze %v, %c2 : (tensor<?x2x?x8xf32>, tensor<1xi64>) -> tensor<?x2x1x?x8xf32>
  %ve = kiln.expand %vu, %e5 : (tensor<?x2x1x?x8xf32>, tensor<5xi64>) -> tensor<?x2x4x?x8xf32>
  %vv = kiln.reshape %ve, %t4 : (tensor<?x2x4x?x8xf32>, tensor<4xi64>) -> tensor<?x8x?x8xf32>
  %kt = kiln.transpose %kk {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x8x?x8xf32>) -> tensor<?x8x8x?xf32>
  %scores = kiln.matmul %q, %kt : (tensor<?x8x1x8xf32>, tensor<?x8x8x?xf32>) -> tensor<?x8x1x?xf32>
  %scaled = kiln.div %scores, %scale : (tensor<?x8x1x?xf32>, tensor<f32>) -> tensor<?x8x1x?xf32>
  %probs = kiln.softmax %scaled : (tensor<?x8x1x?xf32>) -> tensor<?x8x1x?xf32>
  %out = kiln.matmul %probs, %vv : (tensor<?x8x1x?xf32>, tensor<?x8x?x8xf32>) -> tensor<?x8x1x8xf32>
  return %out : tensor<?x8x1x8xf32>
}

// -----

// The same attention with V of an independent batch (another input's
// dim): nothing relates the two batch sizes, so the product of the
// probabilities and V may broadcast, and it stays as it is.
// CHECK-LABEL: func.func @unrelated_batch
//   CHECK-NOT: kiln.attention
//       CHECK: kiln.softmax
func.func @unrelated_batch(%q: tensor<?x2x4x8xf32> {kiln.dims = ["b", "", "", ""]},
                           %k: tensor<?x2x4x8xf32> {kiln.dims = ["b", "", "", ""]},
                           %v: tensor<?x2x4x8xf32> {kiln.dims = ["other", "", "", ""]}) -> tensor<?x2x4x8xf32> {
  %scale = kiln.constant dense<2.82842708> : tensor<f32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x4x8xf32>) -> tensor<?x2x8x4xf32>
  %scores = kiln.matmul %q, %kt : (tensor<?x2x4x8xf32>, tensor<?x2x8x4xf32>) -> tensor<?x2x4x4xf32>
  %scaled = kiln.div %scores, %scale : (tensor<?x2x4x4xf32>, tensor<f32>) -> tensor<?x2x4x4xf32>
  %probs = kiln.softmax %scaled : (tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32>
  %out = kiln.matmul %probs, %v : (tensor<?x2x4x4xf32>, tensor<?x2x4x8xf32>) -> tensor<?x2x4x8xf32>
  return %out : tensor<?x2x4x8xf32>
}

// -----

// nanoGPT's causal mask under a dynamic sequence length: a registered
// lower-triangular buffer cut to [:T, :T] by run-time Slices and compared
// with 0 (masked_fill(bias[:, :, :T, :T] == 0, -inf)). With square scores
// (Sq = Skv = seq) every such window is causal: the attention is fused as
// causal, without a mask operand.
// CHECK-LABEL: func.func @causal_window
//       CHECK: kiln.attention {{.*}}causal = true
//   CHECK-NOT: kiln.slice
//   CHECK-NOT: kiln.softmax
func.func @causal_window(%q: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "seq", ""]},
                         %k: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "seq", ""]},
                         %v: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "seq", ""]}) -> tensor<?x2x?x8xf32> {
  %bias = kiln.constant dense<[[[[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]]]> : tensor<1x1x4x4xf32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %ninf = kiln.constant dense<0xFF800000> : tensor<f32>
  %scale = kiln.constant dense<0.353553385> : tensor<f32>
  %s0 = kiln.constant dense<0> : tensor<1xi64>
  %a2 = kiln.constant dense<2> : tensor<1xi64>
  %a3 = kiln.constant dense<3> : tensor<1xi64>
  %st = kiln.constant dense<1> : tensor<1xi64>
  %i2 = kiln.constant dense<2> : tensor<i64>
  %shape = kiln.shape %q : (tensor<?x2x?x8xf32>) -> tensor<4xi64>
  %t0 = kiln.gather %shape, %i2 : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %t = kiln.unsqueeze %t0, %s0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x8xf32>) -> tensor<?x2x8x?xf32>
  %scores = kiln.matmul %q, %kt : (tensor<?x2x?x8xf32>, tensor<?x2x8x?xf32>) -> tensor<?x2x?x?xf32>
  %scaled = kiln.mul %scores, %scale : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %rows = kiln.slice %bias, %s0, %t, %a2, %st : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x4xf32>
  %window = kiln.slice %rows, %s0, %t, %a3, %st : (tensor<1x1x?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x?xf32>
  %drop = kiln.equal %window, %zero : (tensor<1x1x?x?xf32>, tensor<f32>) -> tensor<1x1x?x?xi1>
  %masked = kiln.where %drop, %ninf, %scaled : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %probs = kiln.softmax %masked : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %out = kiln.matmul %probs, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %out : tensor<?x2x?x8xf32>
}

// -----

// The same window of a buffer that is not lower-triangular (its last row
// drops a key it should keep): fused, the window kept as the mask operand
// (where it is true, keys are kept: the Not of the dropped ones).
// CHECK-LABEL: func.func @window_not_causal
//       CHECK: %[[W:.+]] = kiln.slice
//       CHECK: %[[D:.+]] = kiln.equal %[[W]]
//       CHECK: %[[KEEP:.+]] = kiln.not %[[D]]
//       CHECK: kiln.attention %{{.+}}, %{{.+}}, %{{.+}}, %[[KEEP]]
//   CHECK-NOT: causal
//  CHECK-SAME: -> tensor<?x2x?x8xf32>
func.func @window_not_causal(%q: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "seq", ""]},
                             %k: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "seq", ""]},
                             %v: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "seq", ""]}) -> tensor<?x2x?x8xf32> {
  %bias = kiln.constant dense<[[[[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 1.0]]]]> : tensor<1x1x3x3xf32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %ninf = kiln.constant dense<0xFF800000> : tensor<f32>
  %s0 = kiln.constant dense<0> : tensor<1xi64>
  %a3 = kiln.constant dense<3> : tensor<1xi64>
  %a2 = kiln.constant dense<2> : tensor<1xi64>
  %i2 = kiln.constant dense<2> : tensor<i64>
  %shape = kiln.shape %q : (tensor<?x2x?x8xf32>) -> tensor<4xi64>
  %t0 = kiln.gather %shape, %i2 : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %t = kiln.unsqueeze %t0, %s0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %ends = kiln.concat %t, %t {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %none = kiln.none
  %starts = kiln.constant dense<0> : tensor<2xi64>
  %axes = kiln.constant dense<[2, 3]> : tensor<2xi64>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x8xf32>) -> tensor<?x2x8x?xf32>
  %scores = kiln.matmul %q, %kt : (tensor<?x2x?x8xf32>, tensor<?x2x8x?xf32>) -> tensor<?x2x?x?xf32>
  %window = kiln.slice %bias, %starts, %ends, %axes, %none : (tensor<1x1x3x3xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, none) -> tensor<1x1x?x?xf32>
  %drop = kiln.equal %window, %zero : (tensor<1x1x?x?xf32>, tensor<f32>) -> tensor<1x1x?x?xi1>
  %masked = kiln.where %drop, %ninf, %scores : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %probs = kiln.softmax %masked : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %out = kiln.matmul %probs, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %out : tensor<?x2x?x8xf32>
}

// -----

// optimum's decoder step: the additive mask's key length is the
// attention_mask input's own dim (`total`), the cache's is past + seq; the
// Add of the scores and the mask makes the runtime check total == past +
// seq, and with that equality the mask broadcasts into the scores: fused,
// the mask kept as the operand.
// CHECK-LABEL: func.func @mask_length_by_constraint
//       CHECK: kiln.attention %{{.+}}, %{{.+}}, %{{.+}}, %arg4 {num_heads = 2 : i64, num_kv_heads = 2 : i64
//   CHECK-NOT: kiln.softmax
func.func @mask_length_by_constraint(%q: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "seq", ""]},
                                     %kpast: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "past", ""]},
                                     %knew: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "seq", ""]},
                                     %v: tensor<?x2x?x8xf32> {kiln.dims = ["batch", "", "kv", ""]},
                                     %mask: tensor<?x1x?x?xf32> {kiln.dims = ["batch", "", "seq", "total"]}) -> tensor<?x2x?x8xf32> {
  %scale = kiln.constant dense<2.82842708> : tensor<f32>
  %k = kiln.concat %kpast, %knew {axis = 2 : i64} : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x8xf32>) -> tensor<?x2x8x?xf32>
  %scores = kiln.matmul %q, %kt : (tensor<?x2x?x8xf32>, tensor<?x2x8x?xf32>) -> tensor<?x2x?x?xf32>
  %scaled = kiln.div %scores, %scale : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %masked = kiln.add %scaled, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %probs = kiln.softmax %masked : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %out = kiln.matmul %probs, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %out : tensor<?x2x?x8xf32>
}
