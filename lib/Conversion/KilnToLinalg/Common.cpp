//===- Common.cpp - Helpers shared by the kiln -> linalg patterns ---------===//

#include "Common.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln::lowering {

Type toSignless(Type type) {
  if (auto intType = dyn_cast<IntegerType>(type))
    if (!intType.isSignless())
      return IntegerType::get(type.getContext(), intType.getWidth());
  return type;
}

Type toSignlessType(Type type) {
  if (auto shaped = dyn_cast<RankedTensorType>(type))
    return shaped.clone(toSignless(shaped.getElementType()));
  return toSignless(type);
}

bool isUnsignedInt(Type kilnElementType) {
  auto intType = dyn_cast<IntegerType>(kilnElementType);
  return intType && (intType.isUnsigned() || intType.getWidth() == 1);
}

std::string describe(Operation *op) {
  std::string name;
  Location loc = kiln::stripOrigins(op->getLoc());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      loc = fused.getLocations().front();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    name = nameLoc.getName().str();
  std::string result;
  if (!name.empty())
    result = "ONNX node '" + name + "' (" + op->getName().getStringRef().str() + ")";
  else
    result = op->getName().getStringRef().str();
  return result;
}

LogicalResult unsupported(Operation *op, const llvm::Twine &why) {
  emitError(kiln::stripOrigins(op->getLoc())) << "cannot lower " << describe(op) << " to the CPU: " << why;
  return failure();
}

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   Value value) {
  Value empty = emptyTensor(b, loc, type);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
  if (type.isIndex())
    return arith::ConstantIndexOp::create(b, loc, static_cast<int64_t>(value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

static Value extremeValue(OpBuilder &b, Location loc, Type kilnType,
                          bool highest) {
  Type type = toSignless(kilnType);
  if (auto floatType = dyn_cast<FloatType>(type)) {
    APFloat inf = APFloat::getInf(floatType.getFloatSemantics(), !highest);
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, inf));
  }
  unsigned width = type.getIntOrFloatBitWidth();
  APInt value;
  if (isUnsignedInt(kilnType))
    value = highest ? APInt::getMaxValue(width) : APInt::getMinValue(width);
  else
    value = highest ? APInt::getSignedMaxValue(width)
                    : APInt::getSignedMinValue(width);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, value));
}

Value lowestValue(OpBuilder &b, Location loc, Type kilnType) {
  return extremeValue(b, loc, kilnType, /*highest=*/false);
}

Value highestValue(OpBuilder &b, Location loc, Type kilnType) {
  return extremeValue(b, loc, kilnType, /*highest=*/true);
}

AffineMap broadcastMap(ArrayRef<int64_t> operandShape,
                       ArrayRef<int64_t> resultShape, MLIRContext *context) {
  int64_t resultRank = resultShape.size();
  int64_t operandRank = operandShape.size();
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < operandRank; ++i) {
    int64_t resultDim = resultRank - operandRank + i;
    if (operandShape[i] == 1 && resultShape[resultDim] != 1)
      exprs.push_back(getAffineConstantExpr(0, context));
    else
      exprs.push_back(getAffineDimExpr(resultDim, context));
  }
  return AffineMap::get(resultRank, 0, exprs, context);
}

Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                       RankedTensorType resultType, ScalarBodyFn body) {
  MLIRContext *context = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(broadcastMap(cast<RankedTensorType>(input.getType()).getShape(),
                                shape, context));
  maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), context));
  SmallVector<utils::IteratorType> iterators(shape.size(),
                                             utils::IteratorType::parallel);
  Value init = emptyTensor(b, loc, resultType);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args.drop_back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

Value castScalar(OpBuilder &b, Location loc, Value value, Type from, Type to) {
  if (from == to)
    return value;
  Type target = toSignless(to);
  bool fromFloat = isa<FloatType>(from);
  bool toFloat = isa<FloatType>(to);
  // Anything -> bool: x != 0.
  if (to.isInteger(1)) {
    if (fromFloat) {
      Value zero = scalarConstant(b, loc, from, 0.0);
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, value,
                                   zero);
    }
    Value zero = scalarConstant(b, loc, toSignless(from), 0);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, value, zero);
  }
  if (fromFloat && toFloat) {
    unsigned fromWidth = from.getIntOrFloatBitWidth();
    unsigned toWidth = to.getIntOrFloatBitWidth();
    if (fromWidth < toWidth)
      return arith::ExtFOp::create(b, loc, target, value);
    if (fromWidth > toWidth)
      return arith::TruncFOp::create(b, loc, target, value);
    // f16 <-> bf16: through f32.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
    return arith::TruncFOp::create(b, loc, target, wide);
  }
  if (fromFloat) {
    if (isUnsignedInt(to))
      return arith::FPToUIOp::create(b, loc, target, value);
    return arith::FPToSIOp::create(b, loc, target, value);
  }
  if (toFloat) {
    if (isUnsignedInt(from))
      return arith::UIToFPOp::create(b, loc, target, value);
    return arith::SIToFPOp::create(b, loc, target, value);
  }
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth == toWidth)
    return value; // ui8 <-> i8: same bits.
  if (fromWidth > toWidth)
    return arith::TruncIOp::create(b, loc, target, value);
  if (isUnsignedInt(from))
    return arith::ExtUIOp::create(b, loc, target, value);
  return arith::ExtSIOp::create(b, loc, target, value);
}

FailureOr<SmallVector<int64_t>> constantInts(Value value) {
  DenseElementsAttr attr;
  if (auto constant = value.getDefiningOp<kiln::ConstantOp>())
    attr = dyn_cast<DenseElementsAttr>(constant.getValue());
  else if (!matchPattern(value, m_Constant(&attr)))
    return failure();
  if (!attr || !isa<IntegerType>(attr.getElementType()))
    return failure();
  SmallVector<int64_t> result;
  for (const APInt &v : attr.getValues<APInt>())
    result.push_back(v.getSExtValue());
  return result;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

bool hasStaticShapes(Operation *op) {
  auto isStatic = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return !tensor || tensor.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

} // namespace kiln::lowering
