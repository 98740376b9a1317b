//===- Reduction.cpp - Lowering of the reduction kiln ops to linalg -------===//
//
// ReduceX becomes a linalg.generic with reduction iterators over the reduced
// dims into a tensor of the kept dims (initialised with the reduction's
// identity), an elementwise epilogue where the op needs one (mean, sqrt,
// log), and a tensor.expand_shape back to rank when keepdims is 1. f16/bf16
// accumulate in f32 as ONNX Runtime does. ArgMax/ArgMin carry the best value
// and its index in two outputs of one generic.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kiln/Conversion/KilnToLinalg.h"
#include "kiln/Dialect/KilnOps.h"

using namespace mlir;
using namespace kiln::lowering;

namespace {

using ReduceBodyFn = llvm::function_ref<Value(OpBuilder &, Location,
                                              ValueRange inputs, Value acc)>;

/// A linalg.generic reducing `input` over the dims flagged in `reduced` into
/// a tensor of the kept dims of element type init's, starting from `init`.
/// `keptInputs` (tensors of the kept dims) are read alongside; the body gets
/// the input element, then the kept inputs' elements, then the accumulator.
Value buildReduction(OpBuilder &b, Location loc, Value input,
                     ValueRange keptInputs, ArrayRef<bool> reduced, Value init,
                     ReduceBodyFn body, Value initTensor = {}) {
  MLIRContext *context = b.getContext();
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t rank = inputType.getRank();
  SmallVector<bool> keep;
  for (int64_t i = 0; i < rank; ++i)
    keep.push_back(!reduced[i]);
  AffineMap keptMap = selectMap(rank, keep, context);
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, context)};
  SmallVector<Value> inputs{input};
  for (Value kept : keptInputs) {
    maps.push_back(keptMap);
    inputs.push_back(kept);
  }
  return reduceDims(
      b, loc, inputs, maps, inputType.getShape(), reduced, init.getType(),
      init,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        return body(nested, nestedLoc, args.drop_back(), args.back());
      },
      initTensor);
}

/// ONNX Runtime's max/min/arg reductions start from the first element of
/// each reduced slice and take x when x > acc (x < acc): a leading NaN
/// stays, later NaNs are skipped. This is that start: the elements at index
/// 0 of the reduced dims, converted to `accType`, as a fresh tensor of the
/// kept dims; null when a reduced dim is empty.
Value firstAlongReduced(OpBuilder &b, Location loc, Value data,
                        ArrayRef<bool> reduced, Type accType) {
  auto type = cast<RankedTensorType>(data.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  SmallVector<int64_t> keptShape;
  for (auto [i, r] : llvm::enumerate(reduced)) {
    int64_t size = type.getDimSize(i);
    if (r && size == 0)
      return {};
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(r ? 1 : size));
    strides.push_back(b.getIndexAttr(1));
    if (!r)
      keptShape.push_back(size);
  }
  auto sliceType = RankedTensorType::get(keptShape, type.getElementType());
  Value slice = tensor::ExtractSliceOp::create(b, loc, sliceType, data,
                                               offsets, sizes, strides);
  return buildElementwise(
      b, loc, slice, sliceType.clone(accType),
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return extendScalar(nb, l, args[0], accType);
      });
}

/// `value` (of the kept dims) reshaped to `resultType`, which has the same
/// elements with the reduced dims kept as 1s.
Value restoreKeptDims(OpBuilder &b, Location loc, Value value,
                      RankedTensorType resultType, ArrayRef<bool> reduced) {
  if (value.getType() == resultType)
    return value;
  // Each kept dim groups with the reduced dims after it; leading reduced
  // dims join the first group. No kept dim at all: an empty reassociation.
  SmallVector<ReassociationIndices> groups;
  int64_t rank = resultType.getRank();
  SmallVector<int64_t> leading;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i]) {
      groups.emplace_back();
      if (groups.size() == 1)
        groups.back().append(leading.begin(), leading.end());
      groups.back().push_back(i);
    } else if (groups.empty()) {
      leading.push_back(i);
    } else {
      groups.back().push_back(i);
    }
  }
  return tensor::ExpandShapeOp::create(b, loc, resultType, value, groups);
}

