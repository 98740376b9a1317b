//===- Quant.cpp - Lowering of the quantization kiln ops to linalg --------===//
//
// QuantizeLinear / DequantizeLinear (per-tensor and per-axis),
// DynamicQuantizeLinear, MatMulInteger and QLinearMatMul, with ONNX
// Runtime's arithmetic: quantization divides by the scale, rounds half to
// even, then adds the zero point and saturates; dequantization subtracts
// the zero point in i32 and multiplies by the scale in f32. Integer matmuls
// widen both operands to i32 minus their zero points, then contract in i32
// (linalg.matmul / linalg.batch_matmul when the shapes fit); ConvInteger
// and QLinearConv likewise convolve in i32 (a grouped linalg.generic).
// kiln.quantized_matmul and kiln.quantized_conv (kiln-fuse-qdq) share one
// int8 GEMM (the CPU backend's VNNI/AMX kernel) and fused epilogue; the
// conv reaches it through an im2col of its 8-bit input.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kiln/Conversion/KilnToLinalg.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/KilnQuantConvOps.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace kiln::lowering;

namespace {

/// The kiln element type of an optional operand; null when it is absent.
Type kilnTypeOf(Value v) {
  return isa<NoneType>(v.getType()) ? Type() : elementTypeOf(v);
}

/// A quantization parameter (scale or zero point) of an elementwise
/// generic: per-tensor ones are read once before the loop, per-axis ones
/// are an input of the generic indexed by the axis.
struct Param {
  Value scalar;
  int input = -1;
  bool present() const { return scalar || input >= 0; }
  Value get(ValueRange args) const {
    return input >= 0 ? args[input] : scalar;
  }
};

/// Adds `param` (a tensor, or none: absent) for data of `dataType` with the
/// per-axis `axis` (the loop dim a 1-D parameter follows); failure when it
/// is neither one element nor 1-D with dataType.dim[axis] elements.
FailureOr<Param> addParam(OpBuilder &b, Location loc, Value param,
                          RankedTensorType dataType, int64_t axis,
                          SmallVectorImpl<Value> &inputs,
                          SmallVectorImpl<AffineMap> &maps,
                          std::optional<AffineMap> axisMap = std::nullopt) {
  Param result;
  if (isa<NoneType>(param.getType()))
    return result;
  auto type = cast<RankedTensorType>(param.getType());
  if (type.getNumElements() == 1) {
    result.scalar = extractFirst(b, loc, param);
    return result;
  }
  int64_t rank = dataType.getRank();
  if (type.getRank() != 1 || axis < 0 || axis >= rank ||
      type.getDimSize(0) != dataType.getDimSize(axis))
    return failure();
  result.input = inputs.size();
  inputs.push_back(param);
  maps.push_back(axisMap ? *axisMap
                         : AffineMap::get(rank, 0,
                                          getAffineDimExpr(axis, b.getContext())));
  return result;
}

/// `value` (a float) as f32, or f64 kept.
Value toComputeFloat(OpBuilder &b, Location loc, Value value, Type kilnType) {
  Type target = kilnType.isF64() ? b.getF64Type() : b.getF32Type();
  return castScalar(b, loc, value, kilnType, target);
}

/// saturate(roundeven(v) + zp) into the quantized kiln type `qType`; `v`
/// is the float x / scale, `zp` the float zero point (or null).
Value quantizeScalar(OpBuilder &b, Location loc, Value v, Value zp,
                     Type qType) {
  Type f = v.getType();
  unsigned width = qType.getIntOrFloatBitWidth();
  bool isUnsigned = isUnsignedInt(qType);
  double lo = isUnsigned ? 0 : -std::ldexp(1.0, width - 1);
  double hi = isUnsigned ? std::ldexp(1.0, width) - 1
                         : std::ldexp(1.0, width - 1) - 1;
  Value q = math::RoundEvenOp::create(b, loc, v);
  if (zp)
    q = arith::AddFOp::create(b, loc, q, zp);
  q = arith::MaximumFOp::create(b, loc, q, scalarConstant(b, loc, f, lo));
  q = arith::MinimumFOp::create(b, loc, q, scalarConstant(b, loc, f, hi));
  return castScalar(b, loc, q, f, qType);
}

/// The elementwise generic of QuantizeLinear / DequantizeLinear: `body`
/// maps an element of `x` and its scale and zero point (null when absent)
/// to the result element; the parameters are per-tensor or per-axis.
LogicalResult lowerQuantDequant(
    Operation *op, int64_t blockSize, int64_t axis, Value x, Value scale,
    Value zeroPoint, RankedTensorType resultType,
    ConversionPatternRewriter &rewriter,
    function_ref<Value(OpBuilder &, Location, Value, Value, Value)> body) {
  Location loc = op->getLoc();
  if (blockSize != 0)
    return unsupported(op, "blocked quantization (block_size != 0)");
  auto xType = cast<RankedTensorType>(x.getType());
  axis = normalizeAxis(axis, xType.getRank());

  SmallVector<Value> inputs{x};
  SmallVector<AffineMap> maps{
      AffineMap::getMultiDimIdentityMap(xType.getRank(), op->getContext())};
  auto scaleParam = addParam(rewriter, loc, scale, xType, axis, inputs, maps);
  auto zpParam = addParam(rewriter, loc, zeroPoint, xType, axis, inputs, maps);
  if (failed(scaleParam) || failed(zpParam))
    return unsupported(op, "a scale or zero point that is neither "
                           "per-tensor nor per-axis");
  Value result = buildParallel(
      rewriter, loc, inputs, maps, resultType,
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        Value zp = zpParam->present() ? zpParam->get(args) : Value();
        return body(b, l, args[0], scaleParam->get(args), zp);
      });
  rewriter.replaceOp(op, result);
  return success();
}

