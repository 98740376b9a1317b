//===- NNShapes.h - Matmul, convolution and pooling shape rules -*- C++ -*-===//
//
// The result-shape rules that several ops share: matmul (MatMul,
// MatMulInteger, QLinearMatMul), convolution windows (Conv, ConvInteger,
// QLinearConv, ConvTranspose) and pooling windows (MaxPool, AveragePool,
// LpPool, the global pools). Errors are emitted at `loc` when given and name
// the attribute or operand and the values involved.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_NNSHAPES_H
#define KILN_DIALECT_NNSHAPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace kiln {

/// The sliding-window attributes of a convolution or pool (see
/// KilnWindowAttrs.td); unset ones take ONNX's rank-dependent defaults.
struct WindowAttrs {
  llvm::StringRef autoPad = "NOTSET";
  std::optional<llvm::ArrayRef<int64_t>> kernelShape, strides, dilations, pads;
  /// Pools only: round the output size up (ceil_mode = 1).
  bool ceilMode = false;
};

/// The window attributes of an op with Kiln_ConvWindowAttrs.
template <typename AdaptorT> WindowAttrs getConvWindowAttrs(AdaptorT a) {
  WindowAttrs w;
  w.autoPad = a.getAutoPad();
  w.kernelShape = a.getKernelShape();
  w.strides = a.getStrides();
  w.dilations = a.getDilations();
  w.pads = a.getPads();
  return w;
}

/// The window attributes of an op with Kiln_PoolWindowAttrs.
template <typename AdaptorT> WindowAttrs getPoolWindowAttrs(AdaptorT a) {
  WindowAttrs w = getConvWindowAttrs(a);
  w.ceilMode = a.getCeilMode() != 0;
  return w;
}

/// numpy matmul of shapes `a` and `b` (1-D operands promoted and their
/// promoted dim removed, batch dims broadcast).
mlir::FailureOr<llvm::SmallVector<int64_t>>
inferMatMulShape(std::optional<mlir::Location> loc, llvm::ArrayRef<int64_t> a,
                 llvm::ArrayRef<int64_t> b);

/// The spatial output dims of a window of `attrs` sliding over the spatial
/// dims `input`; `weightKernel` (a conv weight's spatial dims, empty for
/// pools) is the kernel when kernel_shape is unset and must agree with it.
mlir::FailureOr<llvm::SmallVector<int64_t>>
inferWindowOutputDims(std::optional<mlir::Location> loc,
                      llvm::ArrayRef<int64_t> input,
                      llvm::ArrayRef<int64_t> weightKernel,
                      const WindowAttrs &attrs);

/// Conv, ConvInteger, QLinearConv: X is N x C x D..., W is M x C/group x k...;
/// the result shape is N x M x out....
mlir::FailureOr<llvm::SmallVector<int64_t>>
inferConvShape(std::optional<mlir::Location> loc, mlir::Type x, mlir::Type w,
               int64_t group, const WindowAttrs &attrs);

/// The channels-last convolutions (kiln.conv_nhwc, kiln.fused_conv_nhwc):
/// X is N x D... x C (rank >= 3), W is OHWI (M x k... x C/group); the result
/// shape is N x out... x M. The rules and diagnostics are inferConvShape's,
/// applied to the operand shapes with their last dim moved to position 1.
mlir::FailureOr<llvm::SmallVector<int64_t>>
inferConvNhwcShape(std::optional<mlir::Location> loc, mlir::Type x,
                   mlir::Type w, int64_t group, const WindowAttrs &attrs);

/// ConvTranspose: X is N x C x D..., W is C x M/group x k...; the result is
/// N x (W.dim1 * group) x out....
mlir::FailureOr<llvm::SmallVector<int64_t>> inferConvTransposeShape(
    std::optional<mlir::Location> loc, mlir::Type x, mlir::Type w, int64_t group,
    const WindowAttrs &attrs, std::optional<llvm::ArrayRef<int64_t>> outputPadding,
    std::optional<llvm::ArrayRef<int64_t>> outputShape);

/// MaxPool, AveragePool, LpPool: N x C x D... to N x C x out....
mlir::FailureOr<llvm::SmallVector<int64_t>>
inferPoolShape(std::optional<mlir::Location> loc, mlir::Type x,
               const WindowAttrs &attrs);

/// The global pools: N x C x D... to N x C x 1....
mlir::LogicalResult
inferGlobalPoolType(std::optional<mlir::Location> loc, mlir::Value x,
                    llvm::SmallVectorImpl<mlir::Type> &results);

/// Checks that `a` and `b` (named `aName`, `bName`) have the same element
/// type.
mlir::LogicalResult verifySameElementType(std::optional<mlir::Location> loc,
                                          mlir::Value a, llvm::StringRef aName,
                                          mlir::Value b, llvm::StringRef bName);

/// Checks that the optional 1-D operand `bias` (null or `none` when absent)
/// has `channels` elements.
mlir::LogicalResult verifyChannelVector(std::optional<mlir::Location> loc,
                                        mlir::Value bias, int64_t channels,
                                        llvm::StringRef name);

} // namespace kiln

#endif // KILN_DIALECT_NNSHAPES_H
