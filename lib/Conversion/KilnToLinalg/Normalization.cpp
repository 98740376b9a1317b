//===- Normalization.cpp - Lowering of the normalizations to linalg -------===//
//
// BatchNormalization, InstanceNormalization, LayerNormalization,
// GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN,
// Dropout and kiln.rms_norm: linalg.generic reductions for the statistics
// followed by an elementwise generic. float16/bfloat16 inputs are computed
// in f32 (or the stash type) and rounded once at the end.
//
//===----------------------------------------------------------------------===//

#include "NN.h"

#include "kiln/Dialect/KilnOps.h"

using namespace mlir;
using namespace kiln::lowering;

namespace {

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// The mean and the population variance of `x` (read through `xMap` over
/// loops of `loopShape`) over the loops marked in `reduced`, as tensors of
/// the kept loops with element type `ct`. Two passes (mean, then the mean
/// of the squared deviations) for accuracy.
std::pair<Value, Value> meanAndVariance(OpBuilder &b, Location loc, Value x,
                                        AffineMap xMap,
                                        ArrayRef<int64_t> loopShape,
                                        ArrayRef<bool> reduced, Type ct) {
  MLIRContext *context = b.getContext();
  int64_t count = 1;
  SmallVector<bool> keep;
  for (auto [i, r] : llvm::enumerate(reduced)) {
    if (r)
      count *= loopShape[i];
    keep.push_back(!r);
  }
  AffineMap keptMap = selectMap(loopShape.size(), keep, context);
  Value zero = scalarConstant(b, loc, ct, 0);
  Value sum = reduceDims(b, loc, x, {xMap}, loopShape, reduced, ct, zero,
                         [&](OpBuilder &nb, Location l, ValueRange args) {
                           return arith::AddFOp::create(
                               nb, l, args[1],
                               extendScalar(nb, l, args[0], ct));
                         });
  auto scale = [&](Value total) {
    return buildElementwise(b, loc, total, tensorType(total),
                            [&](OpBuilder &nb, Location l, ValueRange args) {
                              return arith::DivFOp::create(
                                  nb, l, args[0],
                                  scalarConstant(nb, l, ct, count));
                            });
  };
  Value mean = scale(sum);
  Value squares = reduceDims(
      b, loc, {x, mean}, {xMap, keptMap}, loopShape, reduced, ct, zero,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value dev = arith::SubFOp::create(
            nb, l, extendScalar(nb, l, args[0], ct), args[1]);
        return arith::AddFOp::create(nb, l, args[2],
                                     arith::MulFOp::create(nb, l, dev, dev));
      });
  return {mean, scale(squares)};
}

/// 1 / sqrt(var + epsilon).
Value invStdDev(OpBuilder &b, Location loc, Value var, double epsilon) {
  Value sum = arith::AddFOp::create(
      b, loc, var, scalarConstant(b, loc, var.getType(), epsilon));
  return math::RsqrtOp::create(b, loc, sum);
}

