//===- QuantOps.cpp - Quantization ops: inference and verifiers -----------===//
//
// Matmul and convolution shapes come from NNShapes.h, shared with the NN
// family. Quantization parameters (per-tensor or per-axis) are checked by
// the verifiers; everything the result types depend on by inferReturnTypes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/KilnQuantConvOps.h"
#include "kiln/Dialect/NNShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnQuantOps.cpp.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnQuantConvOps.cpp.inc"

static RankedTensorType rankedType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks that the optional zero point `zp` has the element type of `t`.
static LogicalResult verifyZeroPoint(std::optional<Location> loc, Value t,
                                     StringRef tName, Value zp,
                                     StringRef zpName) {
  return isNone(zp) ? success()
                    : verifySameElementType(loc, t, tName, zp, zpName);
}

/// Checks QuantizeLinear/DequantizeLinear parameters: `scale` a scalar or a
/// one-element tensor (per-tensor), or 1-D with x.dim[axis] elements
/// (per-axis); the optional `zp` of `scale`'s shape; no blocked quantization.
static LogicalResult verifyQuantParams(Operation *op, Value x, Value scale,
                                       Value zp, int64_t axis,
                                       int64_t blockSize, StringRef scaleName,
                                       StringRef zpName) {
  if (blockSize != 0)
    return op->emitOpError("block_size ")
           << blockSize
           << " is not supported: Kiln implements per-tensor and per-axis "
              "quantization, not blocked quantization";
  auto xType = rankedType(x), scaleType = rankedType(scale);
  if (scaleType.getRank() > 1)
    return op->emitOpError() << scaleName
                             << " must be a scalar or 1-D (per-axis), got "
                             << scaleType;
  if (scaleType.getRank() == 1 && scaleType.getDimSize(0) != 1) {
    FailureOr<int64_t> a = normalizeAxis(op->getLoc(), axis, xType.getRank());
    if (failed(a))
      return failure();
    int64_t want = xType.getDimSize(*a), have = scaleType.getDimSize(0);
    if (!ShapedType::isDynamic(want) && !ShapedType::isDynamic(have) &&
        want != have)
      return op->emitOpError()
             << scaleName << " has " << have << " elements but x.dim[" << *a
             << "] is " << want << " (per-axis quantization along axis " << *a
             << ")";
  }
  if (!isNone(zp) &&
      failed(verifyCompatibleShape(rankedType(zp).getShape(),
                                   scaleType.getShape())))
    return op->emitOpError() << zpName << " of type " << zp.getType()
                             << " does not have the shape of " << scaleName
                             << " " << scaleType;
  return success();
}

LogicalResult QuantizeLinearOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Type element = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  std::optional<Type> dtype;
  if (auto attr = adaptor.getOutputDtypeAttr())
    dtype = attr.getValue();
  if (dtype) {
    auto i = dyn_cast<IntegerType>(*dtype);
    if (!i || (i.getWidth() != 8 && i.getWidth() != 16) || i.isSigned())
      return emitOptionalError(loc, "output_dtype ", *dtype,
                               " is not one of i8, ui8, i16, ui16");
    element = *dtype;
  }
  Value zp = adaptor.getYZeroPoint();
  if (!isNone(zp)) {
    Type zpElement = getElementTypeOrSelf(zp);
    if (dtype && *dtype != zpElement)
      return emitOptionalError(loc, "output_dtype ", *dtype,
                               " does not match y_zero_point's element type ",
                               zpElement);
    element = zpElement;
  }
  results.push_back(rankedType(adaptor.getX()).clone(element));
  return success();
}

LogicalResult QuantizeLinearOp::verify() {
  if (getSaturate() > 1)
    return emitOpError("saturate is ") << getSaturate() << " but must be 0 or 1";
  return verifyQuantParams(*this, getX(), getYScale(), getYZeroPoint(),
                           getAxis(), getBlockSize(), "y_scale",
                           "y_zero_point");
}

LogicalResult DequantizeLinearOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  results.push_back(rankedType(adaptor.getX()).clone(
      getElementTypeOrSelf(adaptor.getXScale())));
  return success();
}

LogicalResult DequantizeLinearOp::verify() {
  if (failed(verifyZeroPoint(getLoc(), getX(), "x", getXZeroPoint(),
                             "x_zero_point")))
    return failure();
  return verifyQuantParams(*this, getX(), getXScale(), getXZeroPoint(),
                           getAxis(), getBlockSize(), "x_scale",
                           "x_zero_point");
}

LogicalResult DynamicQuantizeLinearOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location>, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Type u8 = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  results.push_back(rankedType(adaptor.getX()).clone(u8));
  results.push_back(tensorOf({}, Float32Type::get(ctx)));
  results.push_back(tensorOf({}, u8));
  return success();
}

/// A quantized matmul's result: matmul of `a` and `b` with `element`.
static LogicalResult pushMatMulResult(std::optional<Location> loc, Value a,
                                      Value b, Type element,
                                      SmallVectorImpl<Type> &results) {
  auto shape = inferMatMulShape(loc, rankedType(a).getShape(),
                                rankedType(b).getShape());
  if (failed(shape))
    return failure();
  results.push_back(tensorOf(*shape, element));
  return success();
}

