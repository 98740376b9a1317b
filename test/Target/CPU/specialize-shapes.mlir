// RUN: kiln-opt %s -split-input-file --kiln-cpu-specialize-shapes --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-specialize-shapes --kiln-cpu-split-dynamic --kiln-cpu-tile-and-vectorize --canonicalize --cse | FileCheck %s --check-prefix=TILED

// --shape-hints m:1..16..64 (kiln.shape_hints): a run-time M of up to 64
// rows is too many sizes for a static copy each; the matmul gets one for
// opt (16 rows), its zero fill with it, and the dynamic matmul for every
// other M.
// CHECK-LABEL: func.func @matmul_opt
//  CHECK-SAME:   (%[[A:.+]]: tensor<?x256xf32> {{.*}}, %[[B:.+]]: tensor<256x512xf32>)
//       CHECK:   %[[M:.+]] = tensor.dim %[[A]], %{{.+}}
//  CHECK-NEXT:   %[[R:.+]] = scf.index_switch %[[M]] -> tensor<?x512xf32>
//  CHECK-NEXT:   case 16 {
//  CHECK-NEXT:     %[[E16:.+]] = tensor.empty() : tensor<16x512xf32>
//  CHECK-NEXT:     %[[F16:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E16]] : tensor<16x512xf32>)
//  CHECK-NEXT:     %[[A16:.+]] = tensor.cast %[[A]] : tensor<?x256xf32> to tensor<16x256xf32>
//  CHECK-NEXT:     %[[MM16:.+]] = linalg.matmul ins(%[[A16]], %[[B]] : tensor<16x256xf32>, tensor<256x512xf32>) outs(%[[F16]] : tensor<16x512xf32>)
//       CHECK:     %[[BACK:.+]] = tensor.cast %[[MM16]] : tensor<16x512xf32> to tensor<?x512xf32>
//       CHECK:     scf.yield %[[BACK]]
//       CHECK:   default {
//  CHECK-NEXT:     %[[EMPTY:.+]] = tensor.empty(%[[M]]) : tensor<?x512xf32>
//  CHECK-NEXT:     %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[EMPTY]] : tensor<?x512xf32>)
//       CHECK:     %[[MM:.+]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<?x256xf32>, tensor<256x512xf32>) outs(%[[F]] : tensor<?x512xf32>)
//       CHECK:     scf.yield %[[MM]]
//       CHECK:   linalg.generic {{.*}} ins(%[[R]] : tensor<?x512xf32>)
// The copy for opt is tiled as a static M = 16 is: thread blocks of all 16
// rows (only the columns are split), each two whole 8-row register tiles
// (no remainder switch); the default keeps the dynamic tiling (32-row
// blocks, a loop of 8-row tiles and the remainder in 4-, 2- and 1-row
// pieces).
// TILED-LABEL: func.func @matmul_opt
//       TILED:   scf.index_switch
//       TILED:   case 16 {
//       TILED:     scf.forall (%{{.+}}) = (0) to (512) step (256) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<16x512xf32>)
//       TILED:       scf.for %{{.+}} = %c0 to %c16 step %c8
//   TILED-NOT:     scf.index_switch
//       TILED:     vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
//       TILED:   default {
//       TILED:     scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (%{{.+}}, 512) step (32, 256)
//       TILED:       arith.andi %{{.+}}, %c4
//       TILED:       scf.if
module attributes {kiln.symbols = ["m"], kiln.shape_hints = {m = array<i64: 1, 16, 64>}} {
func.func @matmul_opt(%a: tensor<?x256xf32> {kiln.shape = affine_map<()[s0] -> (s0, 256)>}, %b: tensor<256x512xf32>) -> tensor<?x512xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x256xf32>
  %e = tensor.empty(%m) : tensor<?x512xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x512xf32>) -> tensor<?x512xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x256xf32>, tensor<256x512xf32>) outs(%f : tensor<?x512xf32>) -> tensor<?x512xf32>
  %relu = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<?x512xf32>) outs(%r : tensor<?x512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %max = arith.maximumf %in, %zero : f32
    linalg.yield %max : f32
  } -> tensor<?x512xf32>
  return %relu : tensor<?x512xf32>
}
}

// -----

