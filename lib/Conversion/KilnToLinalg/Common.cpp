//===- Common.cpp - Helpers shared by the kiln -> linalg patterns ---------===//

#include "Common.h"

#include "llvm/ADT/StringSet.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/ShapeInference.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
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

Type elementTypeOf(Value value) {
  return cast<ShapedType>(value.getType()).getElementType();
}

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

bool isNone(Value value) { return !value || isa<NoneType>(value.getType()); }

Type computeType(Type elementType) {
  if (isa<FloatType>(elementType) && elementType.getIntOrFloatBitWidth() < 32)
    return Float32Type::get(elementType.getContext());
  return elementType;
}

Value extendScalar(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return arith::ExtFOp::create(b, loc, type, value);
}

Value truncateScalar(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return arith::TruncFOp::create(b, loc, type, value);
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

static thread_local DynamicDims *currentDims = nullptr;

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                  ValueRange dynamicSizes) {
  if (type.hasStaticShape())
    return tensor::EmptyOp::create(b, loc, type.getShape(),
                                   type.getElementType());
  if (dynamicSizes.empty() && currentDims)
    return tensor::EmptyOp::create(b, loc, type,
                                   currentDims->sizesFor(b, loc, type));
  return tensor::EmptyOp::create(b, loc, type, dynamicSizes);
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   Value value, ValueRange dynamicSizes) {
  Value empty = emptyTensor(b, loc, type, dynamicSizes);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

Value dimOf(OpBuilder &b, Location loc, Value tensor, int64_t dim) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(dim))
    return arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim));
  return tensor::DimOp::create(b, loc, tensor, dim);
}

SmallVector<Value> dynamicSizesLike(OpBuilder &b, Location loc,
                                    RankedTensorType type, Value like) {
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(dimOf(b, loc, like, d));
  return sizes;
}

SmallVector<Value> loopDynamicSizes(OpBuilder &b, Location loc,
                                    ValueRange inputs,
                                    ArrayRef<AffineMap> maps,
                                    ArrayRef<int64_t> loopShape) {
  SmallVector<Value> sizes;
  for (auto [d, size] : llvm::enumerate(loopShape)) {
    if (!ShapedType::isDynamic(size))
      continue;
    Value found;
    for (auto [input, map] : llvm::zip(inputs, maps)) {
      auto type = dyn_cast<RankedTensorType>(input.getType());
      if (!type)
        continue;
      for (auto [p, expr] : llvm::enumerate(map.getResults())) {
        auto dimExpr = dyn_cast<AffineDimExpr>(expr);
        if (dimExpr && dimExpr.getPosition() == d && type.isDynamicDim(p)) {
          found = tensor::DimOp::create(b, loc, input, p);
          break;
        }
      }
      if (found)
        break;
    }
    sizes.push_back(found); // null: no input reads this loop dim
  }
  return sizes;
}

DynamicDims::DynamicDims(const SymbolicShapes &shapes, func::FuncOp main)
    : shapes(shapes) {
  OpBuilder b(main.getBody());
  b.setInsertionPointToStart(&main.getBody().front());
  for (const ShapeSymbol &symbol : shapes.symbols())
    symbolValues.push_back(tensor::DimOp::create(
        b, main.getLoc(), main.getArgument(symbol.argument), symbol.dim));
  previous = currentDims;
  currentDims = this;
}

DynamicDims::~DynamicDims() { currentDims = previous; }

DynamicDims *activeDynamicDims() { return currentDims; }

