//===- FusedOps.cpp - Fused norms, activations, matmul/conv epilogues -----===//
//
// Result-type inference and verifiers of kiln.rms_norm, kiln.fused_matmul
// kiln.fused_conv and kiln.fused_conv_nhwc (kiln.silu and kiln.swiglu get theirs from ODS).
// Shape errors are reported by inferReturnTypes, as in NNOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/NNShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnFusedOps.cpp.inc"

static RankedTensorType rankedType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks that the optional `residual` has the element type of `like` and
/// that adding it (numpy broadcasting) leaves `shape` unchanged.
static LogicalResult verifyResidual(std::optional<Location> loc, Value like,
                                    Value residual, ArrayRef<int64_t> shape) {
  if (isNone(residual))
    return success();
  if (failed(
          verifySameElementType(loc, like, "the input", residual, "residual")))
    return failure();
  ArrayRef<int64_t> r = rankedType(residual).getShape();
  FailureOr<SmallVector<int64_t>> sum = broadcastShapes(loc, {shape, r});
  if (failed(sum))
    return failure();
  if (ArrayRef<int64_t>(*sum) != shape)
    return emitOptionalError(
        loc, "residual of shape ",
        RankedTensorType::get(r, getElementTypeOrSelf(like)),
        " would change the result's shape by broadcasting");
  return success();
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  auto x = rankedType(adaptor.getX());
  FailureOr<int64_t> axis =
      normalizeAxis(loc, int64_t(adaptor.getAxis()), x.getRank());
  if (failed(axis))
    return failure();
  if (failed(verifySameElementType(loc, adaptor.getX(), "X", adaptor.getScale(),
                                   "scale")))
    return failure();
  // scale broadcasts to the normalized dims and must not grow them.
  ArrayRef<int64_t> normalized = x.getShape().drop_front(*axis);
  auto scale = rankedType(adaptor.getScale());
  if (scale.getRank() > int64_t(normalized.size()))
    return emitOptionalError(loc, "scale of type ", scale,
                             " has more dims than the normalized dims of ", x);
  for (auto [s, n] :
       llvm::zip(llvm::reverse(scale.getShape()), llvm::reverse(normalized)))
    if (s != 1 && !ShapedType::isDynamic(s) && !ShapedType::isDynamic(n) &&
        s != n)
      return emitOptionalError(loc, "scale of type ", scale,
                               " does not broadcast to the normalized dims of ",
                               x);
  results.push_back(x);
  return success();
}

LogicalResult RMSNormOp::verify() {
  switch (getStashType()) {
  case 1:
  case 10:
  case 11:
  case 16:
    break;
  default:
    return emitOpError("stash_type ")
           << getStashType() << " is not a float dtype code (1, 10, 11 or 16)";
  }
  if (!(getEpsilon().convertToFloat() >= 0.0f))
    return emitOpError("epsilon ")
           << getEpsilon().convertToFloat() << " must be non-negative";
  return success();
}

//===----------------------------------------------------------------------===//
// FusedMatMulOp
//===----------------------------------------------------------------------===//

LogicalResult FusedMatMulOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  Value a = adaptor.getA(), b = adaptor.getB();
  if (failed(verifySameElementType(loc, a, "A", b, "B")))
    return failure();
  SmallVector<int64_t> bShape(rankedType(b).getShape());
  if (adaptor.getTransB()) {
    if (bShape.size() < 2)
      return emitOptionalError(loc, "trans_b needs B of rank >= 2, got ",
                               b.getType());
    std::swap(bShape[bShape.size() - 1], bShape[bShape.size() - 2]);
  }
  FailureOr<SmallVector<int64_t>> shape =
      inferMatMulShape(loc, rankedType(a).getShape(), bShape);
  if (failed(shape))
    return failure();
  Value bias = adaptor.getBias();
  if (!isNone(bias)) {
    if (failed(verifySameElementType(loc, a, "A", bias, "bias")))
      return failure();
    auto biasType = rankedType(bias);
    int64_t n = shape->empty() ? 1 : shape->back();
    if (biasType.getRank() != 1 ||
        (!biasType.isDynamicDim(0) && !ShapedType::isDynamic(n) &&
         biasType.getDimSize(0) != n))
      return emitOptionalError(loc, "bias must be 1-D with ", n,
                               " elements (the result's last dim), got ",
                               biasType);
  }
  if (failed(verifyResidual(loc, a, adaptor.getResidual(), *shape)))
    return failure();
  results.push_back(tensorOf(*shape, getElementTypeOrSelf(a)));
  return success();
}

//===----------------------------------------------------------------------===//
// FusedConvOp
//===----------------------------------------------------------------------===//

LogicalResult FusedConvOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Value x = adaptor.getX(), w = adaptor.getW(), bias = adaptor.getB();
  FailureOr<SmallVector<int64_t>> shape =
      inferConvShape(loc, x.getType(), w.getType(), adaptor.getGroup(),
                     getConvWindowAttrs(adaptor));
  if (failed(shape) || failed(verifySameElementType(loc, x, "X", w, "W")) ||
      failed(verifyChannelVector(loc, bias, (*shape)[1], "B")))
    return failure();
  if (!isNone(bias) && failed(verifySameElementType(loc, x, "X", bias, "B")))
    return failure();
  if (failed(verifyResidual(loc, x, adaptor.getResidual(), *shape)))
    return failure();
  results.push_back(tensorOf(*shape, getElementTypeOrSelf(x)));
  return success();
}

//===----------------------------------------------------------------------===//
// FusedConvNhwcOp
//===----------------------------------------------------------------------===//

LogicalResult FusedConvNhwcOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Value x = adaptor.getX(), w = adaptor.getW(), bias = adaptor.getB();
  FailureOr<SmallVector<int64_t>> shape =
      inferConvNhwcShape(loc, x.getType(), w.getType(), adaptor.getGroup(),
                         getConvWindowAttrs(adaptor));
  if (failed(shape) || failed(verifySameElementType(loc, x, "X", w, "W")) ||
      failed(verifyChannelVector(loc, bias, shape->back(), "B")))
    return failure();
  if (!isNone(bias) && failed(verifySameElementType(loc, x, "X", bias, "B")))
    return failure();
  if (failed(verifyResidual(loc, x, adaptor.getResidual(), *shape)))
    return failure();
  results.push_back(tensorOf(*shape, getElementTypeOrSelf(x)));
  return success();
}
