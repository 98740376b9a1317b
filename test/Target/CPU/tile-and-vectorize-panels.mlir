// kiln-cpu-tile-and-vectorize on a weight that kiln-cpu-pack-weights stored
// as [panels, K, 256] column panels (pack-weights.mlir): each thread block
// of 256 columns reads its panel, a contiguous [K, cols] slab of the
// argument (the last, padded panel's first 232 columns here: N = 1000 has
// no even split into whole blocks, gemmBlockColumns keeps 256), and a
// tensor.extract of the [K, N] view (a Gather of a tied embedding) reads
// [n / 256, k, n % 256]: the view is never materialized.
// RUN: kiln-opt %s --kiln-cpu-tile-and-vectorize --canonicalize --cse | FileCheck %s

// CHECK-DAG: #[[$DIV:.+]] = affine_map<(d0) -> (d0 floordiv 256)>
// CHECK-DAG: #[[$SDIV:.+]] = affine_map<()[s0] -> (s0 floordiv 256)>
// CHECK-DAG: #[[$SMOD:.+]] = affine_map<()[s0] -> (s0 mod 256)>
// CHECK-LABEL: func.func @main(
//   CHECK-NOT:   linalg.transpose
//       CHECK:   scf.forall (%[[N:.+]]) = (0) to (1000) step (256)
//       CHECK:     %[[COLS:.+]] = affine.min #{{.+}}(%[[N]])
//       CHECK:     %[[PANEL:.+]] = affine.apply #[[$DIV]](%[[N]])
//       CHECK:     tensor.extract_slice %arg1[%[[PANEL]], 0, 0] [1, 8, %[[COLS]]] [1, 1, 1] : tensor<4x8x256xf32> to tensor<8x?xf32>
//       CHECK:     vector.contract
//       CHECK:   %[[P:.+]] = affine.apply #[[$SDIV]]()[%arg3]
//       CHECK:   %[[C:.+]] = affine.apply #[[$SMOD]]()[%arg3]
//       CHECK:   tensor.extract %arg1[%[[P]], %arg2, %[[C]]] : tensor<4x8x256xf32>
//   CHECK-NOT:   linalg.transpose
//   CHECK-NOT:   linalg.matmul
func.func @main(%x: tensor<4x8xf32>, %w: tensor<4x8x256xf32> {kiln.weight = "w"}, %k: index, %n: index) -> (tensor<4x1000xf32>, f32) {
  %e = tensor.empty() : tensor<8x4x256xf32>
  %t = linalg.transpose ins(%w : tensor<4x8x256xf32>) outs(%e : tensor<8x4x256xf32>) permutation = [1, 0, 2]
  %c = tensor.collapse_shape %t [[0], [1, 2]] : tensor<8x4x256xf32> into tensor<8x1024xf32>
  %s = tensor.extract_slice %c[0, 0] [8, 1000] [1, 1] : tensor<8x1024xf32> to tensor<8x1000xf32>
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<4x1000xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<4x1000xf32>) -> tensor<4x1000xf32>
  %r = linalg.matmul ins(%x, %s : tensor<4x8xf32>, tensor<8x1000xf32>) outs(%f : tensor<4x1000xf32>) -> tensor<4x1000xf32>
  %v = tensor.extract %s[%k, %n] : tensor<8x1000xf32>
  return %r, %v : tensor<4x1000xf32>, f32
}
