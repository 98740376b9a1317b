// RUN: kiln-opt %s -split-input-file --kiln-fold-repeat-kv | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-fold-repeat-kv --kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS

// Counted over the whole file: two matmuls in each of @static_gqa and
// @dynamic_gqa, one in each of @transpose_before_repeat and @fused_trans_b;
// the four repetitions of the first two and one in each of the last two
// are erased (@shared_repeat keeps its repetition for the other user).
// STATS: kiln-fold-repeat-kv
// STATS-NEXT: (matmuls-grouped) 7
// STATS-NEXT: (repeats-erased) 6

// Hugging Face's Llama attention, static: 8 query heads over 2 KV heads
// (rep = 4), the transpose of K after the repetition. Both matmuls read the
// KV heads; the mask and the softmax between them are untouched.
// CHECK-LABEL: func.func @static_gqa
//  CHECK-SAME: (%[[Q:.+]]: tensor<1x8x4x32xf32>, %[[K:.+]]: tensor<1x2x16x32xf32>, %[[V:.+]]: tensor<1x2x16x32xf32>, %[[MASK:.+]]: tensor<1x1x4x16xf32>)
//   CHECK-NOT:   kiln.expand
//   CHECK-DAG:   %[[GROUPED:.+]] = kiln.constant dense<[1, 2, 16, 32]> : tensor<4xi64>
//   CHECK-DAG:   %[[QG:.+]] = kiln.reshape %[[Q]], %[[GROUPED]] : (tensor<1x8x4x32xf32>, tensor<4xi64>) -> tensor<1x2x16x32xf32>
//   CHECK-DAG:   %[[KT:.+]] = kiln.transpose %[[K]] {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x16x32xf32>) -> tensor<1x2x32x16xf32>
//       CHECK:   %[[S:.+]] = kiln.matmul %[[QG]], %[[KT]] : (tensor<1x2x16x32xf32>, tensor<1x2x32x16xf32>) -> tensor<1x2x16x16xf32>
//       CHECK:   %[[HEADS:.+]] = kiln.constant dense<[1, 8, 4, 16]> : tensor<4xi64>
//       CHECK:   %[[SH:.+]] = kiln.reshape %[[S]], %[[HEADS]] : (tensor<1x2x16x16xf32>, tensor<4xi64>) -> tensor<1x8x4x16xf32>
//       CHECK:   %[[M:.+]] = kiln.add %[[SH]], %[[MASK]]
//       CHECK:   %[[P:.+]] = kiln.softmax %[[M]]
//       CHECK:   %[[PG:.+]] = kiln.reshape %[[P]], %{{.+}} : (tensor<1x8x4x16xf32>, tensor<4xi64>) -> tensor<1x2x16x16xf32>
//       CHECK:   %[[O:.+]] = kiln.matmul %[[PG]], %[[V]] : (tensor<1x2x16x16xf32>, tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32>
//       CHECK:   %[[OH:.+]] = kiln.reshape %[[O]], %{{.+}} : (tensor<1x2x16x32xf32>, tensor<4xi64>) -> tensor<1x8x4x32xf32>
//       CHECK:   return %[[OH]]
func.func @static_gqa(%q: tensor<1x8x4x32xf32>, %k: tensor<1x2x16x32xf32>, %v: tensor<1x2x16x32xf32>, %mask: tensor<1x1x4x16xf32>) -> tensor<1x8x4x32xf32> {
  %axis = kiln.constant dense<2> : tensor<1xi64>
  %expanded = kiln.constant dense<[1, 2, 4, 16, 32]> : tensor<5xi64>
  %heads = kiln.constant dense<[1, 8, 16, 32]> : tensor<4xi64>
  %ku = kiln.unsqueeze %k, %axis : (tensor<1x2x16x32xf32>, tensor<1xi64>) -> tensor<1x2x1x16x32xf32>
  %ke = kiln.expand %ku, %expanded : (tensor<1x2x1x16x32xf32>, tensor<5xi64>) -> tensor<1x2x4x16x32xf32>
  %kr = kiln.reshape %ke, %heads : (tensor<1x2x4x16x32xf32>, tensor<4xi64>) -> tensor<1x8x16x32xf32>
  %vu = kiln.unsqueeze %v, %axis : (tensor<1x2x16x32xf32>, tensor<1xi64>) -> tensor<1x2x1x16x32xf32>
  %ve = kiln.expand %vu, %expanded : (tensor<1x2x1x16x32xf32>, tensor<5xi64>) -> tensor<1x2x4x16x32xf32>
  %vr = kiln.reshape %ve, %heads : (tensor<1x2x4x16x32xf32>, tensor<4xi64>) -> tensor<1x8x16x32xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x8x16x32xf32>) -> tensor<1x8x32x16xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x8x4x32xf32>, tensor<1x8x32x16xf32>) -> tensor<1x8x4x16xf32>
  %m = kiln.add %s, %mask : (tensor<1x8x4x16xf32>, tensor<1x1x4x16xf32>) -> tensor<1x8x4x16xf32>
  %p = kiln.softmax %m : (tensor<1x8x4x16xf32>) -> tensor<1x8x4x16xf32>
  %o = kiln.matmul %p, %vr : (tensor<1x8x4x16xf32>, tensor<1x8x16x32xf32>) -> tensor<1x8x4x32xf32>
  return %o : tensor<1x8x4x32xf32>
}