/// The reduced dims implied by the static shapes alone, for axes only known
/// at run time: with keepdims, the dims whose size becomes 1 (a size-1 dim
/// reduced or not gives the same values); without, the dropped dims when
/// the result's dims embed into the input's in exactly one way (the
/// leftmost and rightmost embeddings agree). std::nullopt when ambiguous.
std::optional<SmallVector<bool>> reducedDimsFromShapes(ArrayRef<int64_t> in,
                                                       ArrayRef<int64_t> out,
                                                       bool keepdims) {
  int64_t rank = in.size();
  if (keepdims) {
    if ((int64_t)out.size() != rank)
      return std::nullopt;
    SmallVector<bool> reduced(rank, false);
    for (int64_t i = 0; i < rank; ++i) {
      if (in[i] == out[i])
        continue;
      if (out[i] != 1)
        return std::nullopt;
      reduced[i] = true;
    }
    return reduced;
  }
  int64_t outRank = out.size();
  if (outRank > rank)
    return std::nullopt;
  SmallVector<int64_t> left, right(outRank);
  for (int64_t i = 0, j = 0; j < outRank; ++i) {
    if (i == rank)
      return std::nullopt;
    if (in[i] == out[j]) {
      left.push_back(i);
      ++j;
    }
  }
  for (int64_t i = rank - 1, j = outRank - 1; j >= 0; --i) {
    if (i < 0)
      return std::nullopt;
    if (in[i] == out[j])
      right[j--] = i;
  }
  if (ArrayRef<int64_t>(left) != ArrayRef<int64_t>(right))
    return std::nullopt;
  SmallVector<bool> reduced(rank, true);
  for (int64_t i : left)
    reduced[i] = false;
  return reduced;
}

/// The reduced dims of a ReduceX op, or std::nullopt for an identity
/// (empty axes with noop_with_empty_axes); failure when the axes are not
/// constant and the shapes do not tell them.
template <typename OpTy>
FailureOr<std::optional<SmallVector<bool>>> reducedDims(OpTy op,
                                                        Value axesInput) {
  auto dataType = cast<RankedTensorType>(op.getData().getType());
  auto resultType = cast<RankedTensorType>(op.getType());
  int64_t rank = dataType.getRank();
  SmallVector<int64_t> axes;
  if (!isa<NoneType>(axesInput.getType())) {
    FailureOr<SmallVector<int64_t>> values = constantInts(axesInput);
    if (failed(values)) {
      // Axes known at run time only: the static result type (which the
      // run-time axes must produce) says which dims go.
      if (dataType == resultType && op.getNoopWithEmptyAxes() == 1)
        return std::optional<SmallVector<bool>>();
      auto reduced = reducedDimsFromShapes(
          dataType.getShape(), resultType.getShape(), op.getKeepdims() == 1);
      if (!reduced)
        return failure();
      return std::optional<SmallVector<bool>>(*reduced);
    }
    axes = *values;
  } else if (std::optional<ArrayRef<int64_t>> attr = op.getAxes()) {
    axes.assign(attr->begin(), attr->end());
  }
  if (axes.empty() && op.getNoopWithEmptyAxes() == 1)
    return std::optional<SmallVector<bool>>();
  SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t axis : axes)
    reduced[normalizeAxis(axis, rank)] = true;
  return std::optional<SmallVector<bool>>(reduced);
}

enum class ReduceKind {
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  L1,
  L2,
  LogSum,
  LogSumExp,
  SumSquare
};

