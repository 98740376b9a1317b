//===- LayoutOps.cpp - Channels-last (NHWC) convolution and pooling -------===//
//
// The channels-last ops infer their result types with the NCHW rules of
// NNShapes.h: the operand shapes are permuted to channels-first, the NCHW
// shape is inferred (with the same diagnostics), and the result permuted back.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/NNShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnLayoutOps.cpp.inc"

/// `shape` (N x D... x C) with its last dim moved to position 1 (N x C x D...).
static SmallVector<int64_t> toChannelsFirst(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> result(shape);
  if (shape.size() >= 2) {
    result.erase(result.end() - 1);
    result.insert(result.begin() + 1, shape.back());
  }
  return result;
}

/// `shape` (N x C x D...) with its dim 1 moved last (N x D... x C).
static SmallVector<int64_t> toChannelsLast(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> result(shape);
  if (shape.size() >= 2) {
    result.erase(result.begin() + 1);
    result.push_back(shape[1]);
  }
  return result;
}

/// The channels-first counterpart of the ranked tensor type `t`.
static RankedTensorType channelsFirstType(Type t) {
  auto ranked = cast<RankedTensorType>(t);
  return ranked.clone(toChannelsFirst(ranked.getShape()));
}

/// Fails unless the channels-last operand `x` has rank >= 3 (N, a spatial
/// dim, C); the NCHW rules would report the permuted shape otherwise.
static LogicalResult checkChannelsLastRank(std::optional<Location> loc,
                                           Value x, StringRef name) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() >= 3)
    return success();
  return emitOptionalError(loc, name, " must have rank >= 3 (N, a spatial dim ",
                           "and C), got ", type);
}

LogicalResult ConvNhwcOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  auto shape = inferConvNhwcShape(loc, adaptor.getX().getType(),
                                  adaptor.getW().getType(), adaptor.getGroup(),
                                  getConvWindowAttrs(adaptor));
  if (failed(shape) ||
      failed(verifySameElementType(loc, adaptor.getX(), "X", adaptor.getW(),
                                   "W")) ||
      failed(verifyChannelVector(loc, adaptor.getB(), shape->back(), "B")))
    return failure();
  if (!isNone(adaptor.getB()) &&
      failed(verifySameElementType(loc, adaptor.getX(), "X", adaptor.getB(),
                                   "B")))
    return failure();
  results.push_back(tensorOf(*shape, getElementTypeOrSelf(adaptor.getX())));
  return success();
}

/// The result type of a channels-last pool: X's element type with the pooled
/// shape.
template <typename AdaptorT>
static LogicalResult inferPoolNhwcType(std::optional<Location> loc,
                                       AdaptorT adaptor,
                                       SmallVectorImpl<Type> &results) {
  if (failed(checkChannelsLastRank(loc, adaptor.getX(), "X")))
    return failure();
  if (adaptor.getCeilMode() > 1)
    return emitOptionalError(loc, "ceil_mode is ", adaptor.getCeilMode(),
                             " but must be 0 or 1");
  auto shape = inferPoolShape(loc, channelsFirstType(adaptor.getX().getType()),
                              getPoolWindowAttrs(adaptor));
  if (failed(shape))
    return failure();
  results.push_back(
      tensorOf(toChannelsLast(*shape), getElementTypeOrSelf(adaptor.getX())));
  return success();
}

LogicalResult MaxPoolNhwcOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  return inferPoolNhwcType(loc, adaptor, results);
}

LogicalResult AveragePoolNhwcOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (adaptor.getCountIncludePad() > 1)
    return emitOptionalError(loc, "count_include_pad is ",
                             adaptor.getCountIncludePad(),
                             " but must be 0 or 1");
  return inferPoolNhwcType(loc, adaptor, results);
}

LogicalResult GlobalAveragePoolNhwcOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(checkChannelsLastRank(loc, adaptor.getX(), "X")))
    return failure();
  auto type = cast<RankedTensorType>(adaptor.getX().getType());
  SmallVector<int64_t> shape(type.getShape());
  std::fill(shape.begin() + 1, shape.end() - 1, 1);
  results.push_back(type.clone(shape));
  return success();
}