// The same matmul hinted m:1..3..64: its static copy is for 3 rows (blocks
// of 3 rows, 3 x 64 register tiles, no row loop): the tiling follows opt.
// CHECK-LABEL: func.func @matmul_opt3
//       CHECK:   scf.index_switch %{{.+}} -> tensor<?x512xf32>
//  CHECK-NEXT:   case 3 {
//       CHECK:     linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<3x256xf32>, tensor<256x512xf32>) outs(%{{.+}} : tensor<3x512xf32>)
// TILED-LABEL: func.func @matmul_opt3
//       TILED:   case 3 {
//       TILED:     scf.forall (%{{.+}}) = (0) to (512) step (256) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<3x512xf32>)
//   TILED-NOT:       scf.for %{{.+}} = %c0 to %c{{[0-9]+}} step %c8
//       TILED:     vector.contract {{.*}} : vector<3x1xf32>, vector<1x64xf32> into vector<3x64xf32>
//       TILED:   default {
module attributes {kiln.symbols = ["m"], kiln.shape_hints = {m = array<i64: 1, 3, 64>}} {
func.func @matmul_opt3(%a: tensor<?x256xf32> {kiln.shape = affine_map<()[s0] -> (s0, 256)>}, %b: tensor<256x512xf32>) -> tensor<?x512xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x256xf32>
  %e = tensor.empty(%m) : tensor<?x512xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x512xf32>) -> tensor<?x512xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x256xf32>, tensor<256x512xf32>) outs(%f : tensor<?x512xf32>) -> tensor<?x512xf32>
  %relu = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<?x512xf32>) outs(%r : tensor<?x512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %max = arith.maximumf %in, %zero : f32
    linalg.yield %max : f32
  } -> tensor<?x512xf32>
  return %relu : tensor<?x512xf32>
}
}

// -----

// A small max: batch:1..2..3 is three sizes, each gets the static
// convolution (its bias broadcast with it), so kiln-cpu-split-dynamic
// leaves them whole (the im2col GEMM of a static batch, one parallel
// region) and only the default, never reached within the artifact's
// constraints, is the loop of one-image convolutions.
// CHECK-LABEL: func.func @conv_small_range
//       CHECK:   %[[N:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x8x20x20xf32>
//       CHECK:   scf.index_switch %[[N]] -> tensor<?x16x18x18xf32>
//  CHECK-NEXT:   case 1 {
//       CHECK:     linalg.generic {{.*}} outs(%{{.+}} : tensor<1x16x18x18xf32>)
//       CHECK:     linalg.conv_2d_nchw_fchw {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x8x20x20xf32>, tensor<16x8x3x3xf32>) outs(%{{.+}} : tensor<1x16x18x18xf32>)
//       CHECK:   case 2 {
//       CHECK:     linalg.conv_2d_nchw_fchw {{.*}} outs(%{{.+}} : tensor<2x16x18x18xf32>)
//       CHECK:   case 3 {
//       CHECK:     linalg.conv_2d_nchw_fchw {{.*}} outs(%{{.+}} : tensor<3x16x18x18xf32>)
//       CHECK:   default {
//       CHECK:     linalg.conv_2d_nchw_fchw {{.*}} outs(%{{.+}} : tensor<?x16x18x18xf32>)
// TILED-LABEL: func.func @conv_small_range
//       TILED:   case 1 {
//   TILED-NOT:     scf.for
//       TILED:     scf.forall
//       TILED:   case 2 {
//   TILED-NOT:     scf.for
//       TILED:     scf.forall
//       TILED:   case 3 {
//   TILED-NOT:     scf.for
//       TILED:     scf.forall
//       TILED:   default {
//       TILED:     scf.for
#bias = affine_map<(d0, d1, d2, d3) -> (d1)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
module attributes {kiln.symbols = ["batch"], kiln.shape_hints = {batch = array<i64: 1, 2, 3>}} {
func.func @conv_small_range(%x: tensor<?x8x20x20xf32> {kiln.shape = affine_map<()[s0] -> (s0, 8, 20, 20)>}, %w: tensor<16x8x3x3xf32>, %bias: tensor<16xf32>) -> tensor<?x16x18x18xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8x20x20xf32>
  %e = tensor.empty(%n) : tensor<?x16x18x18xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<16xf32>) outs(%e : tensor<?x16x18x18xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<?x16x18x18xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<?x8x20x20xf32>, tensor<16x8x3x3xf32>) outs(%init : tensor<?x16x18x18xf32>) -> tensor<?x16x18x18xf32>
  %zero = arith.constant 0.0 : f32
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r : tensor<?x16x18x18xf32>) outs(%r : tensor<?x16x18x18xf32>) {
  ^bb0(%in: f32, %out: f32):
    %max = arith.maximumf %in, %zero : f32
    linalg.yield %max : f32
  } -> tensor<?x16x18x18xf32>
  return %relu : tensor<?x16x18x18xf32>
}
}