LogicalResult MatMulIntegerOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(verifyZeroPoint(loc, adaptor.getA(), "A", adaptor.getAZeroPoint(),
                             "a_zero_point")) ||
      failed(verifyZeroPoint(loc, adaptor.getB(), "B", adaptor.getBZeroPoint(),
                             "b_zero_point")))
    return failure();
  return pushMatMulResult(loc, adaptor.getA(), adaptor.getB(),
                          IntegerType::get(ctx, 32), results);
}

LogicalResult QLinearMatMulOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(verifyZeroPoint(loc, adaptor.getA(), "a", adaptor.getAZeroPoint(),
                             "a_zero_point")) ||
      failed(verifyZeroPoint(loc, adaptor.getB(), "b", adaptor.getBZeroPoint(),
                             "b_zero_point")))
    return failure();
  return pushMatMulResult(loc, adaptor.getA(), adaptor.getB(),
                          getElementTypeOrSelf(adaptor.getYZeroPoint()),
                          results);
}

/// A quantized convolution's result with `element`: Conv's shape, zero points
/// of x's and w's element types, the per-output-channel operands (`w_scale`,
/// `w_zero_point`, the bias) with one or M entries.
template <typename AdaptorT>
static LogicalResult
pushQuantConvResult(std::optional<Location> loc, AdaptorT adaptor, Value xZp,
                    Value wZp, ArrayRef<std::pair<Value, StringRef>> perChannel,
                    Value bias, Type element, SmallVectorImpl<Type> &results) {
  Value x = adaptor.getX(), w = adaptor.getW();
  auto shape = inferConvShape(loc, x.getType(), w.getType(), adaptor.getGroup(),
                              getConvWindowAttrs(adaptor));
  if (failed(shape) ||
      failed(verifyZeroPoint(loc, x, "x", xZp, "x_zero_point")) ||
      failed(verifyZeroPoint(loc, w, "w", wZp, "w_zero_point")) ||
      failed(verifyChannelVector(loc, bias, (*shape)[1], "B")))
    return failure();
  for (auto [v, name] : perChannel)
    if (!isNone(v) && rankedType(v).getNumElements() != 1 &&
        failed(verifyChannelVector(loc, v, (*shape)[1], name)))
      return failure();
  results.push_back(tensorOf(*shape, element));
  return success();
}

LogicalResult QLinearConvOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  return pushQuantConvResult(
      loc, adaptor, adaptor.getXZeroPoint(), adaptor.getWZeroPoint(),
      {{adaptor.getWScale(), "w_scale"}, {adaptor.getWZeroPoint(), "w_zero_point"}},
      adaptor.getB(), getElementTypeOrSelf(adaptor.getYZeroPoint()), results);
}

LogicalResult ConvIntegerOp::inferReturnTypes(MLIRContext *ctx,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  return pushQuantConvResult(loc, adaptor, adaptor.getXZeroPoint(),
                             adaptor.getWZeroPoint(),
                             {{adaptor.getWZeroPoint(), "w_zero_point"}},
                             Value(), IntegerType::get(ctx, 32), results);
}

//===----------------------------------------------------------------------===//
// QuantizedMatMulOp
//===----------------------------------------------------------------------===//

LogicalResult QuantizedMatMulOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  auto aType = rankedType(adaptor.getA()), wType = rankedType(adaptor.getW());
  if (aType.getRank() < 1 || wType.getRank() != 2)
    return emitOptionalError(loc, "quantized_matmul needs A of rank >= 1 and "
                                  "a 2-D W [N, K], got ",
                             aType, " and ", wType);
  int64_t k = aType.getShape().back(), wk = wType.getDimSize(1);
  if (!ShapedType::isDynamic(k) && !ShapedType::isDynamic(wk) && k != wk)
    return emitOptionalError(loc, "A's last dim (", k,
                             ") must be W's second (", wk, ")");
  SmallVector<int64_t> shape(aType.getShape());
  shape.back() = wType.getDimSize(0);
  Value yZp = adaptor.getYZeroPoint();
  Type element = isNone(yZp) ? Type(Float32Type::get(ctx))
                             : getElementTypeOrSelf(yZp);
  results.push_back(tensorOf(shape, element));
  return success();
}

