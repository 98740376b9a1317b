//===- ElementwiseOps.cpp - Elementwise ops: inference and verifiers ------===//
//
// Same-type unary ops get their inferReturnTypes from ODS. The other ops name
// one of the helpers below in their ODS class (Kiln_InferredByOp), so that the
// rule for, say, every broadcasting binary op lives in one place. Folders are
// in ElementwiseFolds.cpp.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Fails unless every value of `values` has the element type of the first.
static LogicalResult verifySameElementType(std::optional<Location> loc,
                                           ValueRange values) {
  Type first = getElementTypeOrSelf(values.front());
  for (Value v : values.drop_front())
    if (getElementTypeOrSelf(v) != first)
      return emitOptionalError(loc, "operands must have the same element type, got ",
                               first, " and ", getElementTypeOrSelf(v));
  return success();
}

/// Numpy broadcasting of all `operands`; the result has `elementType`.
static LogicalResult inferBroadcastTo(std::optional<Location> loc,
                                      ValueRange operands, Type elementType,
                                      SmallVectorImpl<Type> &results) {
  if (operands.empty())
    return emitOptionalError(loc, "requires at least one operand");
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : operands)
    shapes.push_back(shapeOf(v));
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(loc, shapes);
  if (failed(shape))
    return failure();
  results.push_back(tensorOf(*shape, elementType));
  return success();
}

/// Broadcasting ops whose operands and result share one element type
/// (Add, Max, And, BitShift, ...).
static LogicalResult inferSameTypeBroadcast(std::optional<Location> loc,
                                            ValueRange operands,
                                            SmallVectorImpl<Type> &results) {
  if (!operands.empty() && failed(verifySameElementType(loc, operands)))
    return failure();
  return inferBroadcastTo(loc, operands,
                          operands.empty() ? Type()
                                           : getElementTypeOrSelf(operands[0]),
                          results);
}

/// Comparisons: operands of one element type, an i1 result.
static LogicalResult inferCompareBroadcast(std::optional<Location> loc,
                                           ValueRange operands,
                                           SmallVectorImpl<Type> &results) {
  if (failed(verifySameElementType(loc, operands)))
    return failure();
  return inferBroadcastTo(loc, operands,
                          IntegerType::get(operands[0].getContext(), 1), results);
}

/// Pow: the result has the base's element type, the exponent's may differ.
static LogicalResult inferBaseTypeBroadcast(std::optional<Location> loc,
                                            ValueRange operands,
                                            SmallVectorImpl<Type> &results) {
  return inferBroadcastTo(loc, operands, getElementTypeOrSelf(operands[0]),
                          results);
}

/// IsNaN, IsInf: an i1 tensor of the operand's shape.
static LogicalResult inferBoolOfSameShape(std::optional<Location>,
                                          ValueRange operands,
                                          SmallVectorImpl<Type> &results) {
  results.push_back(tensorOf(shapeOf(operands[0]),
                             IntegerType::get(operands[0].getContext(), 1)));
  return success();
}

/// Where(condition, X, Y): three-way broadcasting, X's element type.
static LogicalResult inferWhere(std::optional<Location> loc, ValueRange operands,
                                SmallVectorImpl<Type> &results) {
  if (failed(verifySameElementType(loc, operands.drop_front())))
    return failure();
  return inferBroadcastTo(loc, operands, getElementTypeOrSelf(operands[1]),
                          results);
}

/// PRelu(X, slope): slope broadcasts to X's shape; the result has X's type.
static LogicalResult inferPRelu(std::optional<Location> loc, ValueRange operands,
                                SmallVectorImpl<Type> &results) {
  if (failed(verifySameElementType(loc, operands)))
    return failure();
  ArrayRef<int64_t> x = shapeOf(operands[0]), slope = shapeOf(operands[1]);
  if (slope.size() > x.size())
    return emitOptionalError(loc, "slope of rank ", slope.size(),
                             " does not broadcast to X of rank ", x.size());
  size_t offset = x.size() - slope.size();
  for (auto [i, s] : llvm::enumerate(slope)) {
    int64_t d = x[offset + i];
    if (s != 1 && !ShapedType::isDynamic(s) && !ShapedType::isDynamic(d) && s != d)
      return emitOptionalError(loc, "slope does not broadcast to X: dimension ",
                               offset + i, " of X is ", d, " and of slope ", s);
  }
  results.push_back(operands[0].getType());
  return success();
}

/// A Clip bound is missing, or a scalar (0-d or one-element 1-d) of the
/// input's element type.
static LogicalResult verifyClipBound(std::optional<Location> loc, Value bound,
                                     Type elementType, StringRef name) {
  if (isNone(bound))
    return success();
  ArrayRef<int64_t> shape = shapeOf(bound);
  if (!(shape.empty() || (shape.size() == 1 && shape[0] == 1)))
    return emitOptionalError(loc, name, " must be a scalar, got ", bound.getType());
  if (getElementTypeOrSelf(bound) != elementType)
    return emitOptionalError(loc, name, " must have the input's element type ",
                             elementType, ", got ", getElementTypeOrSelf(bound));
  return success();
}

static LogicalResult inferClip(std::optional<Location> loc, ValueRange operands,
                               SmallVectorImpl<Type> &results) {
  Type elementType = getElementTypeOrSelf(operands[0]);
  if (failed(verifyClipBound(loc, operands[1], elementType, "min")) ||
      failed(verifyClipBound(loc, operands[2], elementType, "max")))
    return failure();
  results.push_back(operands[0].getType());
  return success();
}

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnElementwiseOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Ops with their own inference or verifier
//===----------------------------------------------------------------------===//

/// Cast and CastLike: the input's shape with `elementType`.
static LogicalResult inferCast(std::optional<Location> loc, Value input,
                               Type elementType, SmallVectorImpl<Type> &results) {
  if (!elementType)
    return emitOptionalError(loc, "requires a `to` type attribute");
  auto intType = dyn_cast<IntegerType>(elementType);
  bool isKilnInt = intType && !intType.isSigned() &&
                   llvm::is_contained({1u, 8u, 16u, 32u, 64u}, intType.getWidth()) &&
                   !(intType.isUnsigned() && intType.getWidth() == 1);
  if (!elementType.isF16() && !elementType.isBF16() && !elementType.isF32() &&
      !elementType.isF64() && !isKilnInt)
    return emitOptionalError(loc, "cannot cast to ", elementType,
                             ": not a kiln element type");
  results.push_back(tensorOf(shapeOf(input), elementType));
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  TypeAttr to = adaptor.getToAttr();
  return inferCast(loc, adaptor.getInput(), to ? to.getValue() : Type(), results);
}

LogicalResult CastLikeOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  return inferCast(loc, adaptor.getInput(),
                   getElementTypeOrSelf(adaptor.getTargetType()), results);
}

LogicalResult ModOp::verify() {
  if (getFmod() == 0 && isa<FloatType>(getElementTypeOrSelf(getA())))
    return emitOpError("fmod must be 1 for floating-point operands, got 0");
  return success();
}