/// BatchNormalization (inference): one elementwise generic,
/// (x - mean[c]) * rsqrt(var[c] + eps) * scale[c] + B[c].
struct BatchNormLowering : OpConversionPattern<kiln::BatchNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::BatchNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getTrainingMode() != 0)
      return unsupported(op, "training_mode = 1 (inference only)");
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    unsigned rank = type.getRank();
    Type elementType = type.getElementType(), ct = computeType(elementType);
    double epsilon = op.getEpsilon().convertToDouble();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, context);
    AffineMap ch = channelMap(rank, context);
    Value result = buildGeneric(
        rewriter, loc,
        {x, adaptor.getScale(), adaptor.getB(), adaptor.getInputMean(),
         adaptor.getInputVar()},
        emptyTensor(rewriter, loc, type), {id, ch, ch, ch, ch, id},
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) {
          auto ext = [&](Value v) { return extendScalar(b, l, v, ct); };
          Value centered = arith::SubFOp::create(b, l, ext(args[0]),
                                                 ext(args[3]));
          Value y = arith::MulFOp::create(
              b, l, centered, invStdDev(b, l, ext(args[4]), epsilon));
          y = arith::MulFOp::create(b, l, y, ext(args[1]));
          y = arith::AddFOp::create(b, l, y, ext(args[2]));
          return truncateScalar(b, l, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Applies (x - mean) * rsqrt(var + eps) * scale + bias over the loops of
/// x's shape; `statsMap` reads mean/var, `scaleMap`/`biasMap` the affine
/// parameters (bias optional).
Value normalizeApply(OpBuilder &b, Location loc, Value x, Value mean,
                     Value var, AffineMap statsMap, Value scale,
                     AffineMap scaleMap, Value bias, AffineMap biasMap,
                     double epsilon, Type ct, Type resultElement) {
  MLIRContext *context = b.getContext();
  auto type = tensorType(x);
  unsigned rank = type.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, context);
  SmallVector<Value> inputs{x, mean, var};
  SmallVector<AffineMap> maps{id, statsMap, statsMap};
  if (scale) {
    inputs.push_back(scale);
    maps.push_back(scaleMap);
  }
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(biasMap);
  }
  maps.push_back(id);
  return buildGeneric(
      b, loc, inputs, emptyTensor(b, loc, type.clone(resultElement)), maps,
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value centered = arith::SubFOp::create(
            nb, l, extendScalar(nb, l, args[0], ct), args[1]);
        Value y = arith::MulFOp::create(nb, l, centered,
                                        invStdDev(nb, l, args[2], epsilon));
        unsigned next = 3;
        if (scale) {
          Value sv = args[next++];
          y = arith::MulFOp::create(nb, l, y, extendScalar(nb, l, sv, ct));
        }
        if (bias) {
          Value bv = args[next++];
          y = arith::AddFOp::create(nb, l, y, extendScalar(nb, l, bv, ct));
        }
        return truncateScalar(nb, l, y, resultElement);
      });
}

/// InstanceNormalization: statistics over the spatial dims per (n, c).
struct InstanceNormLowering
    : OpConversionPattern<kiln::InstanceNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::InstanceNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    unsigned rank = type.getRank();
    Type elementType = type.getElementType(), ct = computeType(elementType);
    SmallVector<bool> reduced(rank, true);
    reduced[0] = reduced[1] = false;
    auto [mean, var] = meanAndVariance(
        rewriter, loc, x, AffineMap::getMultiDimIdentityMap(rank, context),
        type.getShape(), reduced, ct);
    SmallVector<bool> keep{true, true};
    keep.resize(rank, false);
    AffineMap ch = channelMap(rank, context);
    rewriter.replaceOp(
        op, normalizeApply(rewriter, loc, x, mean, var,
                           selectMap(rank, keep, context), adaptor.getScale(),
                           ch, adaptor.getB(), ch,
                           op.getEpsilon().convertToDouble(), ct,
                           elementType));
    return success();
  }
};

/// The float type of an ONNX stash_type code, or null.
Type stashType(MLIRContext *context, int64_t code) {
  switch (code) {
  case 1:
    return Float32Type::get(context);
  case 10:
    return Float16Type::get(context);
  case 11:
    return Float64Type::get(context);
  case 16:
    return BFloat16Type::get(context);
  default:
    return nullptr;
  }
}

