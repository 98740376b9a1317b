//===- Softmax.cpp - Softmax, LogSoftmax, Hardmax -------------------------===//
//
// Lowering of the Softmax family to linalg: linalg.generic reductions along
// the axis (AxisMaps, NN.h) followed by an elementwise generic.
// float16/bfloat16 inputs are computed in f32 and rounded once at the end.
//
//===----------------------------------------------------------------------===//

#include "NN.h"

#include "kiln/Dialect/KilnOps.h"

using namespace mlir;
using namespace kiln::lowering;

namespace {

/// Softmax and LogSoftmax along `axis`, numerically stable: the max along
/// the axis, the sum of exp(x - max), then exp(x - max) / sum or
/// x - max - log(sum).
template <typename OpTy, bool IsLog>
struct SoftmaxLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    if (rank == 0)
      return unsupported(op, "rank-0 input");
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Type elementType = type.getElementType();
    Type ct = computeType(elementType);
    AxisMaps maps(rank, {axis}, rewriter.getContext());

    Value max = reduceDims(
        rewriter, loc, x, {maps.full}, type.getShape(), maps.reducedDims, ct,
        lowestValue(rewriter, loc, ct),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::MaximumFOp::create(
              b, l, extendScalar(b, l, args[0], ct), args[1]);
        });
    Value sum = reduceDims(
        rewriter, loc, {x, max}, {maps.full, maps.reduced}, type.getShape(),
        maps.reducedDims, ct, scalarConstant(rewriter, loc, ct, 0),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value shifted = arith::SubFOp::create(
              b, l, extendScalar(b, l, args[0], ct), args[1]);
          return arith::AddFOp::create(b, l, math::ExpOp::create(b, l, shifted),
                                       args[2]);
        });
    Value result = buildGeneric(
        rewriter, loc, {x, max, sum}, emptyTensor(rewriter, loc, type),
        {maps.full, maps.reduced, maps.reduced, maps.full},
        maps.parallelIterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value shifted = arith::SubFOp::create(
              b, l, extendScalar(b, l, args[0], ct), args[1]);
          Value y;
          if (IsLog)
            y = arith::SubFOp::create(b, l, shifted,
                                      math::LogOp::create(b, l, args[2]));
          else
            y = arith::DivFOp::create(b, l, math::ExpOp::create(b, l, shifted),
                                      args[2]);
          return truncateScalar(b, l, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Hardmax: the max along the axis, the first index holding it, then 1
/// there and 0 elsewhere.
struct HardmaxLowering : OpConversionPattern<kiln::HardmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::HardmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    if (rank == 0)
      return unsupported(op, "rank-0 input");
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Type elementType = type.getElementType();
    AxisMaps maps(rank, {axis}, rewriter.getContext());
    Type i64 = rewriter.getI64Type();

    Value max = reduceDims(
        rewriter, loc, x, {maps.full}, type.getShape(), maps.reducedDims,
        elementType, lowestValue(rewriter, loc, elementType),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::MaximumFOp::create(b, l, args[0], args[1]);
        });
    Value first = reduceDims(
        rewriter, loc, {x, max}, {maps.full, maps.reduced}, type.getShape(),
        maps.reducedDims, i64,
        scalarConstant(rewriter, loc, i64, type.getDimSize(axis)),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value index = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          Value isMax = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                              args[0], args[1]);
          Value lower = arith::MinSIOp::create(b, l, index, args[2]);
          return arith::SelectOp::create(b, l, isMax, lower, args[2]);
        });
    Value result = buildGeneric(
        rewriter, loc, {first}, emptyTensor(rewriter, loc, type),
        {maps.reduced, maps.full}, maps.parallelIterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value index = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                            index, args[0]);
          return arith::SelectOp::create(
              b, l, hit, scalarConstant(b, l, elementType, 1),
              scalarConstant(b, l, elementType, 0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void kiln::lowering::populateSoftmaxPatterns(const TypeConverter &converter,
                                             RewritePatternSet &patterns) {
  patterns.add<SoftmaxLowering<kiln::SoftmaxOp, false>,
               SoftmaxLowering<kiln::LogSoftmaxOp, true>, HardmaxLowering>(
      converter, patterns.getContext());
}