struct QuantizeLinearLowering : OpConversionPattern<kiln::QuantizeLinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::QuantizeLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type xKiln = elementTypeOf(op.getX());
    Type scaleKiln = elementTypeOf(op.getYScale());
    Type qType = elementTypeOf(op.getY());
    Type zpKiln = kilnTypeOf(op.getYZeroPoint());
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    return lowerQuantDequant(
        op, op.getBlockSize(), op.getAxis(), adaptor.getX(),
        adaptor.getYScale(), adaptor.getYZeroPoint(), resultType, rewriter,
        [&](OpBuilder &b, Location l, Value xElem, Value scale,
            Value zp) -> Value {
          // An integer x (i32) is quantized as a float, as ONNX Runtime.
          Value x = isa<FloatType>(xKiln)
                        ? toComputeFloat(b, l, xElem, xKiln)
                        : castScalar(b, l, xElem, xKiln, b.getF32Type());
          Type f = x.getType();
          Value s = castScalar(b, l, scale, scaleKiln, f);
          Value z = zp ? castScalar(b, l, zp, zpKiln, f) : Value();
          return quantizeScalar(b, l, arith::DivFOp::create(b, l, x, s), z,
                                qType);
        });
  }
};

struct DequantizeLinearLowering
    : OpConversionPattern<kiln::DequantizeLinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::DequantizeLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type xKiln = elementTypeOf(op.getX());
    Type scaleKiln = elementTypeOf(op.getXScale());
    Type zpKiln = kilnTypeOf(op.getXZeroPoint());
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Type resultElement = resultType.getElementType();
    return lowerQuantDequant(
        op, op.getBlockSize(), op.getAxis(), adaptor.getX(),
        adaptor.getXScale(), adaptor.getXZeroPoint(), resultType, rewriter,
        [&](OpBuilder &b, Location l, Value xElem, Value scale,
            Value zp) -> Value {
          Type i32 = b.getI32Type();
          Value x = castScalar(b, l, xElem, xKiln, i32);
          if (zp)
            x = arith::SubIOp::create(b, l, x,
                                      castScalar(b, l, zp, zpKiln, i32));
          Type f = resultElement.isF64() ? b.getF64Type() : b.getF32Type();
          Value v = arith::SIToFPOp::create(b, l, f, x);
          Value s = castScalar(b, l, scale, scaleKiln, f);
          Value y = arith::MulFOp::create(b, l, v, s);
          return castScalar(b, l, y, f, resultElement);
        });
  }
};

/// DynamicQuantizeLinear to ui8 as ONNX Runtime: min/max of x widened to
/// include 0; scale = (max - min) / 255 (1 when max == min); zero point =
/// roundeven(clamp(-min / scale, 0, 255)); y = saturate(roundeven(x /
/// scale) + zero point).
struct DynamicQuantizeLinearLowering
    : OpConversionPattern<kiln::DynamicQuantizeLinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::DynamicQuantizeLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    Value x = adaptor.getX();
    auto xType = cast<RankedTensorType>(x.getType());
    int64_t rank = xType.getRank();
    Type f32 = rewriter.getF32Type();
    Type qType = elementTypeOf(op.getY());
    auto yType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getY().getType()));
    auto scalarType = RankedTensorType::get({}, f32);

    // min(0, min x) and max(0, max x): both reductions start at 0.
    Value zero = scalarConstant(rewriter, loc, f32, 0);
    Value minInit = filledTensor(rewriter, loc, scalarType, zero);
    Value maxInit = filledTensor(rewriter, loc, scalarType, zero);
    AffineMap scalarMap = AffineMap::get(rank, 0, {}, context);
    SmallVector<utils::IteratorType> iterators(
        rank, utils::IteratorType::reduction);
    auto minMax = linalg::GenericOp::create(
        rewriter, loc, TypeRange{scalarType, scalarType}, ValueRange{x},
        ValueRange{minInit, maxInit},
        ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, context),
                            scalarMap, scalarMap},
        iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::MinimumFOp::create(b, l, args[0], args[1]),
                         arith::MaximumFOp::create(b, l, args[0], args[2])});
        });
    Value min = tensor::ExtractOp::create(rewriter, loc, minMax.getResult(0),
                                          ValueRange{});
    Value max = tensor::ExtractOp::create(rewriter, loc, minMax.getResult(1),
                                          ValueRange{});

    auto c = [&](double v) { return scalarConstant(rewriter, loc, f32, v); };
    Value range = arith::SubFOp::create(rewriter, loc, max, min);
    Value equal = arith::CmpFOp::create(rewriter, loc,
                                        arith::CmpFPredicate::OEQ, max, min);
    Value scale = arith::SelectOp::create(
        rewriter, loc, equal, c(1),
        arith::DivFOp::create(rewriter, loc, range, c(255)));
    Value initialZp = arith::SubFOp::create(
        rewriter, loc, c(0), arith::DivFOp::create(rewriter, loc, min, scale));
    Value zpFloat = math::RoundEvenOp::create(
        rewriter, loc,
        arith::MinimumFOp::create(
            rewriter, loc,
            arith::MaximumFOp::create(rewriter, loc, initialZp, c(0)),
            c(255)));
    Value zp = castScalar(rewriter, loc, zpFloat, f32, qType);

    Value y = buildElementwise(
        rewriter, loc, x, yType,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value v = arith::DivFOp::create(b, l, args[0], scale);
          return quantizeScalar(b, l, v, zpFloat, qType);
        });
    Value scaleTensor = tensor::FromElementsOp::create(
        rewriter, loc, scalarType, ValueRange{scale});
    Value zpTensor = tensor::FromElementsOp::create(
        rewriter, loc, RankedTensorType::get({}, toSignless(qType)),
        ValueRange{zp});
    rewriter.replaceOp(op, {y, scaleTensor, zpTensor});
    return success();
  }
};

/// The i32 tensor `m - zp` of an integer-matmul operand of kiln element
/// type `kilnType`; `zp` (or none) is per-tensor, or 1-D along the dim
/// `zpDim` of `m` (the rows of A, the columns of B).
FailureOr<Value> shiftedOperand(OpBuilder &b, Location loc, Value m,
                                Type kilnType, Value zp, Type zpKiln,
                                int64_t zpDim) {
  auto type = cast<RankedTensorType>(m.getType());
  auto resultType = type.clone(b.getI32Type());
  SmallVector<Value> inputs{m};
  SmallVector<AffineMap> maps{
      AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext())};
  auto param = addParam(b, loc, zp, type, zpDim, inputs, maps);
  if (failed(param))
    return failure();
  return buildParallel(
      b, loc, inputs, maps, resultType,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Type i32 = nb.getI32Type();
        Value v = castScalar(nb, l, args[0], kilnType, i32);
        if (param->present())
          v = arith::SubIOp::create(
              nb, l, v, castScalar(nb, l, param->get(args), zpKiln, i32));
        return v;
      });
}