// -----

// The decoder as exported, with symbolic batch, sequence and cache length:
// the repetition's shapes come from Shape/Gather/Concat arithmetic; the new
// shapes are constants (0 copies B or T, -1 stands for the rows).
// CHECK-LABEL: func.func @dynamic_gqa
//  CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x8x?x32xf16>
//  CHECK-SAME: %[[K:[^:]+]]: tensor<?x2x?x32xf16>
//  CHECK-SAME: %[[V:[^:]+]]: tensor<?x2x?x32xf16>
//   CHECK-NOT:   kiln.expand
//   CHECK-DAG:   %[[GROUPED:.+]] = kiln.constant dense<[0, 2, -1, 32]> : tensor<4xi64>
//   CHECK-DAG:   %[[QG:.+]] = kiln.reshape %[[Q]], %[[GROUPED]] : (tensor<?x8x?x32xf16>, tensor<4xi64>) -> tensor<?x2x?x32xf16>
//   CHECK-DAG:   %[[KT:.+]] = kiln.transpose %[[K]] {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x32xf16>) -> tensor<?x2x32x?xf16>
//       CHECK:   %[[S:.+]] = kiln.matmul %[[QG]], %[[KT]] : (tensor<?x2x?x32xf16>, tensor<?x2x32x?xf16>) -> tensor<?x2x?x?xf16>
//       CHECK:   %[[HEADS:.+]] = kiln.constant dense<[0, 8, -1, 0]> : tensor<4xi64>
//       CHECK:   %[[SH:.+]] = kiln.reshape %[[S]], %[[HEADS]] : (tensor<?x2x?x?xf16>, tensor<4xi64>) -> tensor<?x8x?x?xf16>
//       CHECK:   kiln.div %[[SH]]
//       CHECK:   %[[P:.+]] = kiln.softmax
//       CHECK:   %[[PGROUPED:.+]] = kiln.constant dense<[0, 2, -1, 0]> : tensor<4xi64>
//       CHECK:   %[[PG:.+]] = kiln.reshape %[[P]], %[[PGROUPED]] : (tensor<?x8x?x?xf16>, tensor<4xi64>) -> tensor<?x2x?x?xf16>
//       CHECK:   %[[O:.+]] = kiln.matmul %[[PG]], %[[V]] : (tensor<?x2x?x?xf16>, tensor<?x2x?x32xf16>) -> tensor<?x2x?x32xf16>
//       CHECK:   %[[OHEADS:.+]] = kiln.constant dense<[0, 8, -1, 32]> : tensor<4xi64>
//       CHECK:   %[[OH:.+]] = kiln.reshape %[[O]], %[[OHEADS]] : (tensor<?x2x?x32xf16>, tensor<4xi64>) -> tensor<?x8x?x32xf16>
//       CHECK:   return %[[OH]]
func.func @dynamic_gqa(%q: tensor<?x8x?x32xf16> {kiln.dims = ["batch", "", "seq", ""], kiln.name = "q"}, %k: tensor<?x2x?x32xf16> {kiln.dims = ["batch", "", "total", ""], kiln.name = "k"}, %v: tensor<?x2x?x32xf16> {kiln.dims = ["batch", "", "total", ""], kiln.name = "v"}) -> tensor<?x8x?x32xf16> {
  %c0 = kiln.constant dense<0> : tensor<i64>
  %c2 = kiln.constant dense<2> : tensor<i64>
  %axis0 = kiln.constant dense<0> : tensor<1xi64>
  %axis2 = kiln.constant dense<2> : tensor<1xi64>
  %kv = kiln.constant dense<2> : tensor<1xi64>
  %rep = kiln.constant dense<4> : tensor<1xi64>
  %h = kiln.constant dense<8> : tensor<1xi64>
  %d = kiln.constant dense<32> : tensor<1xi64>
  %scale = kiln.constant dense<5.656250e+00> : tensor<f16>
  %qshape = kiln.shape %q : (tensor<?x8x?x32xf16>) -> tensor<4xi64>
  %b0 = kiln.gather %qshape, %c0 : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %b = kiln.unsqueeze %b0, %axis0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %kshape = kiln.shape %k : (tensor<?x2x?x32xf16>) -> tensor<4xi64>
  %t0 = kiln.gather %kshape, %c2 : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %t = kiln.unsqueeze %t0, %axis0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %expanded = kiln.concat %b, %kv, %rep, %t, %d {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %heads = kiln.concat %b, %h, %t, %d {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %ku = kiln.unsqueeze %k, %axis2 : (tensor<?x2x?x32xf16>, tensor<1xi64>) -> tensor<?x2x1x?x32xf16>
  %ke = kiln.expand %ku, %expanded : (tensor<?x2x1x?x32xf16>, tensor<5xi64>) -> tensor<?x2x4x?x32xf16>
  %kr = kiln.reshape %ke, %heads : (tensor<?x2x4x?x32xf16>, tensor<4xi64>) -> tensor<?x8x?x32xf16>
  %vu = kiln.unsqueeze %v, %axis2 : (tensor<?x2x?x32xf16>, tensor<1xi64>) -> tensor<?x2x1x?x32xf16>
  %ve = kiln.expand %vu, %expanded : (tensor<?x2x1x?x32xf16>, tensor<5xi64>) -> tensor<?x2x4x?x32xf16>
  %vr = kiln.reshape %ve, %heads : (tensor<?x2x4x?x32xf16>, tensor<4xi64>) -> tensor<?x8x?x32xf16>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x8x?x32xf16>) -> tensor<?x8x32x?xf16>
  %s = kiln.matmul %q, %kt : (tensor<?x8x?x32xf16>, tensor<?x8x32x?xf16>) -> tensor<?x8x?x?xf16>
  %sc = kiln.div %s, %scale : (tensor<?x8x?x?xf16>, tensor<f16>) -> tensor<?x8x?x?xf16>
  %p = kiln.softmax %sc : (tensor<?x8x?x?xf16>) -> tensor<?x8x?x?xf16>
  %o = kiln.matmul %p, %vr : (tensor<?x8x?x?xf16>, tensor<?x8x?x32xf16>) -> tensor<?x8x?x32xf16>
  return %o : tensor<?x8x?x32xf16>
}

// -----

// The transpose before the repetition: Kᵀ [B, KV, D, T] is repeated, and
// the matmul reads it directly.
// CHECK-LABEL: func.func @transpose_before_repeat
//  CHECK-SAME: (%[[Q:.+]]: tensor<2x6x1x16xf32>, %[[K:.+]]: tensor<2x3x8x16xf32>)
//       CHECK:   %[[KT:.+]] = kiln.transpose %[[K]] {perm = array<i64: 0, 1, 3, 2>}
//       CHECK:   %[[QG:.+]] = kiln.reshape %[[Q]], %{{.+}} : (tensor<2x6x1x16xf32>, tensor<4xi64>) -> tensor<2x3x2x16xf32>
//       CHECK:   %[[S:.+]] = kiln.matmul %[[QG]], %[[KT]] : (tensor<2x3x2x16xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x2x8xf32>
//       CHECK:   kiln.reshape %[[S]], %{{.+}} : (tensor<2x3x2x8xf32>, tensor<4xi64>) -> tensor<2x6x1x8xf32>
//   CHECK-NOT:   kiln.expand
func.func @transpose_before_repeat(%q: tensor<2x6x1x16xf32>, %k: tensor<2x3x8x16xf32>) -> tensor<2x6x1x8xf32> {
  %axis = kiln.constant dense<-3> : tensor<1xi64>
  %expanded = kiln.constant dense<[1, 1, 2, 1, 1]> : tensor<5xi64>
  %heads = kiln.constant dense<[0, 6, 16, 8]> : tensor<4xi64>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x8x16xf32>) -> tensor<2x3x16x8xf32>
  %ku = kiln.unsqueeze %kt, %axis : (tensor<2x3x16x8xf32>, tensor<1xi64>) -> tensor<2x3x1x16x8xf32>
  %ke = kiln.expand %ku, %expanded : (tensor<2x3x1x16x8xf32>, tensor<5xi64>) -> tensor<2x3x2x16x8xf32>
  %kr = kiln.reshape %ke, %heads : (tensor<2x3x2x16x8xf32>, tensor<4xi64>) -> tensor<2x6x16x8xf32>
  %s = kiln.matmul %q, %kr : (tensor<2x6x1x16xf32>, tensor<2x6x16x8xf32>) -> tensor<2x6x1x8xf32>
  return %s : tensor<2x6x1x8xf32>
}

