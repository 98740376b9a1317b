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

/// Softmax and LogSoftmax of `x` along the axis of `maps`, numerically
/// stable: the max along the axis, the sum of exp(x - max), then
/// exp(x - max) / sum or x - max - log(sum).
Value softmax(OpBuilder &builder, Location loc, Value x, const AxisMaps &maps,
              bool isLog) {
  auto type = tensorType(x);
  Type elementType = type.getElementType();
  Type ct = computeType(elementType);

  Value max = reduceDims(
      builder, loc, x, {maps.full}, type.getShape(), maps.reducedDims, ct,
      lowestValue(builder, loc, ct),
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        return arith::MaximumFOp::create(
            b, l, extendScalar(b, l, args[0], ct), args[1]);
      });
  Value sum = reduceDims(
      builder, loc, {x, max}, {maps.full, maps.reduced}, type.getShape(),
      maps.reducedDims, ct, scalarConstant(builder, loc, ct, 0),
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        Value shifted = arith::SubFOp::create(
            b, l, extendScalar(b, l, args[0], ct), args[1]);
        return arith::AddFOp::create(b, l, math::ExpOp::create(b, l, shifted),
                                     args[2]);
      });
  return buildGeneric(
      builder, loc, {x, max, sum}, emptyTensor(builder, loc, type),
      {maps.full, maps.reduced, maps.reduced, maps.full},
      maps.parallelIterators,
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        Value shifted = arith::SubFOp::create(
            b, l, extendScalar(b, l, args[0], ct), args[1]);
        Value y;
        if (isLog)
          y = arith::SubFOp::create(b, l, shifted,
                                    math::LogOp::create(b, l, args[2]));
        else
          y = arith::DivFOp::create(b, l, math::ExpOp::create(b, l, shifted),
                                    args[2]);
        return truncateScalar(b, l, y, elementType);
      });
}

/// Hardmax of `x` along `axis`: the max along the axis, the first index
/// holding it, then 1 there and 0 elsewhere.
Value hardmax(OpBuilder &builder, Location loc, Value x, int64_t axis,
              const AxisMaps &maps) {
  auto type = tensorType(x);
  Type elementType = type.getElementType();
  Type i64 = builder.getI64Type();

  Value max = reduceDims(
      builder, loc, x, {maps.full}, type.getShape(), maps.reducedDims,
      elementType, lowestValue(builder, loc, elementType),
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        return arith::MaximumFOp::create(b, l, args[0], args[1]);
      });
  Value first = reduceDims(
      builder, loc, {x, max}, {maps.full, maps.reduced}, type.getShape(),
      maps.reducedDims, i64,
      scalarConstant(builder, loc, i64, type.getDimSize(axis)),
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        Value index = arith::IndexCastOp::create(
            b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
        Value isMax = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                            args[0], args[1]);
        Value lower = arith::MinSIOp::create(b, l, index, args[2]);
        return arith::SelectOp::create(b, l, isMax, lower, args[2]);
      });
  return buildGeneric(
      builder, loc, {first}, emptyTensor(builder, loc, type),
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
}

enum class AxisOpKind { Softmax, LogSoftmax, Hardmax };

/// Softmax, LogSoftmax and Hardmax: along `axis` of a non-scalar input.
template <typename OpTy, AxisOpKind Kind>
struct SoftmaxLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    int64_t rank = tensorType(x).getRank();
    if (rank == 0)
      return unsupported(op, "rank-0 input");
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    AxisMaps maps(rank, {axis}, rewriter.getContext());
    Value result = Kind == AxisOpKind::Hardmax
                       ? hardmax(rewriter, loc, x, axis, maps)
                       : softmax(rewriter, loc, x, maps,
                                 Kind == AxisOpKind::LogSoftmax);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void kiln::lowering::populateSoftmaxPatterns(const TypeConverter &converter,
                                             RewritePatternSet &patterns) {
  patterns.add<SoftmaxLowering<kiln::SoftmaxOp, AxisOpKind::Softmax>,
               SoftmaxLowering<kiln::LogSoftmaxOp, AxisOpKind::LogSoftmax>,
               SoftmaxLowering<kiln::HardmaxOp, AxisOpKind::Hardmax>>(
      converter, patterns.getContext());
}
