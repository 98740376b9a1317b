//===- Pad.cpp - Lowering of Pad to linalg --------------------------------===//
//
// Pad: constant mode is a tensor.pad, reflect/edge/wrap a linalg.generic
// reading the source index of every output element; pads known only at run
// time a generic for every mode.
//
//===----------------------------------------------------------------------===//

#include "NN.h"

#include "kiln/Dialect/KilnOps.h"

using namespace mlir;
using namespace kiln::lowering;

namespace {

/// The index read for output position `src` (already shifted by the begin
/// pad, so in [0, n) inside the data) along a dim of `n` elements in Pad
/// mode `mode`; constant mode clamps (the caller selects the pad value).
Value sourceIndex(OpBuilder &b, Location l, StringRef mode, Value src,
                  int64_t n) {
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, l, v); };
  auto positiveMod = [&](Value v, int64_t m) -> Value {
    Value r = arith::RemSIOp::create(b, l, v, c(m));
    r = arith::AddIOp::create(b, l, r, c(m));
    return arith::RemSIOp::create(b, l, r, c(m));
  };
  if (mode == "edge" || mode == "constant") {
    src = arith::MaxSIOp::create(b, l, src, c(0));
    return arith::MinSIOp::create(b, l, src, c(n - 1));
  }
  if (mode == "wrap")
    return positiveMod(src, n);
  if (n == 1)
    return c(0);
  // Reflect with period 2(n-1): m < n reads m, else 2(n-1) - m.
  Value m = positiveMod(src, 2 * (n - 1));
  Value mirrored = arith::SubIOp::create(b, l, c(2 * (n - 1)), m);
  Value inRange =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, m, c(n));
  return arith::SelectOp::create(b, l, inRange, m, mirrored);
}

/// Pad with pads computed at run time (the result shape is static, so only
/// the split between begin and end is unknown): a generic over the result
/// reading data at (index - begin pad) per dim, mapped back by the mode;
/// constant mode yields the pad value outside the data (negative pads crop
/// the same way).
Value lowerRuntimePads(kiln::PadOp op, OpBuilder &rewriter, Value data,
                       RankedTensorType resultType, Value pads,
                       ArrayRef<int64_t> axes, Value padValue) {
  Location loc = op.getLoc();
  auto type = tensorType(data);
  int64_t rank = type.getRank();
  StringRef mode = op.getMode();
  return buildGeneric(
      rewriter, loc, {}, emptyTensor(rewriter, loc, resultType),
      {AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext())},
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange) -> Value {
        SmallVector<Value> indices;
        Value inside;
        for (int64_t i = 0; i < rank; ++i) {
          Value index = linalg::IndexOp::create(b, l, i);
          const int64_t *pos = llvm::find(axes, i);
          if (pos == axes.end()) {
            indices.push_back(index);
            continue;
          }
          Value begin = tensor::ExtractOp::create(
              b, l, pads,
              ValueRange{arith::ConstantIndexOp::create(b, l, pos - axes.begin())});
          begin = arith::IndexCastOp::create(b, l, b.getIndexType(), begin);
          Value src = arith::SubIOp::create(b, l, index, begin);
          int64_t n = type.getDimSize(i);
          if (mode == "constant") {
            Value geZero = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::sge, src,
                arith::ConstantIndexOp::create(b, l, 0));
            Value ltN = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::slt, src,
                arith::ConstantIndexOp::create(b, l, n));
            Value ok = arith::AndIOp::create(b, l, geZero, ltN);
            inside = inside ? arith::AndIOp::create(b, l, inside, ok) : ok;
          }
          indices.push_back(sourceIndex(b, l, mode, src, n));
        }
        Value value = tensor::ExtractOp::create(b, l, data, indices);
        if (inside)
          value = arith::SelectOp::create(b, l, inside, value, padValue);
        return value;
      });
}