/// The i32 product of `a` and `b` (i32 tensors) with ONNX MatMul shapes:
/// linalg.matmul / batch_matmul when they fit, else a generic contraction
/// with broadcast batch dims (1-D operands are a row / column).
Value integerMatmul(OpBuilder &b, Location loc, Value a, Value bm,
                    RankedTensorType resultType) {
  MLIRContext *context = b.getContext();
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(bm.getType());
  Value zero = scalarConstant(b, loc, b.getI32Type(), 0);
  Value init = filledTensor(b, loc, resultType, zero);
  if (aType.getRank() == 2 && bType.getRank() == 2)
    return linalg::MatmulOp::create(b, loc, TypeRange{resultType},
                                    ValueRange{a, bm}, ValueRange{init})
        .getResult(0);
  if (aType.getRank() == 3 && bType.getRank() == 3 &&
      aType.getDimSize(0) == bType.getDimSize(0))
    return linalg::BatchMatmulOp::create(b, loc, TypeRange{resultType},
                                         ValueRange{a, bm}, ValueRange{init})
        .getResult(0);

  int64_t r = resultType.getRank();
  bool hasM = aType.getRank() >= 2, hasN = bType.getRank() >= 2;
  int64_t batch = r - hasM - hasN;
  AffineExpr k = getAffineDimExpr(r, context);
  auto batchExprs = [&](RankedTensorType type) {
    SmallVector<AffineExpr> exprs;
    int64_t operandBatch = type.getRank() - 2;
    for (int64_t i = 0; i < operandBatch; ++i) {
      int64_t dim = batch - operandBatch + i;
      if (type.getDimSize(i) == 1 && resultType.getDimSize(dim) != 1)
        exprs.push_back(getAffineConstantExpr(0, context));
      else
        exprs.push_back(getAffineDimExpr(dim, context));
    }
    return exprs;
  };
  SmallVector<AffineExpr> aExprs, bExprs;
  if (hasM) {
    aExprs = batchExprs(aType);
    aExprs.push_back(getAffineDimExpr(batch, context));
  }
  aExprs.push_back(k);
  if (hasN) {
    bExprs = batchExprs(bType);
    bExprs.push_back(k);
    bExprs.push_back(getAffineDimExpr(r - 1, context));
  } else {
    bExprs.push_back(k);
  }
  SmallVector<AffineExpr> outExprs;
  for (int64_t i = 0; i < r; ++i)
    outExprs.push_back(getAffineDimExpr(i, context));
  SmallVector<AffineMap> maps{AffineMap::get(r + 1, 0, aExprs, context),
                              AffineMap::get(r + 1, 0, bExprs, context),
                              AffineMap::get(r + 1, 0, outExprs, context)};
  SmallVector<utils::IteratorType> iterators(r, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, ValueRange{a, bm},
             ValueRange{init}, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value p = arith::MulIOp::create(nb, l, args[0], args[1]);
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::AddIOp::create(nb, l, p, args[2])});
             })
      .getResult(0);
}

/// The i32 accumulator of an integer matmul with zero points (MatMulInteger
/// and the first half of QLinearMatMul).
FailureOr<Value> matmulWithZeroPoints(OpBuilder &b, Location loc,
                                      Operation *op, Value a, Value aKilnValue,
                                      Value azp, Value azpKilnValue, Value bm,
                                      Value bKilnValue, Value bzp,
                                      Value bzpKilnValue,
                                      RankedTensorType accType) {
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(bm.getType());
  // Per-row zero points of A follow its M dim, per-column ones of B its N.
  int64_t aRowDim = aType.getRank() >= 2 ? aType.getRank() - 2 : -1;
  int64_t bColDim = bType.getRank() >= 2 ? bType.getRank() - 1 : -1;
  auto aShifted = shiftedOperand(b, loc, a, elementTypeOf(aKilnValue), azp,
                                 kilnTypeOf(azpKilnValue), aRowDim);
  auto bShifted = shiftedOperand(b, loc, bm, elementTypeOf(bKilnValue), bzp,
                                 kilnTypeOf(bzpKilnValue), bColDim);
  if (failed(aShifted) || failed(bShifted))
    return unsupported(op, "a zero point that is neither per-tensor nor "
                           "per-row of A / per-column of B");
  return integerMatmul(b, loc, *aShifted, *bShifted, accType);
}

struct MatMulIntegerLowering : OpConversionPattern<kiln::MatMulIntegerOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::MatMulIntegerOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto result = matmulWithZeroPoints(
        rewriter, op.getLoc(), op, adaptor.getA(), op.getA(),
        adaptor.getAZeroPoint(), op.getAZeroPoint(), adaptor.getB(), op.getB(),
        adaptor.getBZeroPoint(), op.getBZeroPoint(), resultType);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, *result);
    return success();
  }
};

/// A quantization parameter of a QLinear op: its converted value, its kiln
/// element type, and the result dim it runs along when per-channel (-1:
/// per-tensor only).
struct QParam {
  Value value;
  Type kilnType;
  int64_t axis = -1;
};