// -----

// After kiln-optimize-layout: the transpose folded into fused_matmul's
// trans_b, a scale in alpha. Both carry over to the grouped matmul.
// CHECK-LABEL: func.func @fused_trans_b
//  CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x4x?x32xf32>
//  CHECK-SAME: %[[K:[^:]+]]: tensor<?x2x?x32xf32>
//       CHECK:   %[[QG:.+]] = kiln.reshape %[[Q]], %{{.+}} : (tensor<?x4x?x32xf32>, tensor<4xi64>) -> tensor<?x2x?x32xf32>
//       CHECK:   %[[S:.+]] = kiln.fused_matmul %[[QG]], %[[K]], %{{.+}}, %{{.+}} {alpha = 1.250000e-01 : f32, trans_b = true} : (tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, none, none) -> tensor<?x2x?x?xf32>
//       CHECK:   kiln.reshape %[[S]], %{{.+}} : (tensor<?x2x?x?xf32>, tensor<4xi64>) -> tensor<?x4x?x?xf32>
func.func @fused_trans_b(%q: tensor<?x4x?x32xf32> {kiln.dims = ["batch", "", "seq", ""], kiln.name = "q"}, %k: tensor<?x2x?x32xf32> {kiln.dims = ["batch", "", "total", ""], kiln.name = "k"}) -> tensor<?x4x?x?xf32> {
  %none = kiln.none
  %axis = kiln.constant dense<2> : tensor<1xi64>
  %expanded = kiln.constant dense<[1, 1, 2, 1, 1]> : tensor<5xi64>
  %heads = kiln.constant dense<[0, 4, -1, 32]> : tensor<4xi64>
  %ku = kiln.unsqueeze %k, %axis : (tensor<?x2x?x32xf32>, tensor<1xi64>) -> tensor<?x2x1x?x32xf32>
  %ke = kiln.expand %ku, %expanded : (tensor<?x2x1x?x32xf32>, tensor<5xi64>) -> tensor<?x2x2x?x32xf32>
  %kr = kiln.reshape %ke, %heads : (tensor<?x2x2x?x32xf32>, tensor<4xi64>) -> tensor<?x4x?x32xf32>
  %s = kiln.fused_matmul %q, %kr, %none, %none {alpha = 1.250000e-01 : f32, trans_b = true} : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, none, none) -> tensor<?x4x?x?xf32>
  return %s : tensor<?x4x?x?xf32>
}

