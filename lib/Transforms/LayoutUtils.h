//===- LayoutUtils.h - Permutations and permuted constants -----*- C++ -*-===//
//
// Shared by the transpose-sinking patterns (TransposeSinking.cpp) and the
// layout pass (OptimizeLayout.cpp): permutation arithmetic, transposes of
// constant data (dense and dense_resource), and the counters behind the
// pass's statistics.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TRANSFORMS_LAYOUTUTILS_H
#define KILN_LIB_TRANSFORMS_LAYOUTUTILS_H

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallVector.h"

namespace kiln::layout {

/// What the layout rewrites did, for kiln-optimize-layout's statistics.
/// Every transpose op created or erased is counted, so that at the end of
/// the pass #transposes = #before + inserted - removed.
struct LayoutCounters {
  int64_t transposesRemoved = 0;
  int64_t transposesInserted = 0;
};

/// `op`'s permutation (`perm`, or the reversal when it is unset).
llvm::SmallVector<int64_t> getPermutation(TransposeOp op);

/// The inverse permutation: inverse[perm[i]] = i.
llvm::SmallVector<int64_t> invertPermutation(llvm::ArrayRef<int64_t> perm);

/// True when `perm` is 0, 1, ..., n-1.
bool isIdentityPermutation(llvm::ArrayRef<int64_t> perm);

/// `shape` transposed by `perm`: result[i] = shape[perm[i]].
llvm::SmallVector<int64_t> permuteShape(llvm::ArrayRef<int64_t> shape,
                                        llvm::ArrayRef<int64_t> perm);

/// True when transposing a tensor of `shape` by `perm` keeps the order of its
/// elements: only dims of size 1 move relative to the others. Such a
/// transpose is a reshape.
bool isTransposeAReshape(llvm::ArrayRef<int64_t> shape,
                         llvm::ArrayRef<int64_t> perm);

/// True when the elements of `attr` can be read (not an elided or missing
/// dense_resource blob, and a byte-sized or i1 element type).
bool canReadElements(mlir::ElementsAttr attr);

/// `attr` transposed by `perm` (result dim i is dim perm[i]), or null when its
/// data cannot be read. Results of 1 KiB or more are dense_resource blobs
/// named after the source blob (or "layout"), as the importer keeps large
/// constants.
mlir::ElementsAttr transposeElements(mlir::ElementsAttr attr,
                                     llvm::ArrayRef<int64_t> perm);

/// `attr`'s data with the type `type` (same element type and count), or null
/// when it cannot be read.
mlir::ElementsAttr reshapeElements(mlir::ElementsAttr attr,
                                   mlir::RankedTensorType type);

/// A transpose of `value` by `perm`, folded into a new kiln.constant when
/// `value` is a readable constant. Counts an inserted transpose otherwise.
mlir::Value createTransposeOrFold(mlir::OpBuilder &builder, mlir::Location loc,
                                  mlir::Value value,
                                  llvm::ArrayRef<int64_t> perm,
                                  LayoutCounters *counters);

/// The transpose-sinking patterns, counting into `counters` (may be null).
void populateTransposeSinkingPatterns(mlir::RewritePatternSet &patterns,
                                      LayoutCounters *counters);

} // namespace kiln::layout

#endif // KILN_LIB_TRANSFORMS_LAYOUTUTILS_H