template <typename OpTy, ReduceKind Kind>
struct ReduceLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    auto dims = reducedDims(op, adaptor.getAxesInput());
    if (failed(dims))
      return unsupported(op, "axes that are not a constant, and that the "
                                 "input and result shapes do not determine");
    Value data = adaptor.getData();
    if (!*dims) {
      rewriter.replaceOp(op, data);
      return success();
    }
    ArrayRef<bool> reduced = **dims;

    Type kilnElement = cast<RankedTensorType>(op.getData().getType())
                           .getElementType();
    Type element = toSignless(kilnElement);
    bool isFloat = isa<FloatType>(element);
    bool isUnsigned = isUnsignedInt(kilnElement);
    // Integer L2 / LogSum / LogSumExp as ONNX Runtime: the accumulator has
    // the integer type, and each sqrt / log / exp goes through double and
    // back toward zero (so LogSumExp adds trunc(exp(x - max)) per element).
    Type f64 = rewriter.getF64Type();
    auto intMath = [&](OpBuilder &b, Location l, Value v,
                       auto makeOp) -> Value {
      Value f = castScalar(b, l, v, kilnElement, f64);
      return castScalar(b, l, makeOp(b, l, f), f64, kilnElement);
    };
    Type acc = computeType(element);
    auto add = [&](OpBuilder &b, Location l, Value x, Value y) -> Value {
      if (isFloat)
        return arith::AddFOp::create(b, l, x, y);
      return arith::AddIOp::create(b, l, x, y);
    };
    auto mul = [&](OpBuilder &b, Location l, Value x, Value y) -> Value {
      if (isFloat)
        return arith::MulFOp::create(b, l, x, y);
      return arith::MulIOp::create(b, l, x, y);
    };

    // The shift of LogSumExp: the max over the reduced dims (0 where it is
    // infinite, so that all -inf gives -inf and not NaN).
    SmallVector<Value> kept;
    if (Kind == ReduceKind::LogSumExp && !isFloat) {
      kept.push_back(buildReduction(
          rewriter, loc, data, {}, reduced, lowestValue(rewriter, loc, kilnElement),
          [&](OpBuilder &b, Location l, ValueRange in, Value a) -> Value {
            if (isUnsigned)
              return arith::MaxUIOp::create(b, l, in[0], a);
            return arith::MaxSIOp::create(b, l, in[0], a);
          }));
    } else if (Kind == ReduceKind::LogSumExp) {
      Value max = buildReduction(
          rewriter, loc, data, {}, reduced, lowestValue(rewriter, loc, acc),
          [&](OpBuilder &b, Location l, ValueRange in, Value a) -> Value {
            return arith::MaximumFOp::create(
                b, l, extendScalar(b, l, in[0], acc), a);
          });
      auto maxType = cast<RankedTensorType>(max.getType());
      Value shift = buildElementwise(
          rewriter, loc, max, maxType,
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value m = args[0];
            Value inf = scalarConstant(b, l, acc, INFINITY);
            Value isInf = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OEQ,
                math::AbsFOp::create(b, l, m), inf);
            return arith::SelectOp::create(b, l, isInf,
                                           scalarConstant(b, l, acc, 0), m);
          });
      kept.push_back(shift);
    }

    Value init;
    switch (Kind) {
    case ReduceKind::Max:
      init = lowestValue(rewriter, loc, isFloat ? acc : kilnElement);
      break;
    case ReduceKind::Min:
      init = highestValue(rewriter, loc, isFloat ? acc : kilnElement);
      break;
    case ReduceKind::Prod:
      init = scalarConstant(rewriter, loc, acc, 1);
      break;
    default:
      init = scalarConstant(rewriter, loc, acc, 0);
    }

    // Float max/min as ONNX Runtime (see firstAlongReduced).
    Value initTensor;
    bool isMinMax = Kind == ReduceKind::Max || Kind == ReduceKind::Min;
    if (isFloat && isMinMax)
      initTensor = firstAlongReduced(rewriter, loc, data, reduced, acc);
    auto floatMinMax = [&](OpBuilder &b, Location l, Value x,
                           Value a) -> Value {
      Value better = arith::CmpFOp::create(
          b, l,
          Kind == ReduceKind::Max ? arith::CmpFPredicate::OGT
                                  : arith::CmpFPredicate::OLT,
          x, a);
      return arith::SelectOp::create(b, l, better, x, a);
    };

    Value result = buildReduction(
        rewriter, loc, data, kept, reduced, init,
        [&](OpBuilder &b, Location l, ValueRange in, Value a) -> Value {
          Value x = extendScalar(b, l, in[0], acc);
          switch (Kind) {
          case ReduceKind::Max:
            if (isFloat)
              return floatMinMax(b, l, x, a);
            if (isUnsigned)
              return arith::MaxUIOp::create(b, l, x, a);
            return arith::MaxSIOp::create(b, l, x, a);
          case ReduceKind::Min:
            if (isFloat)
              return floatMinMax(b, l, x, a);
            if (isUnsigned)
              return arith::MinUIOp::create(b, l, x, a);
            return arith::MinSIOp::create(b, l, x, a);
          case ReduceKind::Prod:
            return mul(b, l, x, a);
          case ReduceKind::L1:
            if (isFloat)
              return add(b, l, math::AbsFOp::create(b, l, x), a);
            if (isUnsigned)
              return add(b, l, x, a);
            return add(b, l, math::AbsIOp::create(b, l, x), a);
          case ReduceKind::L2:
          case ReduceKind::SumSquare:
            return add(b, l, mul(b, l, x, x), a);
          case ReduceKind::LogSumExp: {
            if (!isFloat) {
              Value shifted = arith::SubIOp::create(b, l, x, in[1]);
              Value e = intMath(b, l, shifted, [](OpBuilder &ob, Location ol,
                                                  Value v) -> Value {
                return math::ExpOp::create(ob, ol, v);
              });
              return add(b, l, e, a);
            }
            Value shifted = arith::SubFOp::create(b, l, x, in[1]);
            return add(b, l, math::ExpOp::create(b, l, shifted), a);
          }
          default:
            return add(b, l, x, a);
          }
        },
        initTensor);

    // Epilogue: finish the value and round f32 accumulators back.
    int64_t count = 1;
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(data.getType()).getShape();
    // A mean over dynamic dims divides by their run-time product.
    Value dynamicCount;
    for (auto [i, r] : llvm::enumerate(reduced)) {
      if (!r)
        continue;
      if (!ShapedType::isDynamic(shape[i])) {
        count *= shape[i];
        continue;
      }
      Value dim = dimOf(rewriter, loc, data, i);
      dynamicCount = dynamicCount
                         ? arith::MulIOp::create(rewriter, loc, dynamicCount, dim)
                         : dim;
    }
    if (dynamicCount && Kind == ReduceKind::Mean) {
      dynamicCount = arith::MulIOp::create(
          rewriter, loc, dynamicCount,
          arith::ConstantIndexOp::create(rewriter, loc, count));
      Type intType = isa<FloatType>(acc) ? rewriter.getI64Type() : acc;
      dynamicCount =
          arith::IndexCastOp::create(rewriter, loc, intType, dynamicCount);
      if (isa<FloatType>(acc))
        dynamicCount = arith::SIToFPOp::create(rewriter, loc, acc, dynamicCount);
    }
    auto countOf = [&](OpBuilder &b, Location l) -> Value {
      return dynamicCount ? dynamicCount : scalarConstant(b, l, acc, count);
    };
    auto reducedType = cast<RankedTensorType>(result.getType());
    bool needsEpilogue = acc != element || Kind == ReduceKind::Mean ||
                         Kind == ReduceKind::L2 ||
                         Kind == ReduceKind::LogSum ||
                         Kind == ReduceKind::LogSumExp;
    if (needsEpilogue) {
      SmallVector<Value> inputs{result};
      inputs.append(kept);
      result = buildElementwise(
          rewriter, loc, inputs, reducedType.clone(element),
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value v = args[0];
            switch (Kind) {
            case ReduceKind::Mean:
              if (isFloat)
                v = arith::DivFOp::create(b, l, v, countOf(b, l));
              else if (isUnsigned)
                v = arith::DivUIOp::create(b, l, v, countOf(b, l));
              else
                v = arith::DivSIOp::create(b, l, v, countOf(b, l));
              break;
            case ReduceKind::L2:
              v = isFloat ? Value(math::SqrtOp::create(b, l, v))
                          : intMath(b, l, v,
                                    [](OpBuilder &ob, Location ol,
                                       Value x) -> Value {
                                      return math::SqrtOp::create(ob, ol, x);
                                    });
              break;
            case ReduceKind::LogSum:
            case ReduceKind::LogSumExp: {
              auto log = [](OpBuilder &ob, Location ol, Value x) -> Value {
                return math::LogOp::create(ob, ol, x);
              };
              v = isFloat ? log(b, l, v) : intMath(b, l, v, log);
              if (Kind == ReduceKind::LogSumExp)
                v = add(b, l, v, args[1]);
              break;
            }
            default:
              break;
            }
            return truncateScalar(b, l, v, element);
          });
    }
    rewriter.replaceOp(op,
                       restoreKeptDims(rewriter, loc, result, resultType,
                                       reduced));
    return success();
  }
};