/// The requantization QLinearMatMul and QLinearConv end with, as ONNX
/// Runtime computes it in f32: saturate(roundeven((acc + bias) *
/// (s1 * s2 / y_scale)) + y_zero_point). `bias` may be absent (a null
/// value or none).
/// Failure when a parameter is neither per-tensor nor per-channel along its
/// axis.
FailureOr<Value> requantize(OpBuilder &b, Location loc, Value acc,
                            RankedTensorType resultType, QParam s1, QParam s2,
                            QParam yScale, QParam yZp, QParam bias,
                            Type qType) {
  auto accType = cast<RankedTensorType>(acc.getType());
  SmallVector<Value> inputs{acc};
  SmallVector<AffineMap> maps{
      AffineMap::getMultiDimIdentityMap(resultType.getRank(), b.getContext())};
  SmallVector<Param> params;
  for (QParam q : {s1, s2, yScale, yZp, bias}) {
    if (!q.value) {
      params.emplace_back();
      continue;
    }
    FailureOr<Param> param =
        addParam(b, loc, q.value, accType, q.axis, inputs, maps);
    if (failed(param))
      return failure();
    params.push_back(*param);
  }
  return buildParallel(
      b, loc, inputs, maps, resultType,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Type f32 = nb.getF32Type();
        Value sum = args[0];
        if (params[4].present())
          sum = arith::AddIOp::create(nb, l, sum, params[4].get(args));
        Value a = castScalar(nb, l, params[0].get(args), s1.kilnType, f32);
        Value c = castScalar(nb, l, params[1].get(args), s2.kilnType, f32);
        Value ys = castScalar(nb, l, params[2].get(args), yScale.kilnType, f32);
        Value multiplier = arith::DivFOp::create(
            nb, l, arith::MulFOp::create(nb, l, a, c), ys);
        Value v = arith::MulFOp::create(
            nb, l, arith::SIToFPOp::create(nb, l, f32, sum), multiplier);
        Value zp = castScalar(nb, l, params[3].get(args), yZp.kilnType, f32);
        return quantizeScalar(nb, l, v, zp, qType);
      });
}

/// QLinearMatMul: the i32 accumulator requantized as ONNX Runtime:
/// saturate(roundeven(acc * (a_scale * b_scale / y_scale)) + y_zero_point),
/// in f32. b_scale may be per-column.
struct QLinearMatMulLowering : OpConversionPattern<kiln::QLinearMatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::QLinearMatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto accType = resultType.clone(rewriter.getI32Type());
    auto acc = matmulWithZeroPoints(
        rewriter, loc, op, adaptor.getA(), op.getA(), adaptor.getAZeroPoint(),
        op.getAZeroPoint(), adaptor.getB(), op.getB(), adaptor.getBZeroPoint(),
        op.getBZeroPoint(), accType);
    if (failed(acc))
      return failure();

    bool hasN = cast<RankedTensorType>(op.getB().getType()).getRank() >= 2;
    FailureOr<Value> result = requantize(
        rewriter, loc, *acc, resultType,
        {adaptor.getAScale(), elementTypeOf(op.getAScale())},
        {adaptor.getBScale(), elementTypeOf(op.getBScale()),
         hasN ? resultType.getRank() - 1 : -1},
        {adaptor.getYScale(), elementTypeOf(op.getYScale())},
        {adaptor.getYZeroPoint(), elementTypeOf(op.getYZeroPoint())},
        {Value(), Type()}, elementTypeOf(op.getY()));
    if (failed(result))
      return unsupported(op, "a scale or output zero point that is neither "
                             "per-tensor nor (b_scale) per-column");
    rewriter.replaceOp(op, *result);
    return success();
  }
};

/// The i32 convolution of the i32 tensors `x` [N, C, S...] and `w` [M, C/G,
/// K...] with ONNX Conv's window attributes of `op`, into `resultType` [N,
/// M, O...] (i32). Padding is 0, which is the zero point once x has been
/// shifted, as ONNX Runtime pads with x_zero_point. One linalg.generic over
/// (n, g, m, o..., c, k...) on views split by group.
template <typename OpTy>
FailureOr<Value> integerConv(OpBuilder &b, Location loc, OpTy op, Value x,
                             Value w, RankedTensorType resultType) {
  MLIRContext *context = b.getContext();
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  int64_t rank = xType.getRank();
  int64_t spatial = rank - 2;
  if (spatial < 1 || wType.getRank() != rank || resultType.getRank() != rank)
    return unsupported(op, "input and weight ranks that do not match");
  int64_t group = op.getGroup();
  int64_t channels = xType.getDimSize(1);
  int64_t outChannels = wType.getDimSize(0);
  if (group < 1 || channels % group || outChannels % group ||
      wType.getDimSize(1) != channels / group)
    return unsupported(op, "channels that do not divide into the groups");

  SmallVector<int64_t> strides(spatial, 1), dilations(spatial, 1);
  if (auto attr = op.getStrides())
    strides.assign(attr->begin(), attr->end());
  if (auto attr = op.getDilations())
    dilations.assign(attr->begin(), attr->end());
  if ((int64_t)strides.size() != spatial ||
      (int64_t)dilations.size() != spatial)
    return unsupported(op, "strides or dilations of the wrong length");
  SmallVector<int64_t> low(spatial, 0), high(spatial, 0);
  StringRef autoPad = op.getAutoPad();
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = xType.getDimSize(2 + i);
    int64_t extent = (wType.getDimSize(2 + i) - 1) * dilations[i] + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t out = (in + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + extent - in);
      int64_t small = total / 2;
      low[i] = autoPad == "SAME_UPPER" ? small : total - small;
      high[i] = total - low[i];
    } else if (autoPad == "NOTSET") {
      if (auto pads = op.getPads()) {
        if ((int64_t)pads->size() != 2 * spatial)
          return unsupported(op, "pads of the wrong length");
        low[i] = (*pads)[i];
        high[i] = (*pads)[spatial + i];
      }
    } else if (autoPad != "VALID") {
      return unsupported(op, "auto_pad '" + autoPad + "'");
    }
    int64_t expected = (in + low[i] + high[i] - extent) / strides[i] + 1;
    if (resultType.getDimSize(2 + i) != expected)
      return unsupported(op, "a result shape that does not match the window "
                             "attributes");
  }

  if (llvm::any_of(low, [](int64_t v) { return v != 0; }) ||
      llvm::any_of(high, [](int64_t v) { return v != 0; })) {
    SmallVector<OpFoldResult> lowPads(2, b.getIndexAttr(0)),
        highPads(2, b.getIndexAttr(0));
    SmallVector<int64_t> padded(xType.getShape());
    for (int64_t i = 0; i < spatial; ++i) {
      lowPads.push_back(b.getIndexAttr(low[i]));
      highPads.push_back(b.getIndexAttr(high[i]));
      padded[2 + i] += low[i] + high[i];
    }
    Value zero = scalarConstant(b, loc, b.getI32Type(), 0);
    xType = RankedTensorType::get(padded, b.getI32Type());
    x = tensor::PadOp::create(b, loc, xType, x, lowPads, highPads, zero);
  }

  // Views split by group: x [N, G, C/G, S...], w [G, M/G, C/G, K...],
  // result [N, G, M/G, O...].
  auto splitShape = [&](ArrayRef<int64_t> shape, int64_t dim) {
    SmallVector<int64_t> split(shape.take_front(dim));
    split.push_back(group);
    split.push_back(shape[dim] / group);
    split.append(shape.begin() + dim + 1, shape.end());
    return split;
  };
  auto splitGroups = [&](int64_t dim) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i < rank; ++i) {
      if (i < dim)
        groups.push_back({i});
      else if (i == dim)
        groups.push_back({i, i + 1});
      else
        groups.push_back({i + 1});
    }
    return groups;
  };
  Type i32 = b.getI32Type();
  auto xSplitType = RankedTensorType::get(splitShape(xType.getShape(), 1), i32);
  auto wSplitType = RankedTensorType::get(splitShape(wType.getShape(), 0), i32);
  auto outSplitType =
      RankedTensorType::get(splitShape(resultType.getShape(), 1), i32);
  Value xSplit =
      tensor::ExpandShapeOp::create(b, loc, xSplitType, x, splitGroups(1));
  Value wSplit =
      tensor::ExpandShapeOp::create(b, loc, wSplitType, w, splitGroups(0));
  Value init =
      filledTensor(b, loc, outSplitType, scalarConstant(b, loc, i32, 0));

  // Loops: n, g, m, o_1..o_s, c, k_1..k_s.
  int64_t loops = 3 + spatial + 1 + spatial;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, context); };
  AffineExpr n = d(0), g = d(1), m = d(2), c = d(3 + spatial);
  SmallVector<AffineExpr> xExprs{n, g, c}, wExprs{g, m, c}, outExprs{n, g, m};
  for (int64_t i = 0; i < spatial; ++i) {
    AffineExpr o = d(3 + i), k = d(4 + spatial + i);
    xExprs.push_back(o * strides[i] + k * dilations[i]);
    wExprs.push_back(k);
    outExprs.push_back(o);
  }
  SmallVector<AffineMap> maps{AffineMap::get(loops, 0, xExprs, context),
                              AffineMap::get(loops, 0, wExprs, context),
                              AffineMap::get(loops, 0, outExprs, context)};
  SmallVector<utils::IteratorType> iterators(3 + spatial,
                                             utils::IteratorType::parallel);
  iterators.append(1 + spatial, utils::IteratorType::reduction);
  Value conv =
      linalg::GenericOp::create(
          b, loc, TypeRange{outSplitType}, ValueRange{xSplit, wSplit},
          ValueRange{init}, maps, iterators,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value p = arith::MulIOp::create(nb, l, args[0], args[1]);
            linalg::YieldOp::create(
                nb, l, ValueRange{arith::AddIOp::create(nb, l, p, args[2])});
          })
          .getResult(0);
  return Value(tensor::CollapseShapeOp::create(
      b, loc, resultType.clone(i32), conv, splitGroups(1)));
}