// -----

// A repetition that another op also reads is kept for it; the matmul still
// reads the KV heads.
// CHECK-LABEL: func.func @shared_repeat
//       CHECK:   %[[KR:.+]] = kiln.reshape %{{.+}}, %{{.+}} : (tensor<1x2x4x16x32xf32>, tensor<4xi64>) -> tensor<1x8x16x32xf32>
//       CHECK:   kiln.matmul %{{.+}}, %{{.+}} : (tensor<1x2x4x32xf32>, tensor<1x2x32x16xf32>) -> tensor<1x2x4x16xf32>
//       CHECK:   return %{{.+}}, %[[KR]]
func.func @shared_repeat(%q: tensor<1x8x1x32xf32>, %k: tensor<1x2x16x32xf32>) -> (tensor<1x8x1x16xf32>, tensor<1x8x16x32xf32>) {
  %axis = kiln.constant dense<2> : tensor<1xi64>
  %expanded = kiln.constant dense<[1, 2, 4, 16, 32]> : tensor<5xi64>
  %heads = kiln.constant dense<[1, 8, 16, 32]> : tensor<4xi64>
  %ku = kiln.unsqueeze %k, %axis : (tensor<1x2x16x32xf32>, tensor<1xi64>) -> tensor<1x2x1x16x32xf32>
  %ke = kiln.expand %ku, %expanded : (tensor<1x2x1x16x32xf32>, tensor<5xi64>) -> tensor<1x2x4x16x32xf32>
  %kr = kiln.reshape %ke, %heads : (tensor<1x2x4x16x32xf32>, tensor<4xi64>) -> tensor<1x8x16x32xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x8x16x32xf32>) -> tensor<1x8x32x16xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x8x1x32xf32>, tensor<1x8x32x16xf32>) -> tensor<1x8x1x16xf32>
  return %s, %kr : tensor<1x8x1x16xf32>, tensor<1x8x16x32xf32>
}