// -----

// Attention's scores over two symbols: the batch loop is 4 heads per batch
// (b * 4: opt 2 gives 8), rows and columns the sequence (opt 128). Three
// dynamic loops: one static copy, taken when all of them are at opt.
// CHECK-LABEL: func.func @scores_two_symbols
//   CHECK-DAG:   %[[BH:.+]] = tensor.dim %arg0, %c0
//   CHECK-DAG:   %[[S:.+]] = tensor.dim %arg0, %c1
//   CHECK-DAG:   %[[T:.+]] = tensor.dim %arg1, %c2
//       CHECK:   %[[AT_B:.+]] = arith.cmpi eq, %[[BH]], %c8
//       CHECK:   %[[AT_S:.+]] = arith.cmpi eq, %[[S]], %c128
//       CHECK:   %[[AT_BS:.+]] = arith.andi %[[AT_B]], %[[AT_S]]
//       CHECK:   %[[AT_T:.+]] = arith.cmpi eq, %[[T]], %c128
//       CHECK:   %[[ALL:.+]] = arith.andi %[[AT_BS]], %[[AT_T]]
//       CHECK:   %[[SEL:.+]] = arith.select %[[ALL]], %c1, %c0
//       CHECK:   scf.index_switch %[[SEL]] -> tensor<?x?x?xf32>
//  CHECK-NEXT:   case 1 {
//       CHECK:     linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<8x128x16xf32>, tensor<8x16x128xf32>) outs(%{{.+}} : tensor<8x128x128xf32>)
//       CHECK:   default {
//       CHECK:     linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<?x?x16xf32>, tensor<?x16x?xf32>)
module attributes {kiln.symbols = ["b", "s"], kiln.shape_hints = {b = array<i64: 1, 2, 16>, s = array<i64: 1, 128, 512>}} {
func.func @scores_two_symbols(%q: tensor<?x?x16xf32> {kiln.shape = affine_map<()[s0, s1] -> (s0 * 4, s1, 16)>}, %k: tensor<?x16x?xf32> {kiln.shape = affine_map<()[s0, s1] -> (s0 * 4, 16, s1)>}) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %bh = tensor.dim %q, %c0 : tensor<?x?x16xf32>
  %s = tensor.dim %q, %c1 : tensor<?x?x16xf32>
  %t = tensor.dim %k, %c2 : tensor<?x16x?xf32>
  %e = tensor.empty(%bh, %s, %t) : tensor<?x?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %r = linalg.batch_matmul ins(%q, %k : tensor<?x?x16xf32>, tensor<?x16x?xf32>) outs(%f : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r : tensor<?x?x?xf32>) outs(%r : tensor<?x?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.mulf %in, %in : f32
    linalg.yield %x : f32
  } -> tensor<?x?x?xf32>
  return %scaled : tensor<?x?x?xf32>
}
}

// -----

// Without a hint for its symbol (or without kiln.shape_hints) an op keeps
// its dynamic code alone.
// CHECK-LABEL: func.func @unhinted
//   CHECK-NOT:   scf.index_switch
//       CHECK:   linalg.matmul
module attributes {kiln.symbols = ["m", "n"], kiln.shape_hints = {n = array<i64: 1, 4, 8>}} {
func.func @unhinted(%a: tensor<?x256xf32> {kiln.shape = affine_map<()[s0, s1] -> (s0, 256)>}, %b: tensor<256x512xf32>) -> tensor<?x512xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x256xf32>
  %e = tensor.empty(%m) : tensor<?x512xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x512xf32>) -> tensor<?x512xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x256xf32>, tensor<256x512xf32>) outs(%f : tensor<?x512xf32>) -> tensor<?x512xf32>
  return %r : tensor<?x512xf32>
}
}

