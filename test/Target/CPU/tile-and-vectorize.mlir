// RUN: kiln-opt %s -split-input-file --kiln-cpu-tile-and-vectorize --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-tile-and-vectorize="mr=6 nr=16" --canonicalize --kiln-cpu-lower-vectors | FileCheck %s --check-prefix=FMA

// A GEMM: 32x256 thread blocks (scf.forall), 8x32 register tiles, K one step
// at a time with the accumulator in registers (a vector iter_arg of the K
// loop, starting from the fused zero fill), an 8x32x1 vector.contract.
// CHECK-LABEL: func.func @matmul
//   CHECK-NOT:   linalg.fill
//       CHECK:   scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (128, 1024) step (32, 256)
//       CHECK:     scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C8:.+]] iter_args
//       CHECK:       scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C32:.+]] iter_args
//       CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (vector<8x32xf32>)
//       CHECK:           vector.transfer_read {{.*}} vector<8x1xf32>
//       CHECK:           vector.transfer_read {{.*}} vector<32xf32>
//       CHECK:           vector.contract {{.*}}, %[[ACC]] : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
//       CHECK:         vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<8x32xf32>
//       CHECK:     tensor.parallel_insert_slice
//   CHECK-NOT:   linalg.matmul
// FMA-LABEL: func.func @matmul
//       FMA:   scf.forall
//       FMA:   vector.fma {{.*}} : vector<16xf32>
//   FMA-NOT:   vector.contract
func.func @matmul(%a: tensor<128x256xf32>, %b: tensor<256x1024xf32>) -> tensor<128x1024xf32> {
  %cst = arith.constant 0.0 : f32
  %0 = tensor.empty() : tensor<128x1024xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<128x1024xf32>) -> tensor<128x1024xf32>
  %2 = linalg.matmul ins(%a, %b : tensor<128x256xf32>, tensor<256x1024xf32>) outs(%1 : tensor<128x1024xf32>) -> tensor<128x1024xf32>
  return %2 : tensor<128x1024xf32>
}

// -----

// Attention's batched GEMM: one batch index and 32 rows per block (N = 64 is
// a single block, so that forall dimension folds away).
// CHECK-LABEL: func.func @batch_matmul
//       CHECK:   scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (8, 64) step (1, 32)
//       CHECK:     vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
//   CHECK-NOT:   linalg.batch_matmul
func.func @batch_matmul(%a: tensor<8x64x64xf32>, %b: tensor<8x64x64xf32>, %c: tensor<8x64x64xf32>) -> tensor<8x64x64xf32> {
  %0 = linalg.batch_matmul ins(%a, %b : tensor<8x64x64xf32>, tensor<8x64x64xf32>) outs(%c : tensor<8x64x64xf32>) -> tensor<8x64x64xf32>
  return %0 : tensor<8x64x64xf32>
}

// -----

// Sizes that are not multiples of the register tile: the rows in static
// pieces (M = 10: one 8-row tile and a 2-row one, never a masked 8-row tile
// that computes all 8 rows), N = 20 one 20-wide tile. One thread block
// covers it all, so there is no scf.forall left.
// CHECK-LABEL: func.func @matmul_edges
//   CHECK-NOT:   vector.mask
//       CHECK:   scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (vector<8x20xf32>)
//       CHECK:     vector.contract {{.*}} : vector<8x1xf32>, vector<1x20xf32> into vector<8x20xf32>
//       CHECK:   scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (vector<2x20xf32>)
//       CHECK:     vector.contract {{.*}} : vector<2x1xf32>, vector<1x20xf32> into vector<2x20xf32>
//   CHECK-NOT:   vector.mask
//   CHECK-NOT:   linalg.matmul
func.func @matmul_edges(%a: tensor<10x7xf32>, %b: tensor<7x20xf32>, %c: tensor<10x20xf32>) -> tensor<10x20xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<10x7xf32>, tensor<7x20xf32>) outs(%c : tensor<10x20xf32>) -> tensor<10x20xf32>
  return %0 : tensor<10x20xf32>
}

// -----

