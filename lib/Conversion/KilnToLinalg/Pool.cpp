//===- Pool.cpp - Lowering of the pooling ops to linalg -------------------===//
//
// MaxPool, AveragePool, LpPool and the global pools (and their channels-last
// forms from kiln-optimize-layout) become linalg.generic reductions over the
// window, or linalg's named pooling ops where they fit, followed by an
// elementwise generic. The window helpers they share with the convolutions
// are in NN.h.
//
//===----------------------------------------------------------------------===//

#include "NN.h"

#include "kiln/Dialect/KilnOps.h"

using namespace mlir;
using namespace kiln::lowering;

namespace {

/// An empty tensor of the kernel's shape: a pool's generic reads it (and
/// ignores the values) only so that its kernel loops get their extent, as
/// linalg's named pooling ops do.
Value windowShape(OpBuilder &b, Location loc, const Window &w,
                  Type elementType) {
  return emptyTensor(b, loc, RankedTensorType::get(w.kernel, elementType));
}

/// The number of kernel taps of window `o` along dim `i` that fall in
/// [lo, hi) of the unpadded input coordinates.
int64_t tapsInside(const Window &w, int64_t i, int64_t o, int64_t lo,
                   int64_t hi) {
  int64_t count = 0;
  for (int64_t k = 0; k < w.kernel[i]; ++k) {
    int64_t pos = o * w.strides[i] - w.padBegin[i] + k * w.dilations[i];
    count += pos >= lo && pos < hi;
  }
  return count;
}

/// MaxPool, AveragePool, LpPool: a linalg.generic over [N, C, out..., k...]
/// reading the padded input (-inf / the lowest integer for max, 0 for the
/// sums); AveragePool then divides by the number of taps counted (inside
/// the input, or inside the explicit padding with count_include_pad, never
/// the ceil_mode overhang); LpPool takes the p-th root.
template <typename OpTy, PoolKind Kind, bool ChannelsLast = false>
struct PoolLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto xType = tensorType(x);
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getY().getType()));
    Type kilnElementType =
        cast<RankedTensorType>(op.getX().getType()).getElementType();
    bool isUnsigned = isUnsignedInt(kilnElementType);
    int64_t rank = xType.getRank();
    // The spatial dims: after N and C, or (channels last) between them.
    int64_t firstSpatial = ChannelsLast ? 1 : 2;
    ArrayRef<int64_t> inShape =
        xType.getShape().slice(firstSpatial, rank - 2);
    ArrayRef<int64_t> outShape =
        resultType.getShape().slice(firstSpatial, rank - 2);
    FailureOr<Window> w = resolveWindow(op, inShape, {},
                                        kiln::getPoolWindowAttrs(op), outShape);
    if (failed(w))
      return failure();
    int64_t s = w->rank();
    int64_t p = 0;
    if constexpr (Kind == PoolKind::Lp) {
      p = op.getP();
      if (p < 1)
        return unsupported(op, "p = " + std::to_string(p) + " (must be >= 1)");
    }
    if constexpr (Kind == PoolKind::Max && !ChannelsLast) {
      if (!op.getIndices().use_empty())
        return lowerWithIndices(op, rewriter, x, resultType, *w);
    }

    Type elementType = resultType.getElementType();
    Type accElement = Kind == PoolKind::Max ? elementType
                                            : computeType(elementType);
    Value padValue = Kind == PoolKind::Max
                         ? lowestValue(rewriter, loc, kilnElementType)
                         : scalarConstant(rewriter, loc, elementType, 0);
    Value padded = padWindowInput(rewriter, loc, x, *w, outShape, padValue,
                                  ChannelsLast);
    Value identity = Kind == PoolKind::Max
                         ? lowestValue(rewriter, loc, kilnElementType)
                         : scalarConstant(rewriter, loc, accElement, 0);
    Value init =
        filledTensor(rewriter, loc, resultType.clone(accElement), identity);
    unsigned numLoops = 2 + 2 * s;
    auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
    // Loops (n, c, o..., k...), or (n, o..., c, k...) channels last: the
    // result is the identity over the first 2 + s either way.
    AffineMap xMap =
        ChannelsLast
            ? windowInputMapNhwc(numLoops, *w, context)
            : windowInputMap(numLoops, {d(0), d(1)}, 2, 2 + s, *w, context);
    SmallVector<AffineExpr> outExprs;
    for (unsigned i = 0; i < 2 + s; ++i)
      outExprs.push_back(d(i));
    SmallVector<IteratorType> iterators(2 + s, IteratorType::parallel);
    iterators.append(s, IteratorType::reduction);
    Value window = windowShape(rewriter, loc, *w, xType.getElementType());
    Value acc;
    // 2-D float max and sum pools are linalg's named pooling ops (their
    // bodies are maximumf / addf after extending to the accumulator).
    bool named = s == 2 && (Kind == PoolKind::Average ||
                            (Kind == PoolKind::Max &&
                             isa<FloatType>(xType.getElementType())));
    if (named) {
      SmallVector<NamedAttribute> attrs{
          rewriter.getNamedAttr("strides",
                                rewriter.getI64TensorAttr(w->strides)),
          rewriter.getNamedAttr("dilations",
                                rewriter.getI64TensorAttr(w->dilations))};
      SmallVector<Type> types{init.getType()};
      SmallVector<Value> ins{padded, window};
      if (Kind == PoolKind::Max && ChannelsLast)
        acc = linalg::PoolingNhwcMaxOp::create(rewriter, loc, types, ins,
                                               init, attrs)
                  .getResult(0);
      else if (Kind == PoolKind::Max)
        acc = linalg::PoolingNchwMaxOp::create(rewriter, loc, types, ins,
                                               init, attrs)
                  .getResult(0);
      else if (ChannelsLast)
        acc = linalg::PoolingNhwcSumOp::create(rewriter, loc, types, ins,
                                               init, attrs)
                  .getResult(0);
      else
        acc = linalg::PoolingNchwSumOp::create(rewriter, loc, types, ins,
                                               init, attrs)
                  .getResult(0);
    } else {
      acc = buildGeneric(
          rewriter, loc, {padded, window}, init,
          {xMap, dimRangeMap(numLoops, 2 + s, s, context),
           AffineMap::get(numLoops, 0, outExprs, context)},
          iterators, [&](OpBuilder &b, Location l, ValueRange args) {
            return poolCombine(b, l, Kind, args[0], args[2], isUnsigned, p);
          });
    }
    if constexpr (Kind == PoolKind::Max && ChannelsLast) {
      rewriter.replaceOp(op, acc);
      return success();
    } else if constexpr (Kind == PoolKind::Max) {
      rewriter.replaceOp(op, {acc, Value()});
      return success();
    }

    AffineMap identityMap = AffineMap::getMultiDimIdentityMap(rank, context);
    SmallVector<IteratorType> parallel(rank, IteratorType::parallel);
    Value result;
    if constexpr (Kind == PoolKind::Lp) {
      result = buildGeneric(
          rewriter, loc, acc, emptyTensor(rewriter, loc, resultType),
          {identityMap, identityMap}, parallel,
          [&](OpBuilder &b, Location l, ValueRange args) {
            return truncateScalar(b, l, lpRoot(b, l, args[0], p), elementType);
          });
    } else if constexpr (Kind == PoolKind::Average) {
      // Divisors: separable per spatial dim. Run-time sizes: every window
      // counts the whole kernel (no padding, or the padding counted, and
      // no ceil_mode overhang: supportsDynamicShapes).
      bool includePad = op.getCountIncludePad() != 0;
      bool dynamicSpatial = llvm::any_of(inShape, ShapedType::isDynamic) ||
                            llvm::any_of(outShape, ShapedType::isDynamic);
      SmallVector<SmallVector<int64_t>> perDim;
      for (int64_t i = 0; i < s && !dynamicSpatial; ++i) {
        int64_t lo = includePad ? -w->padBegin[i] : 0;
        int64_t hi = inShape[i] + (includePad ? w->padEnd[i] : 0);
        SmallVector<int64_t> counts;
        for (int64_t o = 0; o < outShape[i]; ++o)
          counts.push_back(tapsInside(*w, i, o, lo, hi));
        perDim.push_back(counts);
      }
      int64_t numOut = 1;
      for (int64_t o : outShape)
        numOut *= dynamicSpatial ? 1 : o;
      SmallVector<float> divisors;
      if (dynamicSpatial) {
        int64_t taps = 1;
        for (int64_t k : w->kernel)
          taps *= k;
        divisors.push_back(static_cast<float>(taps));
        numOut = 0;
      }
      for (int64_t flat = 0; flat < numOut; ++flat) {
        int64_t rest = flat, count = 1;
        for (int64_t i = s - 1; i >= 0; --i) {
          count *= perDim[i][rest % outShape[i]];
          rest /= outShape[i];
        }
        divisors.push_back(static_cast<float>(count));
      }
      bool uniform = llvm::all_equal(divisors);
      SmallVector<Value> inputs{acc};
      SmallVector<AffineMap> maps{identityMap};
      if (!uniform) {
        auto divType = RankedTensorType::get(outShape, rewriter.getF32Type());
        inputs.push_back(arith::ConstantOp::create(
            rewriter, loc, DenseElementsAttr::get(divType, ArrayRef(divisors))));
        SmallVector<AffineExpr> spatialExprs;
        for (int64_t i = 0; i < s; ++i)
          spatialExprs.push_back(d(firstSpatial + i));
        maps.push_back(AffineMap::get(rank, 0, spatialExprs, context));
      }
      maps.push_back(identityMap);
      float uniformDivisor = divisors.empty() ? 1.0f : divisors.front();
      result = buildGeneric(
          rewriter, loc, inputs, emptyTensor(rewriter, loc, resultType), maps,
          parallel, [&](OpBuilder &b, Location l, ValueRange args) {
            Value divisor =
                uniform ? scalarConstant(b, l, accElement, uniformDivisor)
                        : extendScalar(b, l, args[1], accElement);
            if (divisor.getType() != accElement)
              divisor = arith::TruncFOp::create(b, l, accElement, divisor);
            Value mean = arith::DivFOp::create(b, l, args[0], divisor);
            return truncateScalar(b, l, mean, elementType);
          });
    }
    rewriter.replaceOp(op, result);
    return success();
  }

  /// MaxPool with its Indices output: one generic with two accumulators,
  /// the max and its flattened index into X (row-major, or column-major
  /// over the spatial dims with storage_order 1, offset by (n * C + c) *
  /// prod(spatial)). Ties keep the smaller index whatever order the
  /// reduction runs in.
  LogicalResult lowerWithIndices(OpTy op, ConversionPatternRewriter &rewriter,
                                 Value x, RankedTensorType resultType,
                                 const Window &w) const {
    if constexpr (Kind != PoolKind::Max || ChannelsLast) {
      return failure();
    } else {
      Location loc = op.getLoc();
      MLIRContext *context = rewriter.getContext();
      auto xType = tensorType(x);
      if (!isa<FloatType>(xType.getElementType()))
        return unsupported(op, "MaxPool Indices of an integer tensor");
      int64_t s = w.rank(), channels = xType.getDimSize(1);
      ArrayRef<int64_t> inShape = xType.getShape().drop_front(2);
      ArrayRef<int64_t> outShape = resultType.getShape().drop_front(2);
      bool columnMajor = op.getStorageOrder() != 0;
      Type elementType = xType.getElementType();
      Value padded = padWindowInput(rewriter, loc, x, w, outShape,
                                    lowestValue(rewriter, loc, elementType));
      Type i64 = rewriter.getI64Type();
      Value maxInit = filledTensor(rewriter, loc, resultType,
                                   lowestValue(rewriter, loc, elementType));
      Value indexInit =
          filledTensor(rewriter, loc, resultType.clone(i64),
                       scalarConstant(rewriter, loc, i64, 0));
      unsigned numLoops = 2 + 2 * s;
      auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
      AffineMap xMap =
          windowInputMap(numLoops, {d(0), d(1)}, 2, 2 + s, w, context);
      SmallVector<AffineExpr> outExprs;
      for (unsigned i = 0; i < 2 + s; ++i)
        outExprs.push_back(d(i));
      AffineMap outMap = AffineMap::get(numLoops, 0, outExprs, context);
      SmallVector<IteratorType> iterators(2 + s, IteratorType::parallel);
      iterators.append(s, IteratorType::reduction);
      int64_t spatialSize = 1;
      for (int64_t v : inShape)
        spatialSize *= v;
      auto generic = linalg::GenericOp::create(
          rewriter, loc, TypeRange{maxInit.getType(), indexInit.getType()},
          ValueRange{padded, windowShape(rewriter, loc, w, elementType)},
          ValueRange{maxInit, indexInit},
          ArrayRef<AffineMap>{xMap, dimRangeMap(numLoops, 2 + s, s, context),
                              outMap, outMap},
          iterators,
          [&](OpBuilder &b, Location l, ValueRange args) {
            auto index = [&](unsigned dim) -> Value {
              return arith::IndexCastOp::create(
                  b, l, i64, linalg::IndexOp::create(b, l, dim));
            };
            auto constant = [&](int64_t v) {
              return scalarConstant(b, l, i64, v);
            };
            // (n * C + c) * prod(spatial)
            Value flat = arith::MulIOp::create(
                b, l,
                arith::AddIOp::create(
                    b, l, arith::MulIOp::create(b, l, index(0),
                                                constant(channels)),
                    index(1)),
                constant(spatialSize));
            Value spatialIndex = constant(0);
            for (int64_t j = 0; j < s; ++j) {
              int64_t i = columnMajor ? s - 1 - j : j;
              Value outer = arith::MulIOp::create(b, l, index(2 + i),
                                                  constant(w.strides[i]));
              Value inner = arith::MulIOp::create(
                  b, l, index(2 + s + i), constant(w.dilations[i]));
              Value pos = arith::AddIOp::create(b, l, outer, inner);
              pos = arith::SubIOp::create(b, l, pos, constant(w.padBegin[i]));
              spatialIndex = arith::AddIOp::create(
                  b, l,
                  arith::MulIOp::create(b, l, spatialIndex,
                                        constant(inShape[i])),
                  pos);
            }
            flat = arith::AddIOp::create(b, l, flat, spatialIndex);
            Value value = args[0], best = args[2], bestIndex = args[3];
            Value greater = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OGT, value, best);
            Value equal = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OEQ, value, best);
            Value earlier = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::slt, flat, bestIndex);
            Value take = arith::OrIOp::create(
                b, l, greater, arith::AndIOp::create(b, l, equal, earlier));
            linalg::YieldOp::create(
                b, l,
                ValueRange{arith::SelectOp::create(b, l, take, value, best),
                           arith::SelectOp::create(b, l, take, flat,
                                                   bestIndex)});
          });
      rewriter.replaceOp(op, generic.getResults());
      return success();
    }
  }
};

/// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: a reduction over the
/// spatial dims into [N, C], the mean / root, reshaped to [N, C, 1...].
template <typename OpTy, PoolKind Kind, bool ChannelsLast = false>
struct GlobalPoolLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto xType = tensorType(x);
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    int64_t rank = xType.getRank();
    int64_t p = 0;
    if constexpr (Kind == PoolKind::Lp) {
      p = op.getP();
      if (p < 1)
        return unsupported(op, "p = " + std::to_string(p) + " (must be >= 1)");
    }
    Type elementType = xType.getElementType();
    Type accElement = Kind == PoolKind::Max ? elementType
                                            : computeType(elementType);
    // Reduce the spatial dims, keeping N and C ([N, C] either way).
    int64_t channelDim = ChannelsLast ? rank - 1 : 1;
    SmallVector<bool> reduced(rank, true);
    reduced[0] = reduced[channelDim] = false;
    int64_t count = 1;
    for (int64_t i = 1; i < rank; ++i)
      if (i != channelDim)
        count *= xType.getDimSize(i);
    Value identity = Kind == PoolKind::Max
                         ? lowestValue(rewriter, loc, elementType)
                         : scalarConstant(rewriter, loc, accElement, 0);
    Value acc = reduceDims(
        rewriter, loc, x, {AffineMap::getMultiDimIdentityMap(rank, context)},
        xType.getShape(), reduced, accElement, identity,
        [&](OpBuilder &b, Location l, ValueRange args) {
          return poolCombine(b, l, Kind, args[0], args[1], false, p);
        });
    // Run-time spatial sizes: the mean divides by their product.
    Value runtimeCount;
    if (Kind == PoolKind::Average &&
        llvm::any_of(llvm::seq<int64_t>(1, rank), [&](int64_t i) {
          return i != channelDim && xType.isDynamicDim(i);
        })) {
      Value n = arith::ConstantIndexOp::create(rewriter, loc, 1);
      for (int64_t i = 1; i < rank; ++i)
        if (i != channelDim)
          n = arith::MulIOp::create(rewriter, loc, n,
                                    tensor::DimOp::create(rewriter, loc, x, i));
      Value n64 = arith::IndexCastOp::create(rewriter, loc,
                                             rewriter.getI64Type(), n);
      runtimeCount = arith::SIToFPOp::create(rewriter, loc, accElement, n64);
    }
    auto flatType = RankedTensorType::get(
        {xType.getDimSize(0), xType.getDimSize(channelDim)}, elementType);
    Value result = buildElementwise(
        rewriter, loc, acc, flatType,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v = args[0];
          if (Kind == PoolKind::Average)
            v = arith::DivFOp::create(
                b, l, v,
                runtimeCount ? runtimeCount
                             : scalarConstant(b, l, accElement, count));
          else if (Kind == PoolKind::Lp)
            v = lpRoot(b, l, v, p);
          return truncateScalar(b, l, v, elementType);
        });
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, result,
                                     resultType.getShape()));
    return success();
  }
};

} // namespace

void kiln::lowering::populatePoolPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<PoolLowering<kiln::MaxPoolOp, PoolKind::Max>,
               PoolLowering<kiln::AveragePoolOp, PoolKind::Average>,
               PoolLowering<kiln::LpPoolOp, PoolKind::Lp>,
               GlobalPoolLowering<kiln::GlobalAveragePoolOp, PoolKind::Average>,
               GlobalPoolLowering<kiln::GlobalMaxPoolOp, PoolKind::Max>,
               GlobalPoolLowering<kiln::GlobalLpPoolOp, PoolKind::Lp>,
               PoolLowering<kiln::MaxPoolNhwcOp, PoolKind::Max, true>,
               PoolLowering<kiln::AveragePoolNhwcOp, PoolKind::Average, true>,
               GlobalPoolLowering<kiln::GlobalAveragePoolNhwcOp,
                                  PoolKind::Average, true>>(
      converter, patterns.getContext());
}
