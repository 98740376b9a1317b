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

/// f64 -> f16/bf16 correctly rounded without a libcall (LLVM lowers that
/// fptrunc to __truncdfbf2 / __truncdfhf2, which the artifact's code cannot
/// resolve): f64 -> f32 rounded to odd, then f32 -> the half type to
/// nearest even. Rounding to odd into a format at least two bits wider than
/// the target makes the second rounding correct (f32 has 24 bits, the half
/// types 11 and 8). Round to odd: f32's round-to-nearest result r, and when
/// it is inexact and even, its neighbour towards the exact value instead.
static Value truncF64ToHalf(OpBuilder &b, Location loc, Value value,
                            Type target) {
  Type f32 = b.getF32Type(), f64 = b.getF64Type(), i32 = b.getI32Type();
  Value r = arith::TruncFOp::create(b, loc, f32, value);
  Value back = arith::ExtFOp::create(b, loc, f64, r);
  // Ordered: NaN is not "inexact" (its f32 form is a NaN already).
  Value inexact = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE,
                                        back, value);
  Value bits = arith::BitcastOp::create(b, loc, i32, r);
  Value one = arith::ConstantIntOp::create(b, loc, i32, 1);
  Value zero = arith::ConstantIntOp::create(b, loc, i32, 0);
  Value odd = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                    arith::AndIOp::create(b, loc, bits, one),
                                    zero);
  // Away from zero when |value| > |r|: r has value's sign (a zero too).
  Value greater = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                        value, back);
  Value negative = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OLT, value,
      arith::ConstantOp::create(b, loc, f64, b.getF64FloatAttr(0.0)));
  Value away = arith::XOrIOp::create(b, loc, greater, negative);
  Value minusOne = arith::ConstantIntOp::create(b, loc, i32, -1);
  Value step = arith::SelectOp::create(b, loc, away, one, minusOne);
  Value even = arith::XOrIOp::create(
      b, loc, odd, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  Value needStep = arith::AndIOp::create(b, loc, inexact, even);
  Value stepped = arith::AddIOp::create(b, loc, bits, step);
  Value oddBits = arith::SelectOp::create(b, loc, needStep, stepped, bits);
  Value toOdd = arith::BitcastOp::create(b, loc, f32, oddBits);
  return arith::TruncFOp::create(b, loc, target, toOdd);
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
    if (fromWidth > toWidth) {
      if (from.isF64() && toWidth == 16)
        return truncF64ToHalf(b, loc, value, target);
      return arith::TruncFOp::create(b, loc, target, value);
    }
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