/// The i32 convolution of ConvInteger / QLinearConv operands minus their
/// zero points (x's per-tensor, w's per-tensor or per output channel).
template <typename OpTy>
FailureOr<Value> convWithZeroPoints(OpBuilder &b, Location loc, OpTy op,
                                    Value x, Value xzp, Value w, Value wzp,
                                    RankedTensorType accType) {
  auto xShifted =
      shiftedOperand(b, loc, x, elementTypeOf(op.getX()), xzp,
                     kilnTypeOf(op.getXZeroPoint()), /*zpDim=*/-1);
  auto wShifted =
      shiftedOperand(b, loc, w, elementTypeOf(op.getW()), wzp,
                     kilnTypeOf(op.getWZeroPoint()), /*zpDim=*/0);
  if (failed(xShifted) || failed(wShifted))
    return unsupported(op, "a zero point that is neither per-tensor nor "
                           "(for w) per output channel");
  return integerConv(b, loc, op, *xShifted, *wShifted, accType);
}

struct ConvIntegerLowering : OpConversionPattern<kiln::ConvIntegerOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ConvIntegerOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto result = convWithZeroPoints(
        rewriter, op.getLoc(), op, adaptor.getX(), adaptor.getXZeroPoint(),
        adaptor.getW(), adaptor.getWZeroPoint(), resultType);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, *result);
    return success();
  }
};

/// QLinearConv: the i32 convolution plus the i32 bias, requantized as ONNX
/// Runtime: saturate(roundeven(acc * (x_scale * w_scale / y_scale)) +
/// y_zero_point) in f32; w_scale may be per output channel.
struct QLinearConvLowering : OpConversionPattern<kiln::QLinearConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::QLinearConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto accType = resultType.clone(rewriter.getI32Type());
    auto acc = convWithZeroPoints(rewriter, loc, op, adaptor.getX(),
                                  adaptor.getXZeroPoint(), adaptor.getW(),
                                  adaptor.getWZeroPoint(), accType);
    if (failed(acc))
      return failure();

    FailureOr<Value> result = requantize(
        rewriter, loc, *acc, resultType,
        {adaptor.getXScale(), elementTypeOf(op.getXScale())},
        {adaptor.getWScale(), elementTypeOf(op.getWScale()), 1},
        {adaptor.getYScale(), elementTypeOf(op.getYScale())},
        {adaptor.getYZeroPoint(), elementTypeOf(op.getYZeroPoint())},
        {adaptor.getB(), Type(), 1}, elementTypeOf(op.getY()));
    if (failed(result))
      return unsupported(op, "a scale, zero point or bias that is neither "
                             "per-tensor nor (w_scale, B) per output channel");
    rewriter.replaceOp(op, *result);
    return success();
  }
};

/// The operands of the int8 GEMM and its epilogue, shared by
/// kiln.quantized_matmul and kiln.quantized_conv: converted values (`none`
/// when absent) and the kiln element types of the 8-bit ones (null when
/// absent).
struct Int8GemmOperands {
  Value a;    // [M, K], 8-bit
  Value w;    // [N, K], 8-bit
  Type aKiln, wKiln;
  Value aZp, wZp, rowSums, scale, bias, yScale, yZp;
  Type aZpKiln, wZpKiln, yZpKiln;
  bool relu = false;
};

