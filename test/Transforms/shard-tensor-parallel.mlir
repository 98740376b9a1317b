// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-shard-tensor-parallel="ranks=2 rank=1" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-shard-tensor-parallel="ranks=2 rank=0" | FileCheck %s --check-prefix=RANK0
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-shard-tensor-parallel="ranks=2 rank=1" --kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS

// Counted over the file: gate and up, Q, K and V, the int8 up
// projection, Q and K are split by columns; down, the attention output,
// the int8 down projection and the last attention output by rows, each
// followed by one all-reduce, and one more pair in the last model; the
// two models with a KV cache have their cache input and output sharded.
// STATS: kiln-shard-tensor-parallel
// STATS-DAG: (column-parallel) 11
// STATS-DAG: (row-parallel) 7
// STATS-DAG: (all-reduces) 7
// STATS-DAG: (sharded-inputs) 2
// STATS-DAG: (sharded-outputs) 2

// A SwiGLU MLP with a residual, then an LM head. Gate and up keep the
// rank's columns (rank 1: columns 2 and 3), down the rank's rows (rows 2
// and 3); the residual is added once, after the all-reduce. The LM head
// reaches no matmul that contracts over its columns: it stays whole.
// CHECK-LABEL: func.func @main
//  CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>) -> tensor<2x6xf32>
//   CHECK-DAG: %[[WG:.+]] = kiln.constant dense<{{\[}}[2.000000e+00, 3.000000e+00], [6.000000e+00, 7.000000e+00], [1.000000e+01, 1.100000e+01], [1.400000e+01, 1.500000e+01]]> : tensor<4x2xf32>
//   CHECK-DAG: %[[WU:.+]] = kiln.constant dense<{{\[}}[2.200000e+01, 2.300000e+01], [2.600000e+01, 2.700000e+01], [3.000000e+01, 3.100000e+01], [3.400000e+01, 3.500000e+01]]> : tensor<4x2xf32>
//   CHECK-DAG: %[[WD:.+]] = kiln.constant dense<{{\[}}[4.800000e+01, 4.900000e+01, 5.000000e+01, 5.100000e+01], [5.200000e+01, 5.300000e+01, 5.400000e+01, 5.500000e+01]]> : tensor<2x4xf32>
//       CHECK: %[[G:.+]] = kiln.matmul %[[X]], %[[WG]] : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
//       CHECK: %[[U:.+]] = kiln.matmul %[[X]], %[[WU]] : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
//       CHECK: %[[S:.+]] = kiln.swiglu %[[G]], %[[U]] : tensor<2x2xf32>
//       CHECK: %[[NONE:.+]] = kiln.none
//       CHECK: %[[D:.+]] = kiln.fused_matmul %[[S]], %[[WD]], %[[NONE]], %[[NONE]] {{.*}}: (tensor<2x2xf32>, tensor<2x4xf32>, none, none) -> tensor<2x4xf32>
//       CHECK: %[[SUM:.+]] = kiln.all_reduce %[[D]] : tensor<2x4xf32>
//       CHECK: %[[RES:.+]] = kiln.add %[[SUM]], %[[X]]
//       CHECK: %[[L:.+]] = kiln.matmul %[[RES]], %{{.+}} : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
//       CHECK: return %[[L]]
// Rank 0: columns 0 and 1, rows 0 and 1.
// RANK0-LABEL: func.func @main
//   RANK0-DAG: kiln.constant dense<{{\[}}[0.000000e+00, 1.000000e+00], [4.000000e+00, 5.000000e+00], [8.000000e+00, 9.000000e+00], [1.200000e+01, 1.300000e+01]]> : tensor<4x2xf32>
//   RANK0-DAG: kiln.constant dense<{{\[}}[4.000000e+01, 4.100000e+01, 4.200000e+01, 4.300000e+01], [4.400000e+01, 4.500000e+01, 4.600000e+01, 4.700000e+01]]> : tensor<2x4xf32>
module attributes {kiln.opset = 17 : i64} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x6xf32> {
  %none = kiln.none
  %wg = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]> : tensor<4x4xf32>
  %wu = kiln.constant dense<[[20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0], [28.0, 29.0, 30.0, 31.0], [32.0, 33.0, 34.0, 35.0]]> : tensor<4x4xf32>
  %wd = kiln.constant dense<[[40.0, 41.0, 42.0, 43.0], [44.0, 45.0, 46.0, 47.0], [48.0, 49.0, 50.0, 51.0], [52.0, 53.0, 54.0, 55.0]]> : tensor<4x4xf32>
  %wh = kiln.constant dense<0.5> : tensor<4x6xf32>
  %g = kiln.matmul %x, %wg : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %u = kiln.matmul %x, %wu : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = kiln.swiglu %g, %u : tensor<2x4xf32>
  %d = kiln.fused_matmul %s, %wd, %none, %x : (tensor<2x4xf32>, tensor<4x4xf32>, none, tensor<2x4xf32>) -> tensor<2x4xf32>
  %l = kiln.matmul %d, %wh : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
  return %l : tensor<2x6xf32>
}
}
// CHECK: kiln.tensor_parallel = {plan = "inferred", rank = 1 : i64, ranks = 2 : i64}