/// Pad: pads, axes (and constant_value, which may be computed) from the
/// operands. Negative pads crop first (tensor.extract_slice); constant mode
/// is a tensor.pad, reflect/edge/wrap a generic that computes the source
/// index of every output element and reads it with tensor.extract.
struct PadLowering : OpConversionPattern<kiln::PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData();
    auto type = tensorType(data);
    int64_t rank = type.getRank();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    SmallVector<int64_t> axes;
    if (isNone(adaptor.getAxes())) {
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    } else {
      FailureOr<SmallVector<int64_t>> values = constantInts(adaptor.getAxes());
      if (failed(values))
        return unsupported(op, "axes is not a constant");
      for (int64_t a : *values)
        axes.push_back(normalizeAxis(a, rank));
    }
    StringRef mode = op.getMode();
    if (mode != "constant" && mode != "reflect" && mode != "edge" &&
        mode != "wrap")
      return unsupported(op, "mode '" + mode + "'");
    Type elementType = type.getElementType();
    Value padValue;
    Value constant = adaptor.getConstantValue();
    if (isNone(constant) || tensorType(constant).getNumElements() == 0) {
      padValue = scalarConstant(rewriter, loc, elementType, 0);
    } else {
      padValue = extractFirst(rewriter, loc, constant);
    }
    FailureOr<SmallVector<int64_t>> pads = constantInts(adaptor.getPads());
    if (failed(pads)) {
      if (tensorType(adaptor.getPads()).getNumElements() !=
          static_cast<int64_t>(2 * axes.size()))
        return unsupported(op, "pads of the wrong length");
      rewriter.replaceOp(op, lowerRuntimePads(op, rewriter, data, resultType,
                                              adaptor.getPads(), axes,
                                              padValue));
      return success();
    }
    if (pads->size() != 2 * axes.size())
      return unsupported(op, "pads has " + std::to_string(pads->size()) +
                                 " values for " + std::to_string(axes.size()) +
                                 " axes");
    SmallVector<int64_t> low(rank, 0), high(rank, 0);
    for (auto [i, a] : llvm::enumerate(axes)) {
      low[a] = (*pads)[i];
      high[a] = (*pads)[axes.size() + i];
    }
    // Crop negative pads.
    SmallVector<int64_t> offsets(rank, 0), sizes(type.getShape()),
        strides(rank, 1);
    bool crop = false;
    for (int64_t i = 0; i < rank; ++i) {
      if (low[i] < 0) {
        offsets[i] = -low[i];
        sizes[i] += low[i];
        low[i] = 0;
        crop = true;
      }
      if (high[i] < 0) {
        sizes[i] += high[i];
        high[i] = 0;
        crop = true;
      }
    }
    if (crop)
      data = tensor::ExtractSliceOp::create(
          rewriter, loc, type.clone(sizes), data,
          ValueRange{}, ValueRange{}, ValueRange{}, offsets, sizes, strides);
    if (mode == "constant") {
      rewriter.replaceOp(op, padTensor(rewriter, loc, data, low, high,
                                       padValue));
      return success();
    }
    for (int64_t i = 0; i < rank; ++i)
      if ((low[i] || high[i]) && sizes[i] == 0)
        return unsupported(op, "padding an empty dim in mode '" + mode + "'");
    Value result = buildGeneric(
        rewriter, loc, {}, emptyTensor(rewriter, loc, resultType),
        {AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext())},
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> indices;
          for (int64_t i = 0; i < rank; ++i) {
            Value index = linalg::IndexOp::create(b, l, i);
            if (low[i] == 0 && high[i] == 0) {
              indices.push_back(index);
              continue;
            }
            Value src = arith::SubIOp::create(
                b, l, index, arith::ConstantIndexOp::create(b, l, low[i]));
            indices.push_back(sourceIndex(b, l, mode, src, sizes[i]));
          }
          return tensor::ExtractOp::create(b, l, data, indices);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void kiln::lowering::populatePadPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns) {
  patterns.add<PadLowering>(converter, patterns.getContext());
}