/// LayerNormalization: statistics over the dims from `axis` in the stash
/// type (the Mean/InvStdDev outputs' element type), Scale and B broadcast
/// against X's trailing dims.
struct LayerNormLowering : OpConversionPattern<kiln::LayerNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::LayerNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Type elementType = type.getElementType();
    auto meanType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getMean().getType()));
    auto invType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getInvStdDev().getType()));
    // Compute in the stash type, but never below f32.
    Type ct = computeType(meanType.getElementType());
    if (ct.getIntOrFloatBitWidth() < elementType.getIntOrFloatBitWidth())
      ct = elementType;
    SmallVector<bool> reduced(rank, false);
    for (int64_t i = axis; i < rank; ++i)
      reduced[i] = true;
    auto [mean, var] = meanAndVariance(
        rewriter, loc, x, AffineMap::getMultiDimIdentityMap(rank, context),
        type.getShape(), reduced, ct);
    SmallVector<bool> keep;
    for (bool r : reduced)
      keep.push_back(!r);
    AffineMap statsMap = selectMap(rank, keep, context);
    Value scale = adaptor.getScale(), bias = adaptor.getB();
    double epsilon = op.getEpsilon().convertToDouble();
    Value y = normalizeApply(
        rewriter, loc, x, mean, var, statsMap, scale,
        broadcastMap(tensorType(scale).getShape(), type.getShape(), context),
        isNone(bias) ? Value() : bias,
        isNone(bias) ? AffineMap()
                     : broadcastMap(tensorType(bias).getShape(),
                                    type.getShape(), context),
        epsilon, ct, elementType);
    // Mean and InvStdDev keep the normalized dims as 1s.
    Value meanOut = reshapeTo(
        rewriter, loc,
        truncateTensor(rewriter, loc, mean, meanType.getElementType()),
        meanType.getShape());
    Value inv = buildElementwise(
        rewriter, loc, var, tensorType(var).clone(invType.getElementType()),
        [&](OpBuilder &b, Location l, ValueRange args) {
          return truncateScalar(b, l, invStdDev(b, l, args[0], epsilon),
                                invType.getElementType());
        });
    rewriter.replaceOp(
        op, {y, meanOut, reshapeTo(rewriter, loc, inv, invType.getShape())});
    return success();
  }
};

/// GroupNormalization (opset 21): X viewed as [N, G, C/G, D...], statistics
/// over [C/G, D...], the per-channel scale and bias viewed as [G, C/G].
struct GroupNormLowering : OpConversionPattern<kiln::GroupNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::GroupNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    int64_t groups = op.getNumGroups(), channels = type.getDimSize(1);
    if (groups < 1 || channels % groups != 0)
      return unsupported(op, "num_groups not dividing the channels");
    if (tensorType(adaptor.getScale()).getNumElements() != channels)
      return unsupported(op, "scale with num_groups elements (opset 18 form)");
    Type elementType = type.getElementType();
    Type stash = stashType(context, op.getStashType());
    if (!stash)
      return unsupported(op, "stash_type " +
                                 std::to_string(op.getStashType()));
    Type ct = computeType(stash);
    if (ct.getIntOrFloatBitWidth() < elementType.getIntOrFloatBitWidth())
      ct = elementType;
    SmallVector<int64_t> shape{type.getDimSize(0), groups, channels / groups};
    shape.append(type.getShape().begin() + 2, type.getShape().end());
    unsigned rank = shape.size();
    Value xg = reshapeTo(rewriter, loc, x, shape);
    SmallVector<bool> reduced(rank, true);
    reduced[0] = reduced[1] = false;
    auto [mean, var] = meanAndVariance(
        rewriter, loc, xg, AffineMap::getMultiDimIdentityMap(rank, context),
        shape, reduced, ct);
    SmallVector<bool> keepStats(rank, false), keepParams(rank, false);
    keepStats[0] = keepStats[1] = true;
    keepParams[1] = keepParams[2] = true;
    Value scale = reshapeTo(rewriter, loc, adaptor.getScale(),
                            {groups, channels / groups});
    Value bias = reshapeTo(rewriter, loc, adaptor.getBias(),
                           {groups, channels / groups});
    AffineMap paramMap = selectMap(rank, keepParams, context);
    Value y = normalizeApply(rewriter, loc, xg, mean, var,
                             selectMap(rank, keepStats, context), scale,
                             paramMap, bias, paramMap,
                             op.getEpsilon().convertToDouble(), ct,
                             elementType);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, y, type.getShape()));
    return success();
  }
};