SmallVector<Value> DynamicDims::sizesFor(OpBuilder &b, Location loc,
                                         RankedTensorType type) {
  // The op's results first, then its operands: the first value of this
  // shape with known symbolic dims; another of the same shape with other
  // dims makes the choice ambiguous.
  std::optional<SymbolicDims> chosen;
  bool ambiguous = false;
  auto consider = [&](ValueRange candidates) {
    for (Value v : candidates) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t || t.getShape() != type.getShape())
        continue;
      std::optional<SymbolicDims> dims = shapes.shapeOf(v);
      if (!dims)
        continue;
      if (!chosen) {
        chosen = dims;
        continue;
      }
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d) && (*chosen)[d] != (*dims)[d])
          ambiguous = true;
    }
  };
  if (current) {
    consider(current->getResults());
    if (!chosen)
      consider(current->getOperands());
  }
  SmallVector<Value> sizes;
  if (!chosen || ambiguous) {
    if (!errors || current) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "dynamic shape: cannot size a " << type
         << " of its lowering from its operands and results";
      if (current)
        (void)unsupported(current, text);
      else
        emitError(loc) << text;
    }
    errors = true;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        sizes.push_back(arith::ConstantIndexOp::create(b, loc, 1));
    return sizes;
  }
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(
          SymbolicShapes::materialize(b, loc, (*chosen)[d], symbolValues));
  return sizes;
}

FailureOr<SmallVector<Value>> resultSizes(OpBuilder &b, Location loc,
                                          Value kilnValue) {
  auto type = cast<RankedTensorType>(kilnValue.getType());
  SmallVector<Value> sizes;
  if (type.hasStaticShape())
    return sizes;
  if (!currentDims)
    return failure();
  std::optional<SymbolicDims> dims = currentDims->shapes.shapeOf(kilnValue);
  if (!dims)
    return failure();
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(SymbolicShapes::materialize(b, loc, (*dims)[d],
                                                  currentDims->symbolValues));
  return sizes;
}

FailureOr<SmallVector<OpFoldResult>>
resultMixedSizes(OpBuilder &b, Location loc, Value kilnValue,
                 RankedTensorType type) {
  FailureOr<SmallVector<Value>> dynamicSizes = resultSizes(b, loc, kilnValue);
  if (failed(dynamicSizes))
    return failure();
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0, next = 0; d < type.getRank(); ++d)
    sizes.push_back(type.isDynamicDim(d)
                        ? OpFoldResult((*dynamicSizes)[next++])
                        : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  return sizes;
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

AffineMap selectMap(unsigned rank, ArrayRef<bool> keep, MLIRContext *context) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < rank; ++i)
    if (keep[i])
      exprs.push_back(getAffineDimExpr(i, context));
  return AffineMap::get(rank, 0, exprs, context);
}

AffineMap dimRangeMap(int64_t rank, int64_t first, int64_t count,
                      MLIRContext *context) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = first; d < first + count; ++d)
    exprs.push_back(getAffineDimExpr(d, context));
  return AffineMap::get(rank, 0, exprs, context);
}

Value buildGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                   ArrayRef<AffineMap> maps,
                   ArrayRef<utils::IteratorType> iterators, ScalarBodyFn body) {
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc,
                                body(nested, nestedLoc, args));
      });
  return generic.getResult(0);
}

Value buildParallel(OpBuilder &b, Location loc, ValueRange inputs,
                    ArrayRef<AffineMap> maps, RankedTensorType resultType,
                    ScalarBodyFn body, ValueRange dynamicSizes) {
  MLIRContext *context = b.getContext();
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> allMaps(maps);
  allMaps.push_back(AffineMap::getMultiDimIdentityMap(rank, context));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  SmallVector<Value> sizes(dynamicSizes);
  if (sizes.empty() && !resultType.hasStaticShape()) {
    sizes = loopDynamicSizes(b, loc, inputs, maps, resultType.getShape());
    if (llvm::any_of(sizes, [](Value v) { return !v; }))
      sizes.clear(); // emptyTensor sizes it from the op being lowered
  }
  return buildGeneric(
      b, loc, inputs, emptyTensor(b, loc, resultType, sizes), allMaps,
      iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        return body(nested, nestedLoc, args.drop_back());
      });
}