// A static M that is not a multiple of the 32-row blocks: a block is a whole
// one or the last one (12 rows), each static (an scf.index_switch over the
// two), the last one an 8-row and a 4-row register tile (4 x 64: a tile of
// fewer rows is wider, as many accumulators); the zero fill fused into both.
// N = 256 is two blocks of 128 columns (gemmBlockColumns: an even split).
// CHECK-LABEL: func.func @matmul_uneven
//   CHECK-NOT:   linalg.fill
//       CHECK:   scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (44, 256) step (32, 128)
//       CHECK:     scf.index_switch %{{.+}} -> tensor<?x128xf32>
//       CHECK:     case 32 {
//       CHECK:       vector.contract {{.*}} into vector<8x32xf32>
//       CHECK:     case 12 {
//       CHECK:       vector.contract {{.*}} into vector<8x32xf32>
//       CHECK:       vector.contract {{.*}} : vector<4x1xf32>, vector<1x64xf32> into vector<4x64xf32>
//   CHECK-NOT:   vector.mask
func.func @matmul_uneven(%a: tensor<44x64xf32>, %b: tensor<64x256xf32>) -> tensor<44x256xf32> {
  %cst = arith.constant 0.0 : f32
  %0 = tensor.empty() : tensor<44x256xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<44x256xf32>) -> tensor<44x256xf32>
  %2 = linalg.matmul ins(%a, %b : tensor<44x64xf32>, tensor<64x256xf32>) outs(%1 : tensor<44x256xf32>) -> tensor<44x256xf32>
  return %2 : tensor<44x256xf32>
}

// -----

// NCHW convolution: an im2col copy whose innermost loop (ow) is contiguous,
// then a batch_matmul with the filter broadcast over the batch, tiled and
// vectorized like the GEMMs. Each thread block (256 columns = 8 whole output
// rows) copies only its own im2col tile (the copy is fused into the block),
// one output row (ow = 32) per vector load and store.
// CHECK-LABEL: func.func @conv
//       CHECK:   scf.forall (%[[P:.+]]) = (0) to (1024) step (256)
//       CHECK:     %[[ROW:.+]] = affine.apply {{.*}}(%[[P]])
//       CHECK:     %[[IN:.+]] = tensor.extract_slice %{{.+}}[0, 0, %[[ROW]], 0] [1, 4, 10, 34]
//       CHECK:     tensor.extract_slice %[[IN]]{{.*}} [1, 1, 1, 32] [1, 1, 1, 1] : tensor<1x4x10x34xf32> to tensor<1x1x1x32xf32>
//       CHECK:     vector.transfer_read {{.*}} : tensor<1x1x1x32xf32>, vector<32xf32>
//       CHECK:     vector.transfer_write {{.*}} : vector<32xf32>, tensor<1x1x1x1x1x32xf32>
//   CHECK-NOT:     linalg.generic
//       CHECK:     tensor.collapse_shape {{.*}} into tensor<1x36x256xf32>
//       CHECK:     vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
//       CHECK:   tensor.expand_shape {{.*}} into tensor<1x16x32x32xf32>
//   CHECK-NOT:   linalg.conv_2d_nchw_fchw
func.func @conv(%in: tensor<1x4x34x34xf32>, %f: tensor<16x4x3x3xf32>, %out: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%in, %f : tensor<1x4x34x34xf32>, tensor<16x4x3x3xf32>) outs(%out : tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  return %0 : tensor<1x16x32x32xf32>
}

// -----

// Half-precision operands with float32 accumulation (the lowering of fp16
// and bf16 matmuls): the same tiles; the reads stay f16/bf16 and widen in
// registers after the contraction is lowered to FMAs, so half weights are never copied to float32.
// CHECK-LABEL: func.func @matmul_f16
//       CHECK:   scf.forall
//       CHECK:           vector.transfer_read {{.*}} vector<8x1xf16>
//       CHECK:           vector.transfer_read {{.*}} vector<32xf16>
//       CHECK:           vector.contract {{.*}} : vector<8x1xf16>, vector<1x32xf16> into vector<8x32xf32>
//   CHECK-NOT:   linalg.matmul
// FMA-LABEL: func.func @matmul_f16
//       FMA:   arith.extf {{.*}} : vector<16xf16> to vector<16xf32>
//       FMA:   vector.fma {{.*}} : vector<16xf32>
func.func @matmul_f16(%a: tensor<64x128xf16>, %b: tensor<128x256xf16>, %c: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x128xf16>, tensor<128x256xf16>) outs(%c : tensor<64x256xf32>) -> tensor<64x256xf32>
  return %0 : tensor<64x256xf32>
}

// -----