// -----

// Attention over 4 query and 2 KV heads with a KV cache as a graph input
// and output (dynamic batch and cache length): the head splits keep 2 and
// 1 heads, the attention's head counts are halved, the cache input and
// output become the rank's KV head, the merge of the heads keeps 8 of the
// 16 columns; the output projection is row-parallel.
// CHECK-LABEL: func.func @main
//  CHECK-SAME: %[[PAST:[^:]+]]: tensor<?x1x?x4xf32>
//  CHECK-SAME: -> (tensor<?x4x16xf32>, tensor<?x1x?x4xf32>)
//   CHECK-DAG: %[[QS:.+]] = kiln.constant dense<[0, 4, 2, 4]> : tensor<4xi64>
//   CHECK-DAG: kiln.constant dense<[0, 4, 1, 4]> : tensor<4xi64>
//   CHECK-DAG: %[[MS:.+]] = kiln.constant dense<[0, 4, 8]> : tensor<3xi64>
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} : (tensor<?x4x16xf32>, tensor<16x8xf32>) -> tensor<?x4x8xf32>
//       CHECK: kiln.reshape %{{.+}}, %[[QS]] : (tensor<?x4x8xf32>, tensor<4xi64>) -> tensor<?x4x2x4xf32>
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} : (tensor<?x4x16xf32>, tensor<16x4xf32>) -> tensor<?x4x4xf32>
//       CHECK: kiln.reshape %{{.+}}, %{{.+}} : (tensor<?x4x4xf32>, tensor<4xi64>) -> tensor<?x4x1x4xf32>
//       CHECK: %[[K:.+]] = kiln.concat %[[PAST]], %{{.+}} {axis = 2 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x4x4xf32>) -> tensor<?x1x?x4xf32>
//       CHECK: %[[A:.+]] = kiln.attention %{{.+}}, %[[K]], %{{.+}}, %{{.+}} {num_heads = 2 : i64, num_kv_heads = 1 : i64, scale = 5.000000e-01 : f32} : (tensor<?x2x4x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, none) -> tensor<?x2x4x4xf32>
//       CHECK: kiln.reshape %{{.+}}, %[[MS]] : (tensor<?x4x2x4xf32>, tensor<3xi64>) -> tensor<?x4x8xf32>
//       CHECK: %[[O:.+]] = kiln.matmul %{{.+}}, %{{.+}} : (tensor<?x4x8xf32>, tensor<8x16xf32>) -> tensor<?x4x16xf32>
//       CHECK: %[[SUM:.+]] = kiln.all_reduce %[[O]]
//       CHECK: return %[[SUM]], %[[K]]
module attributes {kiln.opset = 17 : i64} {
func.func @main(%x: tensor<?x4x16xf32> {kiln.dims = ["batch", "", ""], kiln.name = "x"},
                %past: tensor<?x2x?x4xf32> {kiln.dims = ["batch", "", "past", ""], kiln.name = "past_key"})
    -> (tensor<?x4x16xf32>, tensor<?x2x?x4xf32>) {
  %none = kiln.none
  %wq = kiln.constant dense<0.25> : tensor<16x16xf32>
  %wk = kiln.constant dense<0.5> : tensor<16x8xf32>
  %wv = kiln.constant dense<0.75> : tensor<16x8xf32>
  %wo = kiln.constant dense<1.0> : tensor<16x16xf32>
  %qs = kiln.constant dense<[0, 4, 4, 4]> : tensor<4xi64>
  %ks = kiln.constant dense<[0, 4, 2, 4]> : tensor<4xi64>
  %ms = kiln.constant dense<[0, 4, 16]> : tensor<3xi64>
  %q = kiln.matmul %x, %wq : (tensor<?x4x16xf32>, tensor<16x16xf32>) -> tensor<?x4x16xf32>
  %q4 = kiln.reshape %q, %qs : (tensor<?x4x16xf32>, tensor<4xi64>) -> tensor<?x4x4x4xf32>
  %qt = kiln.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  %k = kiln.matmul %x, %wk : (tensor<?x4x16xf32>, tensor<16x8xf32>) -> tensor<?x4x8xf32>
  %k4 = kiln.reshape %k, %ks : (tensor<?x4x8xf32>, tensor<4xi64>) -> tensor<?x4x2x4xf32>
  %kt = kiln.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x2x4xf32>) -> tensor<?x2x4x4xf32>
  %kall = kiln.concat %past, %kt {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x4xf32>) -> tensor<?x2x?x4xf32>
  %v = kiln.matmul %x, %wv : (tensor<?x4x16xf32>, tensor<16x8xf32>) -> tensor<?x4x8xf32>
  %v4 = kiln.reshape %v, %ks : (tensor<?x4x8xf32>, tensor<4xi64>) -> tensor<?x4x2x4xf32>
  %vt = kiln.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x2x4xf32>) -> tensor<?x2x4x4xf32>
  %vall = kiln.concat %past, %vt {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x4xf32>) -> tensor<?x2x?x4xf32>
  %a = kiln.attention %qt, %kall, %vall, %none {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f32} : (tensor<?x4x4x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, none) -> tensor<?x4x4x4xf32>
  %at = kiln.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  %am = kiln.reshape %at, %ms : (tensor<?x4x4x4xf32>, tensor<3xi64>) -> tensor<?x4x16xf32>
  %o = kiln.matmul %am, %wo : (tensor<?x4x16xf32>, tensor<16x16xf32>) -> tensor<?x4x16xf32>
  return %o, %kall : tensor<?x4x16xf32>, tensor<?x2x?x4xf32>
}
}