Value copyGeneric(OpBuilder &b, Location loc, Value input, AffineMap inputMap,
                  RankedTensorType resultType) {
  return buildParallel(
      b, loc, input, inputMap, resultType,
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                       RankedTensorType resultType, ScalarBodyFn body) {
  MLIRContext *context = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(broadcastMap(cast<RankedTensorType>(input.getType()).getShape(),
                                shape, context));
  return buildParallel(b, loc, inputs, maps, resultType, body);
}

Value reduceDims(OpBuilder &b, Location loc, ValueRange inputs,
                 ArrayRef<AffineMap> inputMaps, ArrayRef<int64_t> loopShape,
                 ArrayRef<bool> reduced, Type accType, Value identity,
                 ScalarBodyFn combine, Value initTensor) {
  MLIRContext *context = b.getContext();
  unsigned rank = loopShape.size();
  SmallVector<bool> keep;
  SmallVector<int64_t> keptShape;
  SmallVector<utils::IteratorType> iterators;
  for (unsigned i = 0; i < rank; ++i) {
    keep.push_back(!reduced[i]);
    if (!reduced[i])
      keptShape.push_back(loopShape[i]);
    iterators.push_back(reduced[i] ? utils::IteratorType::reduction
                                   : utils::IteratorType::parallel);
  }
  Value init = initTensor;
  if (!init) {
    SmallVector<Value> loopSizes =
        loopDynamicSizes(b, loc, inputs, inputMaps, loopShape);
    SmallVector<Value> keptSizes;
    for (unsigned i = 0, next = 0; i < rank; ++i) {
      if (!ShapedType::isDynamic(loopShape[i]))
        continue;
      Value size = loopSizes[next++];
      if (!reduced[i])
        keptSizes.push_back(size);
    }
    if (llvm::any_of(keptSizes, [](Value v) { return !v; }))
      keptSizes.clear();
    init = filledTensor(b, loc, RankedTensorType::get(keptShape, accType),
                        identity, keptSizes);
  }
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(selectMap(rank, keep, context));
  return buildGeneric(b, loc, inputs, init, maps, iterators, combine);
}

Value truncateTensor(OpBuilder &b, Location loc, Value value,
                     Type elementType) {
  auto type = tensorType(value);
  if (type.getElementType() == elementType)
    return value;
  return buildElementwise(b, loc, value, type.clone(elementType),
                          [&](OpBuilder &nb, Location nl, ValueRange args) {
                            return truncateScalar(nb, nl, args[0],
                                                  elementType);
                          });
}

/// reshapeTo with dynamic dims: a collapse or an expand (each expanded group
/// with at most one dynamic dim: the source dim divided by the static ones),
/// else tensor.reshape to sizes from the op being lowered.
static Value reshapeDynamic(OpBuilder &b, Location loc, Value value,
                            RankedTensorType type) {
  auto source = tensorType(value);
  if (source.getRank() > type.getRank()) {
    if (auto reassociation = getReassociationIndicesForReshape(source, type)) {
      auto collapsed = tensor::CollapseShapeOp::inferCollapsedType(
          source, *reassociation);
      if (collapsed.getShape() == type.getShape())
        return tensor::CollapseShapeOp::create(b, loc, type, value,
                                               *reassociation);
    }
  } else if (source.getRank() < type.getRank()) {
    if (auto reassociation = getReassociationIndicesForReshape(type, source)) {
      SmallVector<OpFoldResult> sizes;
      bool ok = true;
      for (auto [g, group] : llvm::enumerate(*reassociation)) {
        int64_t staticProduct = 1, dynamicCount = 0;
        for (int64_t d : group) {
          if (type.isDynamicDim(d))
            ++dynamicCount;
          else
            staticProduct *= type.getDimSize(d);
        }
        if (dynamicCount > 1 ||
            (dynamicCount == 1) != source.isDynamicDim(g)) {
          ok = false;
          break;
        }
        for (int64_t d : group) {
          if (!type.isDynamicDim(d)) {
            sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
            continue;
          }
          Value size = dimOf(b, loc, value, g);
          if (staticProduct != 1)
            size = arith::DivUIOp::create(
                b, loc, size,
                arith::ConstantIndexOp::create(b, loc, staticProduct));
          sizes.push_back(size);
        }
      }
      if (ok)
        return tensor::ExpandShapeOp::create(b, loc, type, value,
                                             *reassociation, sizes);
    }
  }
  SmallVector<Value> dynamicSizes =
      currentDims ? currentDims->sizesFor(b, loc, type) : SmallVector<Value>();
  SmallVector<Value> sizes;
  for (int64_t d = 0, next = 0; d < type.getRank(); ++d)
    sizes.push_back(type.isDynamicDim(d)
                        ? (next < int64_t(dynamicSizes.size())
                               ? dynamicSizes[next++]
                               : arith::ConstantIndexOp::create(b, loc, 1))
                        : arith::ConstantIndexOp::create(b, loc,
                                                         type.getDimSize(d)));
  Value shape = tensor::FromElementsOp::create(b, loc, sizes);
  return tensor::ReshapeOp::create(b, loc, type, value, shape);
}

Value expandToSizes(OpBuilder &b, Location loc, RankedTensorType type,
                    Value value, ArrayRef<ReassociationIndices> groups,
                    ArrayRef<OpFoldResult> sizes) {
  bool twoInAGroup = llvm::any_of(groups, [&](const ReassociationIndices &g) {
    return llvm::count_if(g, [&](int64_t d) { return type.isDynamicDim(d); }) >
           1;
  });
  if (!twoInAGroup)
    return tensor::ExpandShapeOp::create(b, loc, type, value, groups, sizes);
  SmallVector<Value> values;
  for (OpFoldResult size : sizes)
    values.push_back(getValueOrCreateConstantIndexOp(b, loc, size));
  Value shape = tensor::FromElementsOp::create(b, loc, values);
  return tensor::ReshapeOp::create(b, loc, type, value, shape);
}

Value reshapeTo(OpBuilder &b, Location loc, Value value,
                RankedTensorType type) {
  auto source = tensorType(value);
  if (source.getShape() == type.getShape())
    return value;
  if (!source.hasStaticShape() || !type.hasStaticShape())
    return reshapeDynamic(b, loc, value, type);
  if (source.getRank() > type.getRank()) {
    if (auto reassociation = getReassociationIndicesForReshape(source, type))
      return tensor::CollapseShapeOp::create(b, loc, type, value,
                                             *reassociation);
  } else if (source.getRank() < type.getRank()) {
    if (auto reassociation = getReassociationIndicesForReshape(type, source))
      return tensor::ExpandShapeOp::create(b, loc, type, value, *reassociation);
  }
  // General case: through 1-D (rank 0 is 1-D with no reassociation). A
  // rank-0 tensor has one element: it expands to tensor<1x...> with an
  // empty reassociation (and a tensor<1x...> collapses to it likewise).
  auto allDims = [](int64_t rank) {
    SmallVector<ReassociationIndices> groups;
    if (rank) {
      groups.emplace_back();
      for (int64_t i = 0; i < rank; ++i)
        groups[0].push_back(i);
    }
    return groups;
  };
  auto flatType = source.clone({source.getNumElements()});
  Value flat = value;
  if (source.getRank() > 1)
    flat = tensor::CollapseShapeOp::create(b, loc, flatType, value,
                                           allDims(source.getRank()));
  else if (source.getRank() == 0)
    flat = tensor::ExpandShapeOp::create(b, loc, flatType, value, allDims(0));
  if (type.getRank() == 1)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat, allDims(0));
  return tensor::ExpandShapeOp::create(b, loc, type, flat,
                                       allDims(type.getRank()));
}