/// ArgMax / ArgMin: the generic carries (best value, its index); ties keep
/// the first index, or the last with select_last_index.
template <typename OpTy, bool IsMax>
struct ArgReduceLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    Value data = adaptor.getData();
    auto dataType = cast<RankedTensorType>(data.getType());
    int64_t rank = dataType.getRank();
    Type kilnElement =
        cast<RankedTensorType>(op.getData().getType()).getElementType();
    Type element = dataType.getElementType();
    bool isFloat = isa<FloatType>(element);
    bool isUnsigned = isUnsignedInt(kilnElement);
    bool last = op.getSelectLastIndex() == 1;
    if (rank == 0)
      return unsupported(op, "a 0-d input");
    int64_t axis = normalizeAxis(op.getAxis(), rank);

    SmallVector<bool> reduced(rank, false);
    reduced[axis] = true;
    SmallVector<int64_t> keptShape;
    SmallVector<AffineExpr> keptExprs;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t i = 0; i < rank; ++i) {
      if (i == axis) {
        iterators.push_back(utils::IteratorType::reduction);
        continue;
      }
      iterators.push_back(utils::IteratorType::parallel);
      keptShape.push_back(dataType.getDimSize(i));
      keptExprs.push_back(getAffineDimExpr(i, context));
    }
    Type i64 = rewriter.getI64Type();
    auto valueType = RankedTensorType::get(keptShape, element);
    auto indexType = RankedTensorType::get(keptShape, i64);
    // Start from the first element as ONNX Runtime (a leading NaN wins,
    // later ones are skipped); an empty axis keeps the identity.
    Value values = firstAlongReduced(rewriter, loc, data, reduced, element);
    if (!values)
      values = filledTensor(rewriter, loc, valueType,
                            IsMax ? lowestValue(rewriter, loc, kilnElement)
                                  : highestValue(rewriter, loc, kilnElement));
    Value indices = filledTensor(rewriter, loc, indexType,
                                 scalarConstant(rewriter, loc, i64, 0));
    AffineMap keptMap = AffineMap::get(rank, 0, keptExprs, context);
    SmallVector<AffineMap> maps{
        AffineMap::getMultiDimIdentityMap(rank, context), keptMap, keptMap};

    arith::CmpFPredicate fpred =
        IsMax ? (last ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OGT)
              : (last ? arith::CmpFPredicate::OLE : arith::CmpFPredicate::OLT);
    arith::CmpIPredicate ipred;
    if (isUnsigned)
      ipred = IsMax ? (last ? arith::CmpIPredicate::uge
                            : arith::CmpIPredicate::ugt)
                    : (last ? arith::CmpIPredicate::ule
                            : arith::CmpIPredicate::ult);
    else
      ipred = IsMax ? (last ? arith::CmpIPredicate::sge
                            : arith::CmpIPredicate::sgt)
                    : (last ? arith::CmpIPredicate::sle
                            : arith::CmpIPredicate::slt);

    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valueType, indexType}, ValueRange{data},
        ValueRange{values, indices}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = args[0], best = args[1], bestIndex = args[2];
          Value better =
              isFloat ? Value(arith::CmpFOp::create(b, l, fpred, x, best))
                      : Value(arith::CmpIOp::create(b, l, ipred, x, best));
          Value index = arith::IndexCastOp::create(
              b, l, i64, linalg::IndexOp::create(b, l, axis));
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, better, x, best),
                         arith::SelectOp::create(b, l, better, index,
                                                 bestIndex)});
        });
    rewriter.replaceOp(op, restoreKeptDims(rewriter, loc, generic.getResult(1),
                                           resultType, reduced));
    return success();
  }
};

} // namespace

void kiln::populateReductionToLinalgPatterns(const TypeConverter &converter,
                                             RewritePatternSet &patterns) {
  patterns.add<ReduceLowering<kiln::ReduceSumOp, ReduceKind::Sum>,
               ReduceLowering<kiln::ReduceMeanOp, ReduceKind::Mean>,
               ReduceLowering<kiln::ReduceMaxOp, ReduceKind::Max>,
               ReduceLowering<kiln::ReduceMinOp, ReduceKind::Min>,
               ReduceLowering<kiln::ReduceProdOp, ReduceKind::Prod>,
               ReduceLowering<kiln::ReduceL1Op, ReduceKind::L1>,
               ReduceLowering<kiln::ReduceL2Op, ReduceKind::L2>,
               ReduceLowering<kiln::ReduceLogSumOp, ReduceKind::LogSum>,
               ReduceLowering<kiln::ReduceLogSumExpOp, ReduceKind::LogSumExp>,
               ReduceLowering<kiln::ReduceSumSquareOp, ReduceKind::SumSquare>,
               ArgReduceLowering<kiln::ArgMaxOp, true>,
               ArgReduceLowering<kiln::ArgMinOp, false>>(
      converter, patterns.getContext());
}
