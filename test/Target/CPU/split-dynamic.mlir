// RUN: kiln-opt %s -split-input-file --kiln-cpu-split-dynamic --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-split-dynamic --kiln-cpu-tile-and-vectorize --canonicalize --cse | FileCheck %s --check-prefix=TILED

// A convolution with a run-time batch whose im2col the tile pass would
// materialize whole (20x20 output pixels: its 256-column thread blocks are
// not whole rows): a loop over the images, each a static [1, C, H, W]
// convolution into a slice of the loop-carried result;
// its bias broadcast is tiled into the loop with it (it stays the fusable
// init of the static convolution). The extent comes from the result's
// tensor.empty.
// CHECK-LABEL: func.func @conv
//  CHECK-SAME:   (%[[X:.+]]: tensor<?x8x20x20xf32>, %[[W:.+]]: tensor<16x8x3x3xf32>, %[[BIAS:.+]]: tensor<16xf32>)
//       CHECK:   %[[N:.+]] = tensor.dim %[[X]], %{{.+}}
//       CHECK:   %[[PADDED:.+]] = tensor.pad
//       CHECK:   %[[EMPTY:.+]] = tensor.empty(%[[N]]) : tensor<?x16x20x20xf32>
//   CHECK-NOT:   linalg.generic
//       CHECK:   %[[LOOP:.+]] = scf.for %[[I:.+]] = %{{.+}} to %[[N]] step %{{.+}} iter_args(%[[ACC:.+]] = %[[EMPTY]])
//       CHECK:     %[[OUT:.+]] = tensor.extract_slice %[[ACC]][%[[I]], 0, 0, 0] [1, 16, 20, 20] [1, 1, 1, 1] : tensor<?x16x20x20xf32> to tensor<1x16x20x20xf32>
//       CHECK:     %[[INIT:.+]] = linalg.generic {{.*}} ins(%[[BIAS]] : tensor<16xf32>) outs(%[[OUT]] : tensor<1x16x20x20xf32>)
//       CHECK:     %[[IMAGE:.+]] = tensor.extract_slice %[[PADDED]][%[[I]], 0, 0, 0] [1, 8, 22, 22] [1, 1, 1, 1] : tensor<?x8x22x22xf32> to tensor<1x8x22x22xf32>
//       CHECK:     %[[CONV:.+]] = linalg.conv_2d_nchw_fchw {{.*}} ins(%[[IMAGE]], %[[W]] : tensor<1x8x22x22xf32>, tensor<16x8x3x3xf32>) outs(%[[INIT]] : tensor<1x16x20x20xf32>)
//       CHECK:     %[[INS:.+]] = tensor.insert_slice %[[CONV]] into %[[ACC]][%[[I]], 0, 0, 0] [1, 16, 20, 20]
//       CHECK:     scf.yield %[[INS]]
//       CHECK:   return %[[LOOP]]
// Then the static kernel for each image: the Relu writes into the padded
// buffer (its run-time batch from its init), and each image is the im2col
// GEMM with the bias read into the accumulators and the result written in
// place (no copy of a separate buffer into the loop's result).
// TILED-LABEL: func.func @conv
//       TILED:   %[[PAD:.+]] = tensor.empty(%{{.+}}) : tensor<?x8x22x22xf32>
//       TILED:   linalg.fill {{.*}} outs(%[[PAD]] : tensor<?x8x22x22xf32>)
//   TILED-NOT:   tensor.pad
//       TILED:   scf.for
//       TILED:     tensor.collapse_shape %{{.+}} {{\[}}[0], [1], [2, 3]] : tensor<1x16x20x20xf32> into tensor<1x16x400xf32>
//       TILED:     vector.transfer_read %{{.+}} : tensor<8xf32>, vector<8xf32>
//       TILED:     vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
//   TILED-NOT:   linalg.conv_2d_nchw_fchw
#bias = affine_map<(d0, d1, d2, d3) -> (d1)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv(%x: tensor<?x8x20x20xf32>, %w: tensor<16x8x3x3xf32>, %bias: tensor<16xf32>) -> tensor<?x16x20x20xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x8x20x20xf32>
  %e0 = tensor.empty(%n) : tensor<?x8x20x20xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<?x8x20x20xf32>) outs(%e0 : tensor<?x8x20x20xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<?x8x20x20xf32>
  %padded = tensor.pad %relu low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<?x8x20x20xf32> to tensor<?x8x22x22xf32>
  %e = tensor.empty(%n) : tensor<?x16x20x20xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<16xf32>) outs(%e : tensor<?x16x20x20xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<?x16x20x20xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %w : tensor<?x8x22x22xf32>, tensor<16x8x3x3xf32>) outs(%init : tensor<?x16x20x20xf32>) -> tensor<?x16x20x20xf32>
  return %r : tensor<?x16x20x20xf32>
}

// -----

// A convolution whose im2col the tile pass fuses into its thread blocks
// (16x16 output pixels: one 256-column block of whole rows) keeps its
// run-time batch: one dimension of the thread blocks, one parallel region
// for the whole batch, each block copying its own im2col tile, as with a
// static batch.
// CHECK-LABEL: func.func @conv_fused
//   CHECK-NOT:   scf.for
//       CHECK:   linalg.conv_2d_nchw_fchw {{.*}} -> tensor<?x16x16x16xf32>
// TILED-LABEL: func.func @conv_fused
//       TILED:   %[[N:.+]] = tensor.dim %{{.+}}, %{{.+}} : tensor<?x8x18x18xf32>
//       TILED:   scf.forall (%{{.+}}) in (%[[N]])
//       TILED:     tensor.extract_slice {{.*}} to tensor<1x8x3x3x16x16xf32>
//       TILED:     vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
//   TILED-NOT:   linalg.conv_2d_nchw_fchw
func.func @conv_fused(%x: tensor<?x8x18x18xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<?x16x16x16xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x8x18x18xf32>
  %e = tensor.empty(%n) : tensor<?x16x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x16x16x16xf32>) -> tensor<?x16x16x16xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<?x8x18x18xf32>, tensor<16x8x3x3xf32>) outs(%f : tensor<?x16x16x16xf32>) -> tensor<?x16x16x16xf32>
  return %r : tensor<?x16x16x16xf32>
}