// -----

// Nothing to split: the only path from a matmul's columns to a contracting
// matmul runs through a softmax over those columns. The error names the
// candidate and where it stops.
module attributes {kiln.opset = 17 : i64} {
// expected-error @+1 {{no matmul of @main can be split by columns up to a matmul that contracts over them (no transformer block or MLP found); e.g. 'kiln.matmul' stops at 'kiln.softmax': a softmax along the sharded dim}}
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w1 = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<2.0> : tensor<4x4xf32>
  %a = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %p = kiln.softmax %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = kiln.matmul %p, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
}

// -----

// An int8 (QDQ) MLP as kiln-fuse-qdq leaves it: the up projection's weight
// [N, K] keeps the rank's rows (its output columns) with their row sums,
// scales and bias; the down projection keeps the rank's share of K with
// the row sums recomputed over it (rank 1: 4 + 5 = 9, 6 + 7 = 13), no bias
// on rank 1 (added once, by rank 0), its result in f32 (a partial sum is
// not requantized), summed, then quantized as before.
// CHECK-LABEL: func.func @main
//   CHECK-DAG: %[[WU:.+]] = kiln.constant dense<{{\[}}[3, 3], [4, 4]]> : tensor<2x2xi8>
//   CHECK-DAG: %[[SU:.+]] = kiln.constant dense<[6, 8]> : tensor<2xi32>
//   CHECK-DAG: %[[CU:.+]] = kiln.constant dense<[3.000000e-01, 4.000000e-01]> : tensor<2xf32>
//   CHECK-DAG: %[[WD:.+]] = kiln.constant dense<{{\[}}[4, 5], [6, 7]]> : tensor<2x2xi8>
//   CHECK-DAG: %[[SD:.+]] = kiln.constant dense<[9, 13]> : tensor<2xi32>
//       CHECK: %[[U:.+]] = kiln.quantized_matmul %{{.+}}, %{{.+}}, %[[WU]], %{{.+}}, %[[SU]], %[[CU]], %{{.+}}, %{{.+}}, %{{.+}} : ({{.*}}) -> tensor<2x2xui8>
//       CHECK: %[[NONE:.+]] = kiln.none
//       CHECK: %[[P:.+]] = kiln.quantized_matmul %[[U]], %{{.+}}, %[[WD]], %{{.+}}, %[[SD]], %{{.+}}, %[[NONE]], %[[NONE]], %[[NONE]] : ({{.*}}) -> tensor<2x2xf32>
//       CHECK: %[[SUM:.+]] = kiln.all_reduce %[[P]] : tensor<2x2xf32>
//       CHECK: %[[Q:.+]] = kiln.quantize_linear %[[SUM]], %{{.+}}, %{{.+}} : (tensor<2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x2xui8>
//       CHECK: return %[[Q]]
module attributes {kiln.opset = 17 : i64} {
func.func @main(%x: tensor<2x2xui8>) -> tensor<2x2xui8> {
  %none = kiln.none
  %zp = kiln.constant dense<128> : tensor<ui8>
  %ys = kiln.constant dense<0.5> : tensor<f32>
  %wu = kiln.constant dense<[[1, 1], [2, 2], [3, 3], [4, 4]]> : tensor<4x2xi8>
  %su = kiln.constant dense<[2, 4, 6, 8]> : tensor<4xi32>
  %cu = kiln.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %bu = kiln.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %wd = kiln.constant dense<[[0, 1, 4, 5], [2, 3, 6, 7]]> : tensor<2x4xi8>
  %sd = kiln.constant dense<[10, 18]> : tensor<2xi32>
  %cd = kiln.constant dense<0.25> : tensor<2xf32>
  %bd = kiln.constant dense<[5, 6]> : tensor<2xi32>
  %u = kiln.quantized_matmul %x, %zp, %wu, %none, %su, %cu, %bu, %ys, %zp : (tensor<2x2xui8>, tensor<ui8>, tensor<4x2xi8>, none, tensor<4xi32>, tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<ui8>) -> tensor<2x4xui8>
  %d = kiln.quantized_matmul %u, %zp, %wd, %none, %sd, %cd, %bd, %ys, %zp : (tensor<2x4xui8>, tensor<ui8>, tensor<2x4xi8>, none, tensor<2xi32>, tensor<2xf32>, tensor<2xi32>, tensor<f32>, tensor<ui8>) -> tensor<2x2xui8>
  return %d : tensor<2x2xui8>
}
}