// The bias broadcast that initializes a convolution's accumulator is rebuilt
// on the [n, f, oh*ow] accumulator and fused into the thread blocks: each
// register tile starts from the bias (a vector.broadcast of 8 values), no
// loop over the whole output is left before the blocks.
// CHECK-LABEL: func.func @conv_bias
//   CHECK-NOT:   linalg.generic {{.*}}outs(%{{.*}} : tensor<1x16x32x32xf32>)
//       CHECK:   scf.forall (%{{.+}}) = (0) to (1024) step (256)
//       CHECK:     tensor.extract_slice %arg2[%{{.+}}] [8] [1] : tensor<16xf32> to tensor<8xf32>
//       CHECK:     vector.broadcast %{{.+}} : vector<8xf32> to vector<32x8xf32>
//       CHECK:     vector.contract
//       CHECK:   tensor.expand_shape {{.*}} into tensor<1x16x32x32xf32>
#bias = affine_map<(d0, d1, d2, d3) -> (d1)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv_bias(%in: tensor<1x4x34x34xf32>, %f: tensor<16x4x3x3xf32>, %b: tensor<16xf32>) -> tensor<1x16x32x32xf32> {
  %e = tensor.empty() : tensor<1x16x32x32xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%b : tensor<16xf32>) outs(%e : tensor<1x16x32x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<1x16x32x32xf32>
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%in, %f : tensor<1x4x34x34xf32>, tensor<16x4x3x3xf32>) outs(%init : tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  return %0 : tensor<1x16x32x32xf32>
}

// -----

// bf16 batched (attention scores at bf16).
// CHECK-LABEL: func.func @batch_matmul_bf16
//       CHECK:   scf.forall
//       CHECK:           vector.contract {{.*}} : vector<8x1xbf16>, vector<1x32xbf16> into vector<8x32xf32>
func.func @batch_matmul_bf16(%a: tensor<4x64x64xbf16>, %b: tensor<4x64x64xbf16>, %c: tensor<4x64x64xf32>) -> tensor<4x64x64xf32> {
  %0 = linalg.batch_matmul ins(%a, %b : tensor<4x64x64xbf16>, tensor<4x64x64xbf16>) outs(%c : tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  return %0 : tensor<4x64x64xf32>
}

// -----

// Mixed half types (not something the lowering makes): left alone.
// CHECK-LABEL: func.func @matmul_mixed_halves
//       CHECK:   linalg.matmul
//   CHECK-NOT:   scf.forall
func.func @matmul_mixed_halves(%a: tensor<16x16xf16>, %b: tensor<16x16xbf16>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x16xf16>, tensor<16x16xbf16>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>
}

// -----

// A half-precision result (no float32 accumulator): left alone.
// CHECK-LABEL: func.func @matmul_f16_out
//       CHECK:   linalg.matmul
//   CHECK-NOT:   scf.forall
func.func @matmul_f16_out(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf16>) -> tensor<16x16xf16> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x16xf16>, tensor<16x16xf16>) outs(%c : tensor<16x16xf16>) -> tensor<16x16xf16>
  return %0 : tensor<16x16xf16>
}

// -----

// The zero padding of an elementwise result (a Relu before the next
// convolution): the Relu writes into the interior of the zero-filled padded
// tensor, no tensor.pad (a copy into the padded buffer) is left.
// CHECK-LABEL: func.func @relu_pad
//       CHECK:   %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x4x10x10xf32>)
//       CHECK:   %[[IN:.+]] = tensor.extract_slice %[[FILL]][0, 0, 1, 1] [1, 4, 8, 8] [1, 1, 1, 1]
//       CHECK:   %[[RELU:.+]] = linalg.generic {{.*}} outs(%[[IN]] : tensor<1x4x8x8xf32>)
//       CHECK:     arith.maximumf
//       CHECK:   tensor.insert_slice %[[RELU]] into %[[FILL]][0, 0, 1, 1] [1, 4, 8, 8] [1, 1, 1, 1]
//   CHECK-NOT:   tensor.pad
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @relu_pad(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x10x10xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x4x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x8x8xf32>) outs(%e : tensor<1x4x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x4x8x8xf32>
  %p = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x4x8x8xf32> to tensor<1x4x10x10xf32>
  return %p : tensor<1x4x10x10xf32>
}

// -----

// Not float32: left alone.
// CHECK-LABEL: func.func @matmul_i32
//       CHECK:   linalg.matmul
//   CHECK-NOT:   scf.forall
func.func @matmul_i32(%a: tensor<16x16xi32>, %b: tensor<16x16xi32>, %c: tensor<16x16xi32>) -> tensor<16x16xi32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x16xi32>, tensor<16x16xi32>) outs(%c : tensor<16x16xi32>) -> tensor<16x16xi32>
  return %0 : tensor<16x16xi32>
}