// -----

// Static convolutions, and dynamic ones with another run-time extent, are
// left alone.
// CHECK-LABEL: func.func @not_split
//   CHECK-NOT:   scf.for
//       CHECK:   linalg.conv_2d_nchw_fchw
//       CHECK:   linalg.conv_2d_nchw_fchw
// (The static one is the tile pass's; the other stays a plain loop nest.)
// TILED-LABEL: func.func @not_split
//       TILED:   linalg.conv_2d_nchw_fchw {{.*}} -> tensor<?x16x?x16xf32>
func.func @not_split(%x: tensor<2x8x18x18xf32>, %w: tensor<16x8x3x3xf32>, %init: tensor<2x16x16x16xf32>,
                     %y: tensor<?x8x?x18xf32>, %init2: tensor<?x16x?x16xf32>) -> (tensor<2x16x16x16xf32>, tensor<?x16x?x16xf32>) {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<2x8x18x18xf32>, tensor<16x8x3x3xf32>) outs(%init : tensor<2x16x16x16xf32>) -> tensor<2x16x16x16xf32>
  %s = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%y, %w : tensor<?x8x?x18xf32>, tensor<16x8x3x3xf32>) outs(%init2 : tensor<?x16x?x16xf32>) -> tensor<?x16x?x16xf32>
  return %r, %s : tensor<2x16x16x16xf32>, tensor<?x16x?x16xf32>
}

// -----

// A matmul with a run-time M (the tile pass's own): one parallel region of
// 32 x 256 thread blocks over the run-time rows, as for a static M; a block
// whose row count is known at run time only is a loop of whole 8-row
// register tiles and the remainder as static pieces of 4, 2 and 1 rows, each
// under an scf.if on its bit (M = 1 is the 1-row tile alone, M = 7 the three
// pieces); a tile of fewer rows is wider, as many accumulators: 1 x 256,
// 2 x 128, 4 x 64.
// The zero fill is tiled into each piece and fused into its register tiles.
// TILED-LABEL: func.func @matmul_dynamic_m
//   TILED-NOT:   linalg.fill
//       TILED:   scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (%{{.+}}, 512) step (32, 256)
//       TILED:     %[[ROWS:.+]] = affine.min
//       TILED:     %[[WHOLE:.+]] = affine.apply #{{.+}}()[%[[ROWS]]]
//       TILED:     scf.for %{{.+}} = %{{.+}} to %[[WHOLE]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (tensor<?x256xf32>)
//       TILED:       vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
//       TILED:     %[[REST:.+]] = arith.subi %[[ROWS]], %[[WHOLE]]
//       TILED:     arith.andi %[[REST]], %c4
//       TILED:     scf.if %{{.+}} -> (tensor<?x256xf32>) {
//       TILED:       vector.contract {{.*}} : vector<4x1xf32>, vector<1x64xf32> into vector<4x64xf32>
//       TILED:     arith.andi %[[REST]], %c2
//       TILED:     scf.if
//       TILED:       vector.contract {{.*}} : vector<2x1xf32>, vector<1x128xf32> into vector<2x128xf32>
//       TILED:     arith.andi %[[REST]], %c1
//       TILED:     scf.if
//       TILED:       tensor.extract_slice {{.*}} to tensor<1x256xf32>
//       TILED:       vector.contract {{.*}} : vector<1xf32>, vector<1x256xf32> into vector<256xf32>
//   TILED-NOT:   vector.mask
//   TILED-NOT:   linalg.matmul
func.func @matmul_dynamic_m(%a: tensor<?x256xf32>, %b: tensor<256x512xf32>) -> tensor<?x512xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x256xf32>
  %e = tensor.empty(%m) : tensor<?x512xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x512xf32>) -> tensor<?x512xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x256xf32>, tensor<256x512xf32>) outs(%f : tensor<?x512xf32>) -> tensor<?x512xf32>
  return %r : tensor<?x512xf32>
}

// -----

// Attention's scores with run-time batch, rows and columns: one batch index
// per block, the rows in static pieces, the run-time columns in masked
// register tiles whose accumulator still stays in registers across K (the
// masks are hoisted out of the K loop with the transfers).
// TILED-LABEL: func.func @scores
//       TILED:   scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) = (0, 0, 0) to (%{{.+}}, %{{.+}}, %{{.+}}) step (1, 32, 256)
//       TILED:     arith.andi %{{.+}}, %c1
//       TILED:     scf.if
//       TILED:       %[[MASK:.+]] = vector.create_mask %{{.+}} : vector<32xi1>
//       TILED:       %[[ACC:.+]] = vector.transfer_read {{.*}}, %[[MASK]] {{.*}} : tensor<1x1x?xf32>, vector<32xf32>
//       TILED:       scf.for {{.*}} iter_args(%{{.+}} = %[[ACC]]) -> (vector<32xf32>)
//       TILED:         vector.mask
//   TILED-NOT:   linalg.batch_matmul
func.func @scores(%q: tensor<?x?x32xf32>, %k: tensor<?x32x?xf32>, %init: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %r = linalg.batch_matmul ins(%q, %k : tensor<?x?x32xf32>, tensor<?x32x?xf32>) outs(%init : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}