// -----

// repeat_kv as PyTorch exports it (Unsqueeze, Expand to a shape built from
// the cache's Shape, Reshape): the Shape of the sharded cache is read for
// its length only; the Expand's KV entry is divided, its repetition kept.
// CHECK-LABEL: func.func @main
//       CHECK: %[[LEN:.+]] = kiln.gather %{{.+}}, %{{.+}} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
//       CHECK: kiln.unsqueeze %{{.+}}, %{{.+}} : (tensor<?x1x?x4xf32>, tensor<1xi64>) -> tensor<?x1x1x?x4xf32>
//       CHECK: kiln.expand %{{.+}}, %{{.+}} : (tensor<?x1x1x?x4xf32>, tensor<5xi64>) -> tensor<?x1x2x?x4xf32>
//       CHECK: kiln.reshape %{{.+}}, %{{.+}} : (tensor<?x1x2x?x4xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
module attributes {kiln.opset = 17 : i64} {
func.func @main(%x: tensor<?x4x16xf32> {kiln.dims = ["batch", "", ""], kiln.name = "x"},
                %past: tensor<?x2x?x4xf32> {kiln.dims = ["batch", "", "past", ""], kiln.name = "past_key"})
    -> (tensor<?x4x16xf32>, tensor<?x2x?x4xf32>) {
  %none = kiln.none
  %wq = kiln.constant dense<0.25> : tensor<16x16xf32>
  %wk = kiln.constant dense<0.5> : tensor<16x8xf32>
  %wo = kiln.constant dense<1.0> : tensor<16x16xf32>
  %qs = kiln.constant dense<[0, 4, 4, 4]> : tensor<4xi64>
  %ks = kiln.constant dense<[0, 4, 2, 4]> : tensor<4xi64>
  %ms = kiln.constant dense<[0, 4, 16]> : tensor<3xi64>
  %two = kiln.constant dense<2> : tensor<i64>
  %zero = kiln.constant dense<0> : tensor<1xi64>
  %axis2 = kiln.constant dense<2> : tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %copy = kiln.constant dense<0> : tensor<1xi64>
  %kvn = kiln.constant dense<2> : tensor<1xi64>
  %rep = kiln.constant dense<2> : tensor<1xi64>
  %hd = kiln.constant dense<4> : tensor<1xi64>
  %heads = kiln.constant dense<4> : tensor<1xi64>
  %q = kiln.matmul %x, %wq : (tensor<?x4x16xf32>, tensor<16x16xf32>) -> tensor<?x4x16xf32>
  %q4 = kiln.reshape %q, %qs : (tensor<?x4x16xf32>, tensor<4xi64>) -> tensor<?x4x4x4xf32>
  %qt = kiln.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  %k = kiln.matmul %x, %wk : (tensor<?x4x16xf32>, tensor<16x8xf32>) -> tensor<?x4x8xf32>
  %k4 = kiln.reshape %k, %ks : (tensor<?x4x8xf32>, tensor<4xi64>) -> tensor<?x4x2x4xf32>
  %kt = kiln.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x2x4xf32>) -> tensor<?x2x4x4xf32>
  %kall = kiln.concat %past, %kt {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x4xf32>) -> tensor<?x2x?x4xf32>
  %shape = kiln.shape %kall : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %len = kiln.gather %shape, %two : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %len1 = kiln.unsqueeze %len, %zero : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %ku = kiln.unsqueeze %kall, %axis2 : (tensor<?x2x?x4xf32>, tensor<1xi64>) -> tensor<?x2x1x?x4xf32>
  %target = kiln.concat %one, %kvn, %rep, %len1, %hd {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %ke = kiln.expand %ku, %target : (tensor<?x2x1x?x4xf32>, tensor<5xi64>) -> tensor<?x2x2x?x4xf32>
  %rs = kiln.concat %copy, %heads, %len1, %hd {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kr = kiln.reshape %ke, %rs : (tensor<?x2x2x?x4xf32>, tensor<4xi64>) -> tensor<?x4x?x4xf32>
  %ktt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x4xf32>) -> tensor<?x4x4x?xf32>
  %s = kiln.matmul %qt, %ktt : (tensor<?x4x4x4xf32>, tensor<?x4x4x?xf32>) -> tensor<?x4x4x?xf32>
  %p = kiln.softmax %s : (tensor<?x4x4x?xf32>) -> tensor<?x4x4x?xf32>
  %pv = kiln.matmul %p, %kr : (tensor<?x4x4x?xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x4x4xf32>
  %at = kiln.transpose %pv {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  %am = kiln.reshape %at, %ms : (tensor<?x4x4x4xf32>, tensor<3xi64>) -> tensor<?x4x16xf32>
  %o = kiln.matmul %am, %wo : (tensor<?x4x16xf32>, tensor<16x16xf32>) -> tensor<?x4x16xf32>
  return %o, %kall : tensor<?x4x16xf32>, tensor<?x2x?x4xf32>
}
}

// -----

// Three heads over two ranks: the head split cannot be divided, so the
// first matmul stays whole on every rank, with a remark saying why; the
// next pair of matmuls by weights (12 -> 12 columns, then contracted) is
// split, with one all-reduce.
// CHECK-LABEL: func.func @main
//       CHECK: kiln.reshape %{{.+}}, %{{.+}} : (tensor<1x4x12xf32>, tensor<4xi64>) -> tensor<1x4x3x4xf32>
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} : (tensor<1x4x12xf32>, tensor<12x6xf32>) -> tensor<1x4x6xf32>
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} : (tensor<1x4x6xf32>, tensor<6x8xf32>) -> tensor<1x4x8xf32>
//       CHECK: kiln.all_reduce
module attributes {kiln.opset = 17 : i64} {
func.func @main(%x: tensor<1x4x12xf32>) -> tensor<1x4x12xf32> {
  %none = kiln.none
  %wq = kiln.constant dense<0.25> : tensor<12x12xf32>
  %wo = kiln.constant dense<0.5> : tensor<12x12xf32>
  %wu = kiln.constant dense<0.75> : tensor<12x8xf32>
  %wd = kiln.constant dense<1.0> : tensor<8x12xf32>
  %hs = kiln.constant dense<[1, 4, 3, 4]> : tensor<4xi64>
  %ms = kiln.constant dense<[1, 4, 12]> : tensor<3xi64>
  // expected-remark @+1 {{left whole on every rank: 'kiln.matmul' stops at 'kiln.reshape': a reshape that does not keep the sharded dim whole}}
  %q = kiln.matmul %x, %wq : (tensor<1x4x12xf32>, tensor<12x12xf32>) -> tensor<1x4x12xf32>
  %q4 = kiln.reshape %q, %hs : (tensor<1x4x12xf32>, tensor<4xi64>) -> tensor<1x4x3x4xf32>
  %p = kiln.softmax %q4 : (tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  %m = kiln.reshape %p, %ms : (tensor<1x4x3x4xf32>, tensor<3xi64>) -> tensor<1x4x12xf32>
  %o = kiln.matmul %m, %wo : (tensor<1x4x12xf32>, tensor<12x12xf32>) -> tensor<1x4x12xf32>
  %u = kiln.matmul %o, %wu : (tensor<1x4x12xf32>, tensor<12x8xf32>) -> tensor<1x4x8xf32>
  %r = kiln.relu %u : tensor<1x4x8xf32>
  %d = kiln.matmul %r, %wd : (tensor<1x4x8xf32>, tensor<8x12xf32>) -> tensor<1x4x12xf32>
  return %d : tensor<1x4x12xf32>
}
}

// -----

// A packed QKV projection (GPT-2's c_attn, one [D, 3D] weight) cut by a
// Split, and one cut by Slices (nn.MultiheadAttention's in_proj): each of
// Q, K, V keeps the rank's share of its own columns (rank 1: columns 2-3 of
// each 4-column segment), the split sizes and slice bounds are divided.
// CHECK-LABEL: func.func @main
//       CHECK: kiln.constant dense<{{\[}}[2.000000e+00, 3.000000e+00, 6.000000e+00, 7.000000e+00, 1.000000e+01, 1.100000e+01]]> : tensor<1x6xf32>
//       CHECK: %[[SIZES:.+]] = kiln.constant dense<2> : tensor<3xi64>
//       CHECK: %[[QKV:.+]] = kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x1xf32>, tensor<1x6xf32>) -> tensor<2x6xf32>
//       CHECK: kiln.split %[[QKV]], %[[SIZES]] {axis = 1 : i64{{.*}}} : (tensor<2x6xf32>, tensor<3xi64>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
//       CHECK: kiln.all_reduce
//       CHECK: %[[QKV2:.+]] = kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x1xf32>, tensor<1x6xf32>) -> tensor<2x6xf32>
//       CHECK: kiln.slice %[[QKV2]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : ({{.*}}) -> tensor<2x2xf32>
//       CHECK: %[[HI:.+]] = kiln.constant dense<6> : tensor<1xi64>
//       CHECK: kiln.slice %[[QKV2]], %{{.+}}, %[[HI]], %{{.+}}, %{{.+}} : ({{.*}}) -> tensor<2x2xf32>
//       CHECK: kiln.all_reduce
module attributes {kiln.opset = 17 : i64} {
func.func @main(%x: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %none = kiln.none
  %w = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]]> : tensor<1x12xf32>
  %wo = kiln.constant dense<1.0> : tensor<4x4xf32>
  %sizes = kiln.constant dense<4> : tensor<3xi64>
  %qkv = kiln.matmul %x, %w : (tensor<2x1xf32>, tensor<1x12xf32>) -> tensor<2x12xf32>
  %p:3 = kiln.split %qkv, %sizes {axis = 1 : i64} : (tensor<2x12xf32>, tensor<3xi64>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %m = kiln.mul %p#0, %p#1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %a = kiln.add %m, %p#2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %o = kiln.matmul %a, %wo : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %qkv2 = kiln.matmul %x, %w : (tensor<2x1xf32>, tensor<1x12xf32>) -> tensor<2x12xf32>
  %s0 = kiln.constant dense<0> : tensor<1xi64>
  %s4 = kiln.constant dense<4> : tensor<1xi64>
  %s8 = kiln.constant dense<8> : tensor<1xi64>
  %s12 = kiln.constant dense<12> : tensor<1xi64>
  %ax = kiln.constant dense<1> : tensor<1xi64>
  %q2 = kiln.slice %qkv2, %s0, %s4, %ax, %none : (tensor<2x12xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x4xf32>
  %k2 = kiln.slice %qkv2, %s4, %s8, %ax, %none : (tensor<2x12xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x4xf32>
  %v2 = kiln.slice %qkv2, %s8, %s12, %ax, %none : (tensor<2x12xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x4xf32>
  %m2 = kiln.mul %q2, %k2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %a2 = kiln.add %m2, %v2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %o2 = kiln.matmul %a2, %wo : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %r = kiln.add %o, %o2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
}