// -----

// Not repeat_kv: Unsqueeze at axis 1 tiles the KV heads (query head h reads
// KV head h % KV, as repeat(k, 1, rep, 1, 1) would), which a grouping of
// adjacent query heads cannot express. Left alone.
// CHECK-LABEL: func.func @tiled_heads
//       CHECK:   kiln.expand
//       CHECK:   kiln.matmul %{{.+}}, %{{.+}} : (tensor<1x8x4x32xf32>, tensor<1x8x32x16xf32>) -> tensor<1x8x4x16xf32>
func.func @tiled_heads(%q: tensor<1x8x4x32xf32>, %k: tensor<1x2x16x32xf32>) -> tensor<1x8x4x16xf32> {
  %axis = kiln.constant dense<1> : tensor<1xi64>
  %expanded = kiln.constant dense<[1, 4, 2, 16, 32]> : tensor<5xi64>
  %heads = kiln.constant dense<[1, 8, 16, 32]> : tensor<4xi64>
  %ku = kiln.unsqueeze %k, %axis : (tensor<1x2x16x32xf32>, tensor<1xi64>) -> tensor<1x1x2x16x32xf32>
  %ke = kiln.expand %ku, %expanded : (tensor<1x1x2x16x32xf32>, tensor<5xi64>) -> tensor<1x4x2x16x32xf32>
  %kr = kiln.reshape %ke, %heads : (tensor<1x4x2x16x32xf32>, tensor<4xi64>) -> tensor<1x8x16x32xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x8x16x32xf32>) -> tensor<1x8x32x16xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x8x4x32xf32>, tensor<1x8x32x16xf32>) -> tensor<1x8x4x16xf32>
  return %s : tensor<1x8x4x16xf32>
}