/// The Int8GemmOperands of kiln.quantized_matmul or kiln.quantized_conv
/// `op`: `a` and `w` (the GEMM's views of the 8-bit input and weight),
/// `kilnA` and `aZp` / `kilnAZp` its input and input zero point (the
/// adapted and the kiln one), the other parameters the op's.
template <typename OpTy, typename AdaptorTy>
Int8GemmOperands int8GemmOperands(OpTy op, AdaptorTy adaptor, Value a,
                                  Value w, Value kilnA, Value aZp,
                                  Value kilnAZp) {
  return {a,
          w,
          elementTypeOf(kilnA),
          elementTypeOf(op.getW()),
          aZp,
          adaptor.getWZeroPoint(),
          adaptor.getWRowSums(),
          adaptor.getScale(),
          adaptor.getBias(),
          adaptor.getYScale(),
          adaptor.getYZeroPoint(),
          kilnTypeOf(kilnAZp),
          kilnTypeOf(op.getWZeroPoint()),
          kilnTypeOf(op.getYZeroPoint()),
          op.getActivation() == "relu"};
}

/// Where the epilogue writes its result: `outType`, whose loops read the
/// [M, N] accumulator through `accMap`, rowsum(A) [M] through `rowMap` and
/// the per-column parameters through `colMap`, after the optional reshapes
/// `viewAcc` / `viewRows` (a conv's NHWC-ordered rows are read from the
/// NCHW loops). Null: the [M, N] result itself.
struct EpilogueLayout {
  RankedTensorType outType;
  std::function<Value(Value)> viewAcc, viewRows;
  AffineMap accMap, rowMap, colMap;
};

/// The i32 contraction A [M, K] x W [N, K]^T by a linalg.generic that reads
/// both as they are (no widened copy of the weight) and carries the
/// attribute `kiln.int8_matmul`, which the CPU backend replaces with its int8
/// GEMM kernel (runtime/abi/kiln_abi_qgemm.c, VNNI: u8 x s8). The
/// contraction reads A as unsigned: an i8 A is shifted, a + 128 (a xor
/// 0x80), with its zero point shifted alike, za + 128, so that (a - za) is
/// unchanged and the shift costs one correction term that exists anyway.
/// Then one elementwise epilogue: the zero-point corrections (acc - za *
/// rowsum(W)[n] - zw[n] * rowsum(A)[m] + K * za * zw[n], W's row sums
/// folded at compile time), the bias (i32, or f32 after the scale), the
/// scale, ReLU, and the requantization (or the f32 result). Failure when a
/// parameter is neither per-tensor nor per output column.
FailureOr<Value> int8GemmWithEpilogue(OpBuilder &rewriter, Location loc,
                                      const Int8GemmOperands &ops,
                                      Type resultElement,
                                      const EpilogueLayout *layout) {
  MLIRContext *context = rewriter.getContext();
  Value a = ops.a, w = ops.w;
  auto a2Type = cast<RankedTensorType>(a.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  int64_t k = wType.getDimSize(1), n = wType.getDimSize(0);
  Type i32 = rewriter.getI32Type(), f32 = rewriter.getF32Type();
  Type wKiln = ops.wKiln;
  bool aShift = !isUnsignedInt(ops.aKiln);
  // A's element as the unsigned value the contraction multiplies.
  auto aValue = [&](OpBuilder &b, Location l, Value x) -> Value {
    if (aShift)
      x = arith::XOrIOp::create(
          b, l, x, arith::ConstantIntOp::create(b, l, b.getI8Type(), -128));
    return arith::ExtUIOp::create(b, l, i32, x);
  };

  SmallVector<Value> dynamicM;
  if (a2Type.isDynamicDim(0))
    dynamicM.push_back(tensor::DimOp::create(rewriter, loc, a, 0));
  auto accType = RankedTensorType::get({a2Type.getDimSize(0), n}, i32);
  Value zero = scalarConstant(rewriter, loc, i32, 0);
  Value init = linalg::FillOp::create(
                   rewriter, loc, zero,
                   tensor::EmptyOp::create(rewriter, loc, accType.getShape(),
                                           i32, dynamicM)
                       .getResult())
                   .getResult(0);
  auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
  SmallVector<AffineMap> maps{AffineMap::get(3, 0, {d(0), d(2)}, context),
                              AffineMap::get(3, 0, {d(1), d(2)}, context),
                              AffineMap::get(3, 0, {d(0), d(1)}, context)};
  SmallVector<utils::IteratorType> iterators{utils::IteratorType::parallel,
                                             utils::IteratorType::parallel,
                                             utils::IteratorType::reduction};
  auto gemm = linalg::GenericOp::create(
      rewriter, loc, TypeRange{accType}, ValueRange{a, w}, ValueRange{init},
      maps, iterators, [&](OpBuilder &b, Location l, ValueRange args) {
        Value x = aValue(b, l, args[0]);
        Value y = castScalar(b, l, args[1], wKiln, i32);
        Value p = arith::MulIOp::create(b, l, x, y);
        linalg::YieldOp::create(
            b, l, ValueRange{arith::AddIOp::create(b, l, p, args[2])});
      });
  gemm->setAttr("kiln.int8_matmul",
                rewriter.getDictionaryAttr(
                    {rewriter.getNamedAttr("a_shifted",
                                           rewriter.getBoolAttr(aShift)),
                     rewriter.getNamedAttr(
                         "w_unsigned",
                         rewriter.getBoolAttr(isUnsignedInt(wKiln)))}));
  Value acc = gemm.getResult(0);

  // rowsum(A)[m], only for a weight zero point.
  bool hasWzp = !isa<NoneType>(ops.wZp.getType());
  Value aSums;
  if (hasWzp) {
    auto sumType = RankedTensorType::get({a2Type.getDimSize(0)}, i32);
    Value sumInit =
        linalg::FillOp::create(rewriter, loc, zero,
                               tensor::EmptyOp::create(rewriter, loc,
                                                       sumType.getShape(), i32,
                                                       dynamicM)
                                   .getResult())
            .getResult(0);
    aSums = linalg::GenericOp::create(
                rewriter, loc, TypeRange{sumType}, ValueRange{a},
                ValueRange{sumInit},
                ArrayRef<AffineMap>{
                    AffineMap::getMultiDimIdentityMap(2, context),
                    AffineMap::get(2, 0, {d(0)}, context)},
                ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                              utils::IteratorType::reduction},
                [&](OpBuilder &b, Location l, ValueRange args) {
                  Value x = aValue(b, l, args[0]);
                  linalg::YieldOp::create(
                      b, l,
                      ValueRange{arith::AddIOp::create(b, l, x, args[1])});
                })
                .getResult(0);
  }

  // The epilogue, over [M, N] or the layout's result.
  EpilogueLayout plain;
  if (!layout) {
    plain.outType = RankedTensorType::get({a2Type.getDimSize(0), n},
                                          resultElement);
    plain.accMap = AffineMap::getMultiDimIdentityMap(2, context);
    plain.rowMap = AffineMap::get(2, 0, {d(0)}, context);
    plain.colMap = AffineMap::get(2, 0, {d(1)}, context);
    layout = &plain;
  }
  SmallVector<Value> inputs{layout->viewAcc ? layout->viewAcc(acc) : acc};
  SmallVector<AffineMap> epiMaps{layout->accMap};
  auto param = [&](Value v) {
    return addParam(rewriter, loc, v, accType, 1, inputs, epiMaps,
                    layout->colMap);
  };
  auto aZp = param(ops.aZp);
  auto wZp = param(ops.wZp);
  bool hasAzp = !isa<NoneType>(ops.aZp.getType());
  auto sums =
      hasAzp || aShift ? param(ops.rowSums) : FailureOr<Param>(Param());
  auto scale = param(ops.scale);
  auto bias = param(ops.bias);
  auto yScale = param(ops.yScale);
  auto yZp = param(ops.yZp);
  if (failed(aZp) || failed(wZp) || failed(sums) || failed(scale) ||
      failed(bias) || failed(yScale) || failed(yZp))
    return failure();
  bool floatBias = bias->present() && elementTypeOf(ops.bias).isF32();
  int aSumInput = -1;
  if (aSums) {
    aSumInput = inputs.size();
    inputs.push_back(layout->viewRows ? layout->viewRows(aSums) : aSums);
    epiMaps.push_back(layout->rowMap);
  }
  Type qType = ops.yZpKiln;
  Value out = buildParallel(
      rewriter, loc, inputs, epiMaps, layout->outType,
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        Value v = args[0];
        Value za, zw;
        if (aZp->present() || aShift) {
          za = aZp->present()
                   ? castScalar(b, l, aZp->get(args), ops.aZpKiln, i32)
                   : scalarConstant(b, l, i32, 0);
          if (aShift)
            za = arith::AddIOp::create(b, l, za,
                                       scalarConstant(b, l, i32, 128));
          v = arith::SubIOp::create(
              b, l, v, arith::MulIOp::create(b, l, za, sums->get(args)));
        }
        if (wZp->present()) {
          zw = castScalar(b, l, wZp->get(args), ops.wZpKiln, i32);
          v = arith::SubIOp::create(
              b, l, v, arith::MulIOp::create(b, l, zw, args[aSumInput]));
          if (za) {
            Value kzz = arith::MulIOp::create(
                b, l, scalarConstant(b, l, i32, double(k)),
                arith::MulIOp::create(b, l, za, zw));
            v = arith::AddIOp::create(b, l, v, kzz);
          }
        }
        if (bias->present() && !floatBias)
          v = arith::AddIOp::create(b, l, v, bias->get(args));
        Value f = arith::MulFOp::create(
            b, l, arith::SIToFPOp::create(b, l, f32, v), scale->get(args));
        if (floatBias)
          f = arith::AddFOp::create(b, l, f, bias->get(args));
        if (ops.relu)
          f = arith::MaximumFOp::create(b, l, f, scalarConstant(b, l, f32, 0));
        if (!qType)
          return f;
        Value q = arith::DivFOp::create(b, l, f, yScale->get(args));
        Value z = castScalar(b, l, yZp->get(args), ops.yZpKiln, f32);
        return quantizeScalar(b, l, q, z, qType);
      });
  return out;
}