/// LpNormalization: x / ||x||_p along `axis` (p 1 or 2).
struct LpNormLowering : OpConversionPattern<kiln::LpNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::LpNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    int64_t p = op.getP();
    if (p != 1 && p != 2)
      return unsupported(op, "p = " + std::to_string(p) + " (1 or 2)");
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Type elementType = type.getElementType(), ct = computeType(elementType);
    AxisMaps maps(rank, {axis}, rewriter.getContext());
    Value norm = reduceDims(
        rewriter, loc, x, {maps.full}, type.getShape(), maps.reducedDims, ct,
        scalarConstant(rewriter, loc, ct, 0),
        [&](OpBuilder &b, Location l, ValueRange args) {
          return poolCombine(b, l, PoolKind::Lp, args[0], args[1], false, p);
        });
    Value result = buildGeneric(
        rewriter, loc, {x, norm}, emptyTensor(rewriter, loc, type),
        {maps.full, maps.reduced, maps.full}, maps.parallelIterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value y = arith::DivFOp::create(b, l,
                                          extendScalar(b, l, args[0], ct),
                                          lpRoot(b, l, args[1], p));
          return truncateScalar(b, l, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes`,
/// as ONNX's function body defines it.
struct MVNLowering : OpConversionPattern<kiln::MeanVarianceNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::MeanVarianceNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    Type elementType = type.getElementType(), ct = computeType(elementType);
    SmallVector<int64_t> axes;
    for (int64_t a : op.getAxes())
      axes.push_back(normalizeAxis(a, rank));
    AxisMaps maps(rank, axes, rewriter.getContext());
    auto [mean, var] = meanAndVariance(rewriter, loc, x, maps.full,
                                       type.getShape(), maps.reducedDims, ct);
    Value result = buildGeneric(
        rewriter, loc, {x, mean, var}, emptyTensor(rewriter, loc, type),
        {maps.full, maps.reduced, maps.reduced, maps.full},
        maps.parallelIterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value centered = arith::SubFOp::create(
              b, l, extendScalar(b, l, args[0], ct), args[1]);
          Value std = arith::AddFOp::create(
              b, l, math::SqrtOp::create(b, l, args[2]),
              scalarConstant(b, l, ct, 1e-9));
          return truncateScalar(
              b, l, arith::DivFOp::create(b, l, centered, std), elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// LRN: the sum of squares over the channel window [c - floor((size-1)/2),
/// c + ceil((size-1)/2)] (X zero-padded along C), then
/// x / (bias + alpha / size * sum)^beta.
struct LRNLowering : OpConversionPattern<kiln::LRNOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::LRNOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    unsigned rank = type.getRank();
    int64_t size = op.getSize();
    Type elementType = type.getElementType(), ct = computeType(elementType);
    int64_t before = (size - 1) / 2, after = size - 1 - before;
    SmallVector<int64_t> low(rank, 0), high(rank, 0);
    low[1] = before;
    high[1] = after;
    Value padded = padTensor(rewriter, loc, x, low, high,
                             scalarConstant(rewriter, loc, elementType, 0));
    // Loops: x's dims, then the window k.
    unsigned numLoops = rank + 1;
    SmallVector<AffineExpr> xExprs;
    for (unsigned i = 0; i < rank; ++i)
      xExprs.push_back(getAffineDimExpr(i, context));
    xExprs[1] = xExprs[1] + getAffineDimExpr(rank, context);
    SmallVector<bool> reduced(numLoops, false);
    reduced[rank] = true;
    SmallVector<int64_t> loopShape(type.getShape());
    loopShape.push_back(size);
    Value window = emptyTensor(rewriter, loc,
                               RankedTensorType::get({size}, elementType));
    Value sum = reduceDims(
        rewriter, loc, {padded, window},
        {AffineMap::get(numLoops, 0, xExprs, context),
         dimRangeMap(numLoops, rank, 1, context)},
        loopShape, reduced, ct, scalarConstant(rewriter, loc, ct, 0),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v = extendScalar(b, l, args[0], ct);
          return arith::AddFOp::create(b, l, args[2],
                                       arith::MulFOp::create(b, l, v, v));
        });
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    double bias = op.getBias().convertToDouble();
    Value result = buildElementwise(
        rewriter, loc, {x, sum}, type,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value scaled = arith::MulFOp::create(
              b, l, args[1], scalarConstant(b, l, ct, alpha / size));
          Value base = arith::AddFOp::create(b, l, scaled,
                                             scalarConstant(b, l, ct, bias));
          Value denom = math::PowFOp::create(b, l, base,
                                             scalarConstant(b, l, ct, beta));
          return truncateScalar(
              b, l,
              arith::DivFOp::create(b, l, extendScalar(b, l, args[0], ct),
                                    denom),
              elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Dropout in inference: the data itself and an all-true mask. A
/// training_mode that is not a constant false is rejected.
struct DropoutLowering : OpConversionPattern<kiln::DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value training = adaptor.getTrainingMode();
    if (!isNone(training)) {
      FailureOr<SmallVector<int64_t>> values = constantInts(training);
      if (failed(values))
        return unsupported(op, "training_mode is not a constant (inference "
                               "only)");
      if (llvm::any_of(*values, [](int64_t v) { return v != 0; }))
        return unsupported(op, "training_mode = true (inference only)");
    }
    Location loc = op.getLoc();
    auto maskType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getMask().getType()));
    Value mask = filledTensor(rewriter, loc, maskType,
                              arith::ConstantOp::create(
                                  rewriter, loc, rewriter.getBoolAttr(true)));
    rewriter.replaceOp(op, {adaptor.getData(), mask});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Kiln's fused ops
//===----------------------------------------------------------------------===//

/// kiln.rms_norm: the mean of the squares over the dims from `axis` in the
/// stash type, N = X * rsqrt(mean + epsilon) rounded to X's type, then
/// N * scale (scale broadcast against X's trailing dims).
struct RMSNormLowering : OpConversionPattern<kiln::RMSNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::RMSNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX(), scale = adaptor.getScale();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Type elementType = type.getElementType();
    Type stash = stashType(context, op.getStashType());
    if (!stash)
      return unsupported(op, "stash_type " + std::to_string(op.getStashType()));
    Type ct = computeType(stash);
    if (ct.getIntOrFloatBitWidth() < elementType.getIntOrFloatBitWidth())
      ct = elementType;
    SmallVector<int64_t> axes;
    for (int64_t i = axis; i < rank; ++i)
      axes.push_back(i);
    AxisMaps maps(rank, axes, context);
    int64_t count = 1;
    for (int64_t i : axes)
      count *= type.getDimSize(i);
    Value sumSquares = reduceDims(
        rewriter, loc, x, {maps.full}, type.getShape(), maps.reducedDims, ct,
        scalarConstant(rewriter, loc, ct, 0),
        [&](OpBuilder &b, Location l, ValueRange args) {
          return poolCombine(b, l, PoolKind::Lp, args[0], args[1], false, 2);
        });
    double epsilon = op.getEpsilon().convertToDouble();
    Value result = buildGeneric(
        rewriter, loc, {x, sumSquares, scale},
        emptyTensor(rewriter, loc, type),
        {maps.full, maps.reduced,
         broadcastMap(tensorType(scale).getShape(), type.getShape(), context),
         maps.full},
        maps.parallelIterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value mean = arith::DivFOp::create(
              b, l, args[1], scalarConstant(b, l, ct, count));
          Value n = arith::MulFOp::create(b, l,
                                          extendScalar(b, l, args[0], ct),
                                          invStdDev(b, l, mean, epsilon));
          // N is rounded to X's type before the scale, as the op defines.
          n = truncateScalar(b, l, n, elementType);
          Type wide = computeType(elementType);
          Value y = arith::MulFOp::create(b, l, extendScalar(b, l, n, wide),
                                          extendScalar(b, l, args[2], wide));
          return truncateScalar(b, l, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void kiln::lowering::populateNormalizationPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<BatchNormLowering, InstanceNormLowering, LayerNormLowering,
               GroupNormLowering, LpNormLowering, MVNLowering, LRNLowering,
               DropoutLowering, RMSNormLowering>(converter,
                                                 patterns.getContext());
}