// -----

// Not repeat_kv either: the Unsqueeze and the Expand are repeat_kv's, but
// the Reshape does not merge the two head dims ([1, 2, 4, 4, 8] read as
// [1, 8, 8, 4]: the same element count, rows of other heads). Left alone.
// CHECK-LABEL: func.func @heads_not_merged
//       CHECK:   kiln.expand
//       CHECK:   kiln.matmul %{{.+}}, %{{.+}} : (tensor<1x8x2x4xf32>, tensor<1x8x4x8xf32>) -> tensor<1x8x2x8xf32>
func.func @heads_not_merged(%q: tensor<1x8x2x4xf32>, %k: tensor<1x2x4x8xf32>) -> tensor<1x8x2x8xf32> {
  %axis = kiln.constant dense<2> : tensor<1xi64>
  %expanded = kiln.constant dense<[1, 2, 4, 4, 8]> : tensor<5xi64>
  %heads = kiln.constant dense<[1, 8, 8, 4]> : tensor<4xi64>
  %ku = kiln.unsqueeze %k, %axis : (tensor<1x2x4x8xf32>, tensor<1xi64>) -> tensor<1x2x1x4x8xf32>
  %ke = kiln.expand %ku, %expanded : (tensor<1x2x1x4x8xf32>, tensor<5xi64>) -> tensor<1x2x4x4x8xf32>
  %kr = kiln.reshape %ke, %heads : (tensor<1x2x4x4x8xf32>, tensor<4xi64>) -> tensor<1x8x8x4xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x8x8x4xf32>) -> tensor<1x8x4x8xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x8x2x4xf32>, tensor<1x8x4x8xf32>) -> tensor<1x8x2x8xf32>
  return %s : tensor<1x8x2x8xf32>
}

// -----

// The query batch broadcasts against the cache's (1 against the symbolic
// batch): the grouped matmul would need that broadcast too. Left alone.
// CHECK-LABEL: func.func @broadcast_batch
//       CHECK:   kiln.expand
//       CHECK:   kiln.matmul %{{.+}}, %{{.+}} : (tensor<1x8x1x32xf32>, tensor<?x8x32x?xf32>) -> tensor<?x8x1x?xf32>
func.func @broadcast_batch(%q: tensor<1x8x1x32xf32>, %k: tensor<?x2x?x32xf32> {kiln.dims = ["batch", "", "total", ""], kiln.name = "k"}) -> tensor<?x8x1x?xf32> {
  %axis = kiln.constant dense<2> : tensor<1xi64>
  %expanded = kiln.constant dense<[1, 1, 4, 1, 1]> : tensor<5xi64>
  %heads = kiln.constant dense<[0, 8, -1, 32]> : tensor<4xi64>
  %ku = kiln.unsqueeze %k, %axis : (tensor<?x2x?x32xf32>, tensor<1xi64>) -> tensor<?x2x1x?x32xf32>
  %ke = kiln.expand %ku, %expanded : (tensor<?x2x1x?x32xf32>, tensor<5xi64>) -> tensor<?x2x4x?x32xf32>
  %kr = kiln.reshape %ke, %heads : (tensor<?x2x4x?x32xf32>, tensor<4xi64>) -> tensor<?x8x?x32xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x8x?x32xf32>) -> tensor<?x8x32x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x8x1x32xf32>, tensor<?x8x32x?xf32>) -> tensor<?x8x1x?xf32>
  return %s : tensor<?x8x1x?xf32>
}