/// kiln.quantized_matmul: A [..., K] viewed as [M, K] and W [N, K] through
/// int8GemmWithEpilogue.
struct QuantizedMatMulLowering
    : OpConversionPattern<kiln::QuantizedMatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::QuantizedMatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Value a = adaptor.getA(), w = adaptor.getW();
    auto aType = cast<RankedTensorType>(a.getType());
    auto wType = cast<RankedTensorType>(w.getType());
    int64_t rank = aType.getRank();
    if (rank < 2)
      return unsupported(op, "an A of rank 1 (the pass makes rank >= 2)");
    if (ShapedType::isDynamic(wType.getDimSize(1)) ||
        ShapedType::isDynamic(wType.getDimSize(0)))
      return unsupported(op, "a weight of dynamic shape");
    if (aType.isDynamicDim(rank - 1))
      return unsupported(op, "an A whose last (K) dim is dynamic");

    // [..., K] -> [M, K]; the result's leading dims are A's (dynamic ones
    // read from A at run time), N the weight's.
    SmallVector<OpFoldResult> resultSizes;
    for (int64_t i = 0; i < rank - 1; ++i)
      resultSizes.push_back(
          aType.isDynamicDim(i)
              ? OpFoldResult(tensor::DimOp::create(rewriter, loc, a, i)
                                 .getResult())
              : OpFoldResult(rewriter.getIndexAttr(aType.getDimSize(i))));
    resultSizes.push_back(rewriter.getIndexAttr(wType.getDimSize(0)));
    SmallVector<ReassociationIndices> rows;
    if (rank > 2) {
      ReassociationIndices lead;
      for (int64_t i = 0; i < rank - 1; ++i)
        lead.push_back(i);
      rows = {lead, {rank - 1}};
      a = tensor::CollapseShapeOp::create(rewriter, loc, a, rows);
    }
    Int8GemmOperands ops =
        int8GemmOperands(op, adaptor, a, w, op.getA(), adaptor.getAZeroPoint(),
                         op.getAZeroPoint());
    FailureOr<Value> out = int8GemmWithEpilogue(
        rewriter, loc, ops, resultType.getElementType(), nullptr);
    if (failed(out))
      return unsupported(op, "a parameter that is neither per-tensor nor "
                             "per output column");
    Value result = *out;
    if (rank > 2)
      result = expandToSizes(rewriter, loc, resultType, result, rows,
                             resultSizes);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// kiln.quantized_conv: X [N, C, H, W] transposed to NHWC and padded with
