//===- NN.h - Helpers shared by the NN kiln -> linalg patterns --*- C++ -*-===//
//
// The NN patterns are split into one file per op family (MatMul.cpp,
// Softmax.cpp, Conv.cpp, Pool.cpp, Normalization.cpp, Pad.cpp, Resize.cpp,
// Attention.cpp), each contributing its patterns through one populate
// function below, which kiln::populateNNToLinalgPatterns (NN.cpp) calls.
// The helpers more than one of those files uses are declared here and
// defined in NN.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CONVERSION_KILNTOLINALG_NN_H
#define KILN_LIB_CONVERSION_KILNTOLINALG_NN_H

#include "Common.h"

#include "kiln/Dialect/NNShapes.h"

namespace kiln::lowering {

using IteratorType = mlir::utils::IteratorType;

/// The maps and iterators of a computation along one axis of a rank-`rank`
/// tensor: the identity, the map dropping `axis`, and the iterators with
/// `axis` a reduction.
struct AxisMaps {
  mlir::AffineMap full, reduced;
  llvm::SmallVector<IteratorType> reduceIterators, parallelIterators;
  llvm::SmallVector<bool> reducedDims;
  AxisMaps(unsigned rank, llvm::ArrayRef<int64_t> axes,
           mlir::MLIRContext *context) {
    full = mlir::AffineMap::getMultiDimIdentityMap(rank, context);
    reducedDims.assign(rank, false);
    for (int64_t axis : axes)
      reducedDims[axis] = true;
    llvm::SmallVector<bool> keep;
    for (unsigned i = 0; i < rank; ++i) {
      keep.push_back(!reducedDims[i]);
      reduceIterators.push_back(reducedDims[i] ? IteratorType::reduction
                                               : IteratorType::parallel);
    }
    parallelIterators.assign(rank, IteratorType::parallel);
    reduced = selectMap(rank, keep, context);
  }
};

/// The map of a per-channel vector (dim 1) over loops of `rank`.
mlir::AffineMap channelMap(unsigned rank, mlir::MLIRContext *context);

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// A sliding window with every ONNX default and auto_pad resolved.
struct Window {
  llvm::SmallVector<int64_t> kernel, strides, dilations, padBegin, padEnd;
  int64_t rank() const { return kernel.size(); }
  /// The input extent (padding included) the window reads for `out`
  /// outputs along `i`.
  int64_t reach(int64_t i, int64_t out) const {
    return (out - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1;
  }
};

/// An ONNX list attribute with its default: `values` when present, else
/// `size` copies of `fallback`.
llvm::SmallVector<int64_t>
listOrDefault(std::optional<llvm::ArrayRef<int64_t>> values, size_t size,
              int64_t fallback);

/// Resolves the window of an op over the spatial dims `input` producing the
/// spatial dims `output`; `weightKernel` is a conv weight's spatial dims
/// (empty for pools). SAME_UPPER/SAME_LOWER split the total padding with the
/// odd element at the end/beginning.
mlir::FailureOr<Window> resolveWindow(mlir::Operation *op,
                                      llvm::ArrayRef<int64_t> input,
                                      llvm::ArrayRef<int64_t> weightKernel,
                                      const kiln::WindowAttrs &attrs,
                                      llvm::ArrayRef<int64_t> output);

/// `value` padded with `low`/`high` elements per dim holding `padValue`
/// (tensor.pad), or `value` itself when nothing is padded.
mlir::Value padTensor(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                      llvm::ArrayRef<int64_t> low, llvm::ArrayRef<int64_t> high,
                      mlir::Value padValue);

/// The input of a window op padded for `w` (dims 0 and 1 are N and C): the
/// begin and end pads, plus end padding for ceil_mode windows reaching past
/// the padded input (their extra elements hold `padValue` too, and the
/// reductions below treat them like padding).
mlir::Value padWindowInput(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value x, const Window &w,
                           llvm::ArrayRef<int64_t> output, mlir::Value padValue,
                           bool channelsLast = false);

/// The map reading a padded channels-last window input [N, D..., C] over
/// loops (n, o..., c, k...): (n, o_i * stride + k_i * dilation ..., c).
mlir::AffineMap windowInputMapNhwc(unsigned numLoops, const Window &w,
                                   mlir::MLIRContext *context);

/// The map reading a padded window input of loop dims (lead..., o..., k...):
/// the first `lead` input dims are `leadDims`, then o_i * stride + k_i *
/// dilation.
mlir::AffineMap windowInputMap(unsigned numLoops,
                               llvm::ArrayRef<mlir::AffineExpr> leadDims,
                               unsigned firstOut, unsigned firstKernel,
                               const Window &w, mlir::MLIRContext *context);

enum class PoolKind { Max, Average, Lp };

/// Folds one window element `x` into the pool accumulator `acc`.
mlir::Value poolCombine(mlir::OpBuilder &b, mlir::Location loc, PoolKind kind,
                        mlir::Value x, mlir::Value acc, bool isUnsigned,
                        int64_t p);

/// The p-th root of an LpPool sum.
mlir::Value lpRoot(mlir::OpBuilder &b, mlir::Location loc, mlir::Value sum,
                   int64_t p);

//===----------------------------------------------------------------------===//
// Kiln's fused ops
//===----------------------------------------------------------------------===//

/// The elementwise epilogue of a fused op on the accumulator `acc`:
/// alpha * acc (+ bias), the activation and the residual in the requested
/// order, truncated to `resultType`. `bias`/`residual` may be null; both
/// broadcast numpy-style against the result.
mlir::Value buildEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value acc, mlir::Value bias,
                          mlir::Value residual, llvm::StringRef activation,
                          bool residualBeforeActivation, double alpha,
                          mlir::RankedTensorType resultType);

//===----------------------------------------------------------------------===//
// The patterns of each file
//===----------------------------------------------------------------------===//

/// MatMul, Gemm, Einsum, kiln.fused_matmul (MatMul.cpp).
void populateMatMulPatterns(const mlir::TypeConverter &converter,
                            mlir::RewritePatternSet &patterns);
/// Softmax, LogSoftmax, Hardmax (Softmax.cpp).
void populateSoftmaxPatterns(const mlir::TypeConverter &converter,
                             mlir::RewritePatternSet &patterns);
/// Conv, ConvTranspose, kiln.fused_conv, kiln.conv_nhwc,
/// kiln.fused_conv_nhwc (Conv.cpp).
void populateConvPatterns(const mlir::TypeConverter &converter,
                          mlir::RewritePatternSet &patterns);
/// MaxPool, AveragePool, LpPool, the global pools and their channels-last
/// forms (Pool.cpp).
void populatePoolPatterns(const mlir::TypeConverter &converter,
                          mlir::RewritePatternSet &patterns);
/// BatchNormalization, InstanceNormalization, LayerNormalization,
/// GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN,
/// Dropout, kiln.rms_norm (Normalization.cpp).
void populateNormalizationPatterns(const mlir::TypeConverter &converter,
                                   mlir::RewritePatternSet &patterns);
/// Pad (Pad.cpp).
void populatePadPatterns(const mlir::TypeConverter &converter,
                         mlir::RewritePatternSet &patterns);
/// Resize (Resize.cpp).
void populateResizePatterns(const mlir::TypeConverter &converter,
                            mlir::RewritePatternSet &patterns);
/// kiln.attention, kiln.rotary_embedding (Attention.cpp).
void populateAttentionPatterns(const mlir::TypeConverter &converter,
                               mlir::RewritePatternSet &patterns);

} // namespace kiln::lowering

#endif // KILN_LIB_CONVERSION_KILNTOLINALG_NN_H