LogicalResult QuantizedMatMulOp::verify() {
  int64_t n = rankedType(getW()).getDimSize(0);
  // A per-column operand: one element, or N.
  auto perColumn = [&](Value v, StringRef name,
                       bool allowScalar) -> LogicalResult {
    if (isNone(v))
      return success();
    auto type = rankedType(v);
    if (type.getNumElements() == 1 && allowScalar)
      return success();
    if (type.getRank() == 1 &&
        (type.isDynamicDim(0) || ShapedType::isDynamic(n) ||
         type.getDimSize(0) == n))
      return success();
    return emitOpError() << name << " must have "
                         << (allowScalar ? "1 or " : "")
                         << n << " elements (one per output column), got "
                         << type;
  };
  if (failed(perColumn(getWZeroPoint(), "w_zero_point", true)) ||
      failed(perColumn(getWRowSums(), "w_row_sums", false)) ||
      failed(perColumn(getScale(), "scale", true)) ||
      failed(perColumn(getBias(), "bias", false)))
    return failure();
  for (auto [v, name] : {std::pair{getAZeroPoint(), "a_zero_point"},
                         std::pair{getYScale(), "y_scale"},
                         std::pair{getYZeroPoint(), "y_zero_point"}})
    if (!isNone(v) && rankedType(v).getNumElements() != 1)
      return emitOpError() << name << " must be per-tensor (one element), got "
                           << v.getType();
  if (isNone(getYScale()) != isNone(getYZeroPoint()))
    return emitOpError("y_scale and y_zero_point must be both given (an int8 "
                       "result) or both none (an f32 result)");
  if (failed(verifyZeroPoint(getLoc(), getA(), "A", getAZeroPoint(),
                             "a_zero_point")) ||
      failed(verifyZeroPoint(getLoc(), getW(), "W", getWZeroPoint(),
                             "w_zero_point")))
    return failure();
  if (getActivation() != "none" && getActivation() != "relu")
    return emitOpError("activation must be \"none\" or \"relu\", got \"")
           << getActivation() << "\"";
  return success();
}

LogicalResult QuantizedConvOp::verify() {
  auto x = rankedType(getX()), w = rankedType(getW()), y = rankedType(getY());
  if (x.getRank() != 4 || w.getRank() != 4 || y.getRank() != 4)
    return emitOpError("X, W and Y must be 4-D (NCHW, OHWI, NCHW), got ")
           << x << ", " << w << ", " << y;
  if (!x.hasStaticShape() || !w.hasStaticShape() || !y.hasStaticShape())
    return emitOpError("X, W and Y must have static shapes");
  ArrayRef<int64_t> strides = getStrides(), dilations = getDilations(),
                    pads = getPads();
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    return emitOpError("strides and dilations need 2 entries, pads 4");
  if (x.getDimSize(1) != w.getDimSize(3))
    return emitOpError("X has ") << x.getDimSize(1) << " channels, W "
                                 << w.getDimSize(3) << " (group must be 1)";
  int64_t m = w.getDimSize(0);
  SmallVector<int64_t> want{x.getDimSize(0), m};
  for (int i = 0; i < 2; ++i) {
    int64_t extent = (w.getDimSize(1 + i) - 1) * dilations[i] + 1;
    int64_t in = x.getDimSize(2 + i) + pads[i] + pads[2 + i];
    if (strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 || pads[2 + i] < 0 ||
        in < extent)
      return emitOpError("a window that does not fit the padded input");
    want.push_back((in - extent) / strides[i] + 1);
  }
  if (y.getShape() != ArrayRef<int64_t>(want))
    return emitOpError("result shape must be [")
           << want[0] << ", " << want[1] << ", " << want[2] << ", " << want[3]
           << "], got " << y;
  auto perChannel = [&](Value v, StringRef name,
                        bool allowScalar) -> LogicalResult {
    if (isNone(v))
      return success();
    auto type = rankedType(v);
    if ((type.getNumElements() == 1 && allowScalar) ||
        (type.getRank() == 1 && type.getDimSize(0) == m))
      return success();
    return emitOpError() << name << " must have "
                         << (allowScalar ? "1 or " : "") << m
                         << " elements (one per output channel), got " << type;
  };
  if (failed(perChannel(getWZeroPoint(), "w_zero_point", true)) ||
      failed(perChannel(getWRowSums(), "w_row_sums", false)) ||
      failed(perChannel(getScale(), "scale", true)) ||
      failed(perChannel(getBias(), "bias", false)))
    return failure();
  for (auto [v, name] : {std::pair{getXZeroPoint(), "x_zero_point"},
                         std::pair{getYScale(), "y_scale"},
                         std::pair{getYZeroPoint(), "y_zero_point"}})
    if (!isNone(v) && rankedType(v).getNumElements() != 1)
      return emitOpError() << name << " must be per-tensor (one element), got "
                           << v.getType();
  if (isNone(getYScale()) != isNone(getYZeroPoint()))
    return emitOpError("y_scale and y_zero_point must be both given (an int8 "
                       "result) or both none (an f32 result)");
  Type want8 = isNone(getYZeroPoint()) ? Type(Float32Type::get(getContext()))
                                       : rankedType(getYZeroPoint())
                                             .getElementType();
  if (y.getElementType() != want8)
    return emitOpError("result element type must be ") << want8;
  if (failed(verifyZeroPoint(getLoc(), getX(), "X", getXZeroPoint(),
                             "x_zero_point")) ||
      failed(verifyZeroPoint(getLoc(), getW(), "W", getWZeroPoint(),
                             "w_zero_point")))
    return failure();
  if (getActivation() != "none" && getActivation() != "relu")
    return emitOpError("activation must be \"none\" or \"relu\", got \"")
           << getActivation() << "\"";
  return success();
}
