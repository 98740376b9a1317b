// The thread blocks of a GEMM split N evenly (gemmBlockColumns): a decode
// step's [1, 576] x [576, 576] is 6 blocks of 96 columns, not 256 + 256 +
// 64 (two threads: one ran two blocks while the other ran one), and its
// weight is stored as 96-column panels, one per block. A block of one row
// gets a wider register tile only of a power-of-two number of vectors: a
// 1 x 96 accumulator (<96 x float>) was split by LLVM lane by lane through
// the stack, 10x slower than three 1 x 32 tiles.
// RUN: kiln-opt %s --split-input-file --convert-kiln-to-linalg --canonicalize --kiln-cpu-tile-and-vectorize --canonicalize --cse | FileCheck %s --check-prefix=TILE
// RUN: kiln-opt %s --split-input-file --kiln-cpu-pack-weights="panel=8 nr=2 min-bytes=0" | FileCheck %s --check-prefix=PACK

// TILE-LABEL: func.func @main(
// TILE: scf.forall (%[[N0:.+]]) = (0) to (576) step (96)
// TILE-NOT: vector<96xf32>
// TILE: vector.contract {{.*}} : vector<1xf32>, vector<1x32xf32> into vector<32xf32>
// TILE: scf.forall (%{{.+}}) = (0) to (192) step (96)
// TILE: vector.contract {{.*}} : vector<1xf32>, vector<1x32xf32> into vector<32xf32>
// TILE: scf.forall (%{{.+}}) = (0) to (1536) step (256)
// TILE: vector.contract {{.*}} : vector<1xf32>, vector<1x256xf32> into vector<256xf32>
func.func @main(%x: tensor<1x576xf32> {kiln.name = "x"},
                %q: tensor<576x576xf32> {kiln.weight = "q", kiln.weight_value = dense<0.5> : tensor<576x576xf32>},
                %k: tensor<576x192xf32> {kiln.weight = "k", kiln.weight_value = dense<0.25> : tensor<576x192xf32>},
                %g: tensor<576x1536xf32> {kiln.weight = "gate", kiln.weight_value = dense<0.125> : tensor<576x1536xf32>})
    -> (tensor<1x576xf32>, tensor<1x192xf32>, tensor<1x1536xf32>) {
  %a = kiln.matmul %x, %q : (tensor<1x576xf32>, tensor<576x576xf32>) -> tensor<1x576xf32>
  %b = kiln.matmul %x, %k : (tensor<1x576xf32>, tensor<576x192xf32>) -> tensor<1x192xf32>
  %c = kiln.matmul %x, %g : (tensor<1x576xf32>, tensor<576x1536xf32>) -> tensor<1x1536xf32>
  return %a, %b, %c : tensor<1x576xf32>, tensor<1x192xf32>, tensor<1x1536xf32>
}

// -----

// The panels follow the same rule (here blocks of at most 8 columns, vectors
// of 2): N = 12 is two panels of 6, not 8 + 4 padded; N = 10 has no even
// split into whole blocks and keeps panels of 8 (the last one padded).
// PACK-LABEL: func.func @main(%arg0: tensor<1x2xf32>
// PACK-SAME: tensor<2x2x6xf32> {kiln.weight = "even"
// PACK-SAME: tensor<2x2x8xf32> {kiln.weight = "odd"
func.func @main(%x: tensor<1x2xf32> {kiln.name = "x"},
                %w: tensor<2x12xf32> {kiln.weight = "even", kiln.weight_value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0]]> : tensor<2x12xf32>},
                %v: tensor<2x10xf32> {kiln.weight = "odd", kiln.weight_value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], [11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0]]> : tensor<2x10xf32>})
    -> (tensor<1x12xf32>, tensor<1x10xf32>) {
  %a = kiln.matmul %x, %w : (tensor<1x2xf32>, tensor<2x12xf32>) -> tensor<1x12xf32>
  %b = kiln.matmul %x, %v : (tensor<1x2xf32>, tensor<2x10xf32>) -> tensor<1x10xf32>
  return %a, %b : tensor<1x12xf32>, tensor<1x10xf32>
}