// -----

// An op whose result is a model output keeps its dynamic code: it writes
// into the output buffer, where a switch's result would be copied.
// CHECK-LABEL: func.func @returned
//   CHECK-NOT:   scf.index_switch
//       CHECK:   linalg.matmul {{.*}} -> tensor<?x512xf32>
//  CHECK-NEXT:   return
module attributes {kiln.symbols = ["m"], kiln.shape_hints = {m = array<i64: 1, 4, 8>}} {
func.func @returned(%a: tensor<?x256xf32> {kiln.shape = affine_map<()[s0] -> (s0, 256)>}, %b: tensor<256x512xf32>) -> tensor<?x512xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x256xf32>
  %e = tensor.empty(%m) : tensor<?x512xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x512xf32>) -> tensor<?x512xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x256xf32>, tensor<256x512xf32>) outs(%f : tensor<?x512xf32>) -> tensor<?x512xf32>
  return %r : tensor<?x512xf32>
}
}

// -----

// Two matmuls of one shape share their zero fill (CSE merges them, as for
// attention's K and V projections): each static copy gets its own fill,
// which the tile pass fuses, and so does each dynamic default, with its own
// tensor.empty: a destination shared across the switches was bufferized in
// place for both matmuls (the second overwrote the first one's result).
// CHECK-LABEL: func.func @shared_fill
//  CHECK-SAME:   (%[[A:.+]]: tensor<?x256xf32> {{.*}}, %[[WK:.+]]: tensor<256x64xf32>, %[[WV:.+]]: tensor<256x64xf32>)
//   CHECK-NOT:   linalg.fill
//       CHECK:   %[[K:.+]] = scf.index_switch
//  CHECK-NEXT:   case 4 {
//  CHECK-NEXT:     tensor.empty() : tensor<4x64xf32>
//  CHECK-NEXT:     linalg.fill {{.*}} -> tensor<4x64xf32>
//       CHECK:   default {
//  CHECK-NEXT:     %[[EK:.+]] = tensor.empty(%{{.+}}) : tensor<?x64xf32>
//  CHECK-NEXT:     %[[FK:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[EK]] : tensor<?x64xf32>)
//  CHECK-NEXT:     linalg.matmul ins(%[[A]], %[[WK]] : {{.*}}) outs(%[[FK]] : tensor<?x64xf32>)
//       CHECK:   %[[V:.+]] = scf.index_switch
//  CHECK-NEXT:   case 4 {
//  CHECK-NEXT:     tensor.empty() : tensor<4x64xf32>
//  CHECK-NEXT:     linalg.fill {{.*}} -> tensor<4x64xf32>
//       CHECK:   default {
//  CHECK-NEXT:     %[[EV:.+]] = tensor.empty(%{{.+}}) : tensor<?x64xf32>
//  CHECK-NEXT:     %[[FV:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[EV]] : tensor<?x64xf32>)
//  CHECK-NEXT:     linalg.matmul ins(%[[A]], %[[WV]] : {{.*}}) outs(%[[FV]] : tensor<?x64xf32>)
//       CHECK:   linalg.generic {{.*}} ins(%[[K]], %[[V]] : tensor<?x64xf32>, tensor<?x64xf32>)
// TILED-LABEL: func.func @shared_fill
//   TILED-NOT:   linalg.fill
module attributes {kiln.symbols = ["m"], kiln.shape_hints = {m = array<i64: 1, 4, 64>}} {
func.func @shared_fill(%a: tensor<?x256xf32> {kiln.shape = affine_map<()[s0] -> (s0, 256)>}, %wk: tensor<256x64xf32>, %wv: tensor<256x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x256xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %k = linalg.matmul ins(%a, %wk : tensor<?x256xf32>, tensor<256x64xf32>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %v = linalg.matmul ins(%a, %wv : tensor<?x256xf32>, tensor<256x64xf32>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%k, %v : tensor<?x64xf32>, tensor<?x64xf32>) outs(%k : tensor<?x64xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %sum : tensor<?x64xf32>
}
}
