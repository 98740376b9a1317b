//===- GemmMatch.h - CUDA contractions seen as GEMMs -----------*- C++ -*-===//
//
// What the tiled matmul kernels (MatmulKernels.cpp) and library mode
// (LibraryCalls.cpp) both need to know about a matmul on bufferized IR: its
// operands as a (batched) row-major GEMM, the zero fill of its accumulator
// and the elementwise op that consumes the accumulator (its epilogue), when
// the buffers show that both can be folded into the GEMM.
//
// Kiln's matmuls reach the CUDA pipeline as linalg.matmul/batch_matmul or,
// once linalg-fuse-elementwise-ops has propagated the reshapes around them,
// as linalg.generic contractions whose row dimension is split (a [B, S, K] x
// [K, N] MatMul is a 4-loop generic with two "m" loops). Both are taken.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_GEMMMATCH_H
#define KILN_LIB_TARGET_CUDA_GEMMMATCH_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <string>

namespace kiln::cuda {

/// A contraction C[batch.., m.., n..] += A[batch.., m.., k..] *
/// B[batch.., k.., n..]
/// on identity-layout static memrefs, with multiply-add body (the inputs
/// possibly extended with arith.extf first).
struct GemmMatch {
  mlir::linalg::LinalgOp op;
  mlir::Value a, b, c;
  unsigned numBatchDims = 0, numMDims = 0, numNDims = 0, numKDims = 0;
  /// The GEMM sizes: the batch, m, n and k loops folded (an output
  /// projection over heads reduces over two or three loops).
  int64_t batch = 1, m = 0, n = 0, k = 0;
  /// Sizes of the m loops (their product is m): the row index of the folded
  /// GEMM splits into these for operands indexed by the original loops.
  llvm::SmallVector<int64_t> mSizes;
  /// Sizes of the n loops (their product is n): a projection whose result
  /// is reshaped into heads has two.
  llvm::SmallVector<int64_t> nSizes;
  /// Sizes of the batch loops (their product is batch).
  llvm::SmallVector<int64_t> batchSizes;
  mlir::Type inType, accType;
  /// Whether C is all zeros when the contraction starts (a zero
  /// linalg.fill, or a memref.copy from a zero-filled buffer), and the op
  /// that zeroes it, erased with the contraction (null when something reads
  /// the zeros before the contraction: then it stays). Without a zero
  /// start the contraction accumulates into what C holds.
  bool zeroStart = false;
  mlir::Operation *zeroOp = nullptr;
  /// The all-parallel generic after the contraction that reads C (identity
  /// map, input `epilogueArg`) and is C's last reader: its body can be
  /// applied to each accumulator before the store, to its output. Null when
  /// it cannot be folded (then C is written and the epilogue stays a kernel
  /// of its own).
  mlir::linalg::GenericOp epilogue;
  unsigned epilogueArg = 0;
  /// B read in place from the [n, k] buffer a linalg.transpose copied it
  /// from (foldTransposedB), and that transpose (dies with the contraction).
  mlir::Value bTransposed;
  mlir::Operation *bTranspose = nullptr;
  /// B is indexed [n.., k] by the contraction's own map (no batch, one k
  /// loop): the kernels read it as [n, k] in place (its n dims collapsed),
  /// as they read bTransposed.
  bool bNK = false;
  /// Ops that die with the contraction when the epilogue is folded: C's
  /// allocation and its views.
  llvm::SmallVector<mlir::Operation *> deadWithC;
};

/// Matches `op` as a GEMM. On failure `why` says what did not fit (for
/// remarks), empty when `op` is no contraction at all.
mlir::FailureOr<GemmMatch> matchGemm(mlir::linalg::LinalgOp op,
                                     std::string &why);

/// When B (2-D, k x n) is a buffer that only a linalg.transpose of a
/// [n, k] buffer writes and only the contraction reads (Gemm with transB,
/// a transposed weight), sets match.bTransposed/bTranspose so that the
/// kernel reads the [n, k] buffer instead and the transpose goes away.
/// `anchor` is where the kernel will be: the [n, k] buffer must not change
/// before it.
bool foldTransposedB(GemmMatch &match, mlir::Operation *anchor);

/// Erases what the GEMM replaces: `epilogue` (the folded one, or null),
/// the contraction, its zero start and, with the epilogue, C's dead buffer;
/// and the zero fills a copied zero start came from when nothing else
/// reads them.
void eraseFolded(GemmMatch &match, mlir::Operation *epilogue);

/// `memref` with its dims grouped by `groupSizes` (consecutive), e.g. a
/// [2, 64, 32] buffer grouped {2, 1} is its [128, 32] view. Identity
/// layouts only.
mlir::Value collapseGroups(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value memref,
                           llvm::ArrayRef<unsigned> groupSizes);

/// The ONNX node of an op for messages ("?" when unknown).
std::string onnxNodeOf(mlir::Operation *op);

/// kiln-cuda-matmul-kernels, kiln-cuda-align-workgroup
/// (MatmulKernels.cpp) and kiln-cuda-library-calls (LibraryCalls.cpp).
void registerMatmulKernelsPasses();
void registerLibraryCallsPasses();

} // namespace kiln::cuda

#endif // KILN_LIB_TARGET_CUDA_GEMMMATCH_H