Value reshapeTo(OpBuilder &b, Location loc, Value value,
                ArrayRef<int64_t> shape) {
  return reshapeTo(b, loc, value, tensorType(value).clone(shape));
}

Value extractFirst(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<Value> indices(type.getRank(),
                             arith::ConstantIndexOp::create(b, loc, 0));
  return tensor::ExtractOp::create(b, loc, tensor, indices);
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

DenseElementsAttr constantElements(Value value) {
  DenseElementsAttr attr;
  if (auto constant = value.getDefiningOp<kiln::ConstantOp>())
    attr = dyn_cast<DenseElementsAttr>(constant.getValue());
  else
    matchPattern(value, m_Constant(&attr));
  return attr;
}

FailureOr<SmallVector<int64_t>> constantInts(Value value) {
  DenseElementsAttr attr = constantElements(value);
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

/// True when dims [from, to) of `v`'s type are static.
static bool staticDims(Value v, int64_t from, int64_t to) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return true;
  for (int64_t d = std::max<int64_t>(from, 0);
       d < std::min<int64_t>(to, type.getRank()); ++d)
    if (type.isDynamicDim(d))
      return false;
  return true;
}

/// A channels-first Conv or pool (or global pool) whose spatial dims are
/// run-time sizes:
/// explicit (or no) padding, so that the pads stay constants; no ceil_mode
/// overhang; static channels and kernel; a plain or depthwise convolution
/// (the grouped generic reshapes the padded input by static sizes); an
/// AveragePool whose divisor is the kernel's size everywhere (no padding,
/// or the padding counted), a MaxPool without its Indices.
static bool dynamicWindowSupported(Operation *op) {
  StringRef name = op->getName().getStringRef();
  auto x = cast<RankedTensorType>(op->getOperand(0).getType());
  if (x.getRank() < 3 || x.isDynamicDim(1))
    return false;
  auto autoPad = op->getAttrOfType<StringAttr>("auto_pad");
  if (autoPad && autoPad.getValue() != "NOTSET" &&
      autoPad.getValue() != "VALID")
    return false;
  if (auto ceil = op->getAttrOfType<IntegerAttr>("ceil_mode");
      ceil && ceil.getInt() != 0)
    return false;
  auto pads = op->getAttrOfType<DenseI64ArrayAttr>("pads");
  bool padded = pads && llvm::any_of(pads.asArrayRef(),
                                     [](int64_t p) { return p != 0; });
  if (name == "kiln.conv" || name == "kiln.fused_conv") {
    auto w = cast<RankedTensorType>(op->getOperand(1).getType());
    auto group = op->getAttrOfType<IntegerAttr>("group");
    int64_t g = group ? group.getInt() : 1;
    bool depthwise = g == x.getDimSize(1) && w.getDimSize(0) == g &&
                     w.getDimSize(1) == 1 && x.getRank() == 4;
    return w.hasStaticShape() && (g == 1 || depthwise);
  }
  if (name == "kiln.global_average_pool" || name == "kiln.global_max_pool")
    return true;
  // Constant padding by constant, non-negative amounts: a tensor.pad of
  // the run-time sizes (what PyTorch exports before an AveragePool that
  // counts its padding).
  if (name == "kiln.pad") {
    auto mode = op->getAttrOfType<StringAttr>("mode");
    std::optional<SmallVector<int64_t>> pads =
        kiln::getKnownIntValues(op->getOperand(1));
    return (!mode || mode.getValue() == "constant") && pads &&
           llvm::all_of(*pads, [](int64_t p) { return p >= 0; });
  }
  if (name == "kiln.max_pool")
    return op->getResult(1).use_empty();
  if (name == "kiln.average_pool") {
    auto include = op->getAttrOfType<IntegerAttr>("count_include_pad");
    return !padded || (include && include.getInt() != 0);
  }
  return false;
}

bool supportsDynamicShapes(Operation *op) {
  // The patterns that size their tensors from dynamic dims (emptyTensor and
  // friends while DynamicDims listens, buildParallel, reduceDims,
  // reshapeTo) and compute nothing else from a dynamic size. Each entry
  // states what must stay static.
  static const llvm::StringSet<> anywhere = {
      "kiln.add", "kiln.sub", "kiln.mul", "kiln.div", "kiln.pow",
      "kiln.max", "kiln.min", "kiln.equal", "kiln.less", "kiln.greater",
      "kiln.less_or_equal", "kiln.greater_or_equal", "kiln.and", "kiln.or",
      "kiln.xor", "kiln.where", "kiln.cast", "kiln.clip", "kiln.identity",
      "kiln.gemm", "kiln.matmul", "kiln.fused_matmul", "kiln.reshape",
      "kiln.flatten", "kiln.squeeze", "kiln.unsqueeze", "kiln.transpose",
      "kiln.shape", "kiln.concat", "kiln.batch_normalization",
      "kiln.dropout", "kiln.slice", "kiln.expand", "kiln.constant_of_shape",
      "kiln.trilu", "kiln.split", "kiln.cum_sum", "kiln.gather",
      "kiln.gather_elements", "kiln.tensor_scatter", "kiln.range"};
  // Window ops: batch only (dims 2.. of the input and the result static).
  static const llvm::StringSet<> batchOnly = {
      "kiln.conv", "kiln.fused_conv", "kiln.max_pool", "kiln.average_pool",
      "kiln.global_average_pool", "kiln.global_max_pool"};
  StringRef name = op->getName().getStringRef();
  if (anywhere.contains(name) || op->hasTrait<OpTrait::Elementwise>())
    return true;
  if (name == "kiln.pad")
    return dynamicWindowSupported(op);
  if (batchOnly.contains(name))
    return (staticDims(op->getOperand(0), 1, INT64_MAX) &&
            staticDims(op->getResult(0), 1, INT64_MAX)) ||
           dynamicWindowSupported(op);
  auto rank = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  };
  auto axisAttr = [&](StringRef attr, int64_t fallback) {
    if (auto a = op->getAttrOfType<IntegerAttr>(attr))
      return normalizeAxis(a.getInt(), rank(op->getOperand(0)));
    return normalizeAxis(fallback, rank(op->getOperand(0)));
  };
  // Normalizations over [axis, rank): static (the mean divides by their count).
  if (name == "kiln.softmax" || name == "kiln.log_softmax")
    return true; // (no count of the axis: max, exp-sum, divide)
  if (name == "kiln.layer_normalization" || name == "kiln.rms_norm")
    return staticDims(op->getOperand(0), axisAttr("axis", -1), INT64_MAX);
  // Reductions (a mean divides by the run-time count).
  if (name.starts_with("kiln.reduce_"))
    return true;
  // Quantization parameters: per-tensor (one element), else along a dim.
  auto perTensor = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return !type || (type.hasStaticShape() && type.getNumElements() == 1);
  };
  // QDQ (per element; unblocked): per-tensor parameters anywhere, per-axis
  // ones (1-D, one per element of the axis) with the axis dim static.
  if (name == "kiln.quantize_linear" || name == "kiln.dequantize_linear") {
    if (perTensor(op->getOperand(1)) && perTensor(op->getOperand(2)))
      return true;
    int64_t axis = axisAttr("axis", 1);
    return staticDims(op->getOperand(0), axis, axis + 1) &&
           staticDims(op->getOperand(1), 0, INT64_MAX) &&
           staticDims(op->getOperand(2), 0, INT64_MAX);
  }
  if (name == "kiln.dynamic_quantize_linear")
    return true; // (min and max over all of x, then elementwise)
  // The int8 GEMM (A [..., K] viewed as [M, K], W [N, K]): any leading dims
  // of A (M, the kernel's run-time rows); K, the weight and the per-column
  // parameters static.
  if (name == "kiln.quantized_matmul") {
    Value a = op->getOperand(0);
    if (!staticDims(a, rank(a) - 1, INT64_MAX))
      return false;
    return llvm::all_of(op->getOperands().drop_front(), [](Value v) {
      return staticDims(v, 0, INT64_MAX);
    });
  }
  // ONNX's integer matmuls (numpy batch dims and M anywhere): static
  // parameters, per-tensor or along a static dim (the rows of A, the
  // columns of B).
  if (name == "kiln.matmul_integer" || name == "kiln.qlinear_matmul") {
    bool qlinear = name == "kiln.qlinear_matmul";
    Value a = op->getOperand(0), b = op->getOperand(qlinear ? 3 : 1);
    SmallVector<Value> aParams, bParams, yParams;
    if (qlinear) {
      aParams = {op->getOperand(1), op->getOperand(2)};
      bParams = {op->getOperand(4), op->getOperand(5)};
      yParams = {op->getOperand(6), op->getOperand(7)};
    } else {
      aParams = {op->getOperand(2)};
      bParams = {op->getOperand(3)};
    }
    for (Value v : llvm::concat<Value>(aParams, bParams, yParams))
      if (!staticDims(v, 0, INT64_MAX))
        return false;
    int64_t aRank = rank(a), bRank = rank(b);
    if (!llvm::all_of(aParams, perTensor) &&
        (aRank < 2 || !staticDims(a, aRank - 2, aRank - 1)))
      return false;
    return llvm::all_of(bParams, perTensor) ||
           (bRank >= 2 && staticDims(b, bRank - 1, bRank));
  }
  return false;
}

} // namespace kiln::lowering
