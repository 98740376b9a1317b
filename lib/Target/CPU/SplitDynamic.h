//===- SplitDynamic.h - Static pieces of a loop with run-time extent -*- C++ -*-===//
//
// What kiln-cpu-split-dynamic (a convolution's dynamic batch) and
// kiln-cpu-tile-and-vectorize (a thread block's dynamic rows) share: one
// loop of a tensor linalg op cut into pieces of static extents, so that the
// static-shape kernels apply to each piece.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TARGET_CPU_SPLITDYNAMIC_H
#define KILN_LIB_TARGET_CPU_SPLITDYNAMIC_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::cpu {

/// Cuts loop `dim` of `op` (a linalg op on tensors with one init, `dim` a
/// parallel loop that indexes the init) into pieces whose extent along `dim`
/// is static:
///
///   scf.for %i = 0 to (size floordiv chunk) * chunk step chunk
///     op on [%i, %i + chunk)                       (static: chunk)
///   scf.index_switch (size mod chunk)              (1 .. chunk - 1)
///     case r: op on the last r                     (static: r)
///
/// so that every piece is exactly the static code of its size: a block of 7
/// rows over 8-row register tiles is the 7-row tile of a static M = 7, and
/// M = 1 the 1-row one (no padding, no masks, one pass over the other
/// operand). chunk = 1 is a plain loop of one-wide pieces. Each piece reads
/// slices of the inputs and writes a slice of the loop-carried result
/// (extract_slice/insert_slice). When `op`'s init is produced by an
/// all-parallel linalg op used only by `op` (a zero fill, a bias broadcast),
/// that producer is tiled into each piece too, so it stays fusable into the
/// piece's tiles; it is left without uses (the caller erases it). `op` is
/// replaced and erased. Returns the pieces (the tiled ops, in order).
///
/// With `knownExtents` (the extent is known to be one of them: a thread
/// block of a static M that is not a multiple of the block size is either
/// a whole block or the last one), `chunk` is ignored and each value is one
/// whole piece, under an scf.index_switch over the extent.
mlir::FailureOr<llvm::SmallVector<mlir::linalg::LinalgOp>>
splitIntoStaticPieces(mlir::RewriterBase &rewriter, mlir::linalg::LinalgOp op,
                      unsigned dim, int64_t chunk,
                      llvm::ArrayRef<int64_t> knownExtents = {});

/// Whether kiln-cpu-tile-and-vectorize fuses a convolution's im2col into its
/// thread blocks (fuseIm2ColIntoBlock): a block's columns (block-n of the
/// oh * ow output pixels, all of them when fewer) are whole output rows, and
/// every block has the same static width. Then the im2col is never
/// materialized whole, and a run-time batch can stay one dimension of the
/// thread blocks instead of a loop of one-image convolutions.
inline bool im2colFusesIntoBlocks(int64_t oh, int64_t ow, int64_t blockCols) {
  int64_t pixels = oh * ow;
  if (pixels <= blockCols)
    return true;
  return pixels % blockCols == 0 && blockCols % ow == 0;
}

} // namespace kiln::cpu

#endif // KILN_LIB_TARGET_CPU_SPLITDYNAMIC_H