/// its zero point (a padded element then contributes (zp - zp) * w = 0, as
/// a 0 does in the float graph), copied by an im2col generic into
/// [N*OH*OW, KH*KW*C] (rows in NHWC order, columns in the OHWI weight's
/// order: each (kh, kw) a run of C contiguous bytes on both sides), then
/// the GEMM against W viewed as [M, KH*KW*C] and the epilogue of
/// int8GemmWithEpilogue, whose loops run over the NCHW result and read the
/// [N*OH*OW, M] accumulator transposed: no separate layout pass.
struct QuantizedConvLowering : OpConversionPattern<kiln::QuantizedConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::QuantizedConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Value x = adaptor.getX(), w = adaptor.getW();
    auto xType = cast<RankedTensorType>(x.getType());
    auto wType = cast<RankedTensorType>(w.getType());
    if (!xType.hasStaticShape() || !wType.hasStaticShape() ||
        !resultType.hasStaticShape())
      return unsupported(op, "dynamic shapes (the pass makes static ones)");
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations(),
                      pads = op.getPads();
    int64_t batch = xType.getDimSize(0), channels = xType.getDimSize(1);
    int64_t m = wType.getDimSize(0), kh = wType.getDimSize(1),
            kw = wType.getDimSize(2);
    int64_t oh = resultType.getDimSize(2), ow = resultType.getDimSize(3);
    Type i8 = xType.getElementType();
    auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };

    // NCHW -> NHWC.
    auto nhwcType = RankedTensorType::get(
        {batch, xType.getDimSize(2), xType.getDimSize(3), channels}, i8);
    x = copyGeneric(rewriter, loc, x,
                    AffineMap::get(4, 0, {d(0), d(3), d(1), d(2)}, context),
                    nhwcType);

    // Pad with the zero point (0 without one).
    if (llvm::any_of(pads, [](int64_t p) { return p != 0; })) {
      Value padValue;
      if (isa<NoneType>(adaptor.getXZeroPoint().getType())) {
        padValue = scalarConstant(rewriter, loc, i8, 0);
      } else {
        padValue = extractFirst(rewriter, loc, adaptor.getXZeroPoint());
      }
      SmallVector<OpFoldResult> low{rewriter.getIndexAttr(0),
                                    rewriter.getIndexAttr(pads[0]),
                                    rewriter.getIndexAttr(pads[1]),
                                    rewriter.getIndexAttr(0)};
      SmallVector<OpFoldResult> high{rewriter.getIndexAttr(0),
                                     rewriter.getIndexAttr(pads[2]),
                                     rewriter.getIndexAttr(pads[3]),
                                     rewriter.getIndexAttr(0)};
      auto paddedType = RankedTensorType::get(
          {batch, nhwcType.getDimSize(1) + pads[0] + pads[2],
           nhwcType.getDimSize(2) + pads[1] + pads[3], channels},
          i8);
      x = tensor::PadOp::create(rewriter, loc, paddedType, x, low, high,
                                padValue);
    }

    // im2col: [N, OH, OW, KH, KW, C], a copy, then collapsed.
    auto colType =
        RankedTensorType::get({batch, oh, ow, kh, kw, channels}, i8);
    AffineMap readX = AffineMap::get(
        6, 0,
        {d(0), d(1) * strides[0] + d(3) * dilations[0],
         d(2) * strides[1] + d(4) * dilations[1], d(5)},
        context);
    Value cols = copyGeneric(rewriter, loc, x, readX, colType);
    Value a = tensor::CollapseShapeOp::create(
        rewriter, loc, cols,
        ArrayRef<ReassociationIndices>{{0, 1, 2}, {3, 4, 5}});
    Value w2 = tensor::CollapseShapeOp::create(
        rewriter, loc, w, ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}});

    // The epilogue over [N, M, OH, OW] reads acc [N*OH*OW, M] as
    // [N, OH, OW, M] and rowsum(A) as [N, OH, OW].
    Type i32 = rewriter.getI32Type();
    EpilogueLayout layout;
    layout.outType = resultType;
    layout.viewAcc = [&](Value acc) -> Value {
      return tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({batch, oh, ow, m}, i32), acc,
          ArrayRef<ReassociationIndices>{{0, 1, 2}, {3}});
    };
    layout.viewRows = [&](Value sums) -> Value {
      return tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({batch, oh, ow}, i32), sums,
          ArrayRef<ReassociationIndices>{{0, 1, 2}});
    };
    layout.accMap = AffineMap::get(4, 0, {d(0), d(2), d(3), d(1)}, context);
    layout.rowMap = AffineMap::get(4, 0, {d(0), d(2), d(3)}, context);
    layout.colMap = AffineMap::get(4, 0, {d(1)}, context);

    Int8GemmOperands ops =
        int8GemmOperands(op, adaptor, a, w2, op.getX(), adaptor.getXZeroPoint(),
                         op.getXZeroPoint());
    FailureOr<Value> out = int8GemmWithEpilogue(
        rewriter, loc, ops, resultType.getElementType(), &layout);
    if (failed(out))
      return unsupported(op, "a parameter that is neither per-tensor nor "
                             "per output channel");
    rewriter.replaceOp(op, *out);
    return success();
  }
};

} // namespace

void kiln::populateQuantToLinalgPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns) {
  patterns.add<QuantizeLinearLowering, DequantizeLinearLowering,
               DynamicQuantizeLinearLowering, MatMulIntegerLowering,
               QLinearMatMulLowering, ConvIntegerLowering,
               QLinearConvLowering, QuantizedMatMulLowering,
               QuantizedConvLowering>(
      converter, patterns.getContext());
}
