//===- Elementwise.cpp - Lowering of the elementwise kiln ops to linalg ---===//
//
// Every elementwise kiln op becomes one broadcasting linalg.generic
// (buildElementwise) whose body is built from a small table of scalar
// functions: one per op for float elements and, where ONNX allows them, one
// for integer elements (which also learns whether the ONNX type was
// unsigned). f16 and bf16 are computed in f32 and rounded once at the end,
// as ONNX Runtime does for most of these kernels; libm (which the math
// dialect lowers to) has no half-precision entry points anyway.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kiln/Conversion/KilnToLinalg.h"
#include "kiln/Dialect/KilnOps.h"

#include <cmath>

using namespace mlir;
using namespace kiln::lowering;

namespace {

/// `value` extended to f32 when it is f16/bf16.
Value widen(OpBuilder &b, Location loc, Value value) {
  return extendScalar(b, loc, value, computeType(value.getType()));
}

/// `value` rounded back to `type` when the computation was widened.
Value narrowTo(OpBuilder &b, Location loc, Value value, Type type) {
  if (!isa<FloatType>(type))
    return value;
  return truncateScalar(b, loc, value, type);
}

/// Terse scalar arithmetic for the float bodies below; every value has the
/// float type `type`.
struct FloatMath {
  OpBuilder &b;
  Location loc;
  Type type;

  FloatMath(OpBuilder &b, Location loc, Value like)
      : b(b), loc(loc), type(like.getType()) {}
  Value c(double v) { return scalarConstant(b, loc, type, v); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value max(Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinimumFOp::create(b, loc, x, y); }
  Value abs(Value x) { return math::AbsFOp::create(b, loc, x); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value log(Value x) { return math::LogOp::create(b, loc, x); }
  Value log1p(Value x) { return math::Log1pOp::create(b, loc, x); }
  Value tanh(Value x) { return math::TanhOp::create(b, loc, x); }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  /// log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
  Value softplus(Value x) {
    return add(max(x, c(0)), log1p(exp(neg(abs(x)))));
  }
  Value sigmoid(Value x) { return div(c(1), add(c(1), exp(neg(x)))); }
};

/// Scalar functions of the table. The `Operation *` gives access to
/// attributes; integer functions also get whether the ONNX type is unsigned.
using FloatUnaryFn = Value (*)(OpBuilder &, Location, Value, Operation *);
using IntUnaryFn = Value (*)(OpBuilder &, Location, Value, Operation *,
                             bool isUnsigned);
using FloatBinaryFn = Value (*)(OpBuilder &, Location, Value, Value,
                                Operation *);
using IntBinaryFn = Value (*)(OpBuilder &, Location, Value, Value, Operation *,
                              bool isUnsigned);

/// A unary or binary function of the table applied to the generic's
/// scalars: an integer one as they are, a float one on them widened to the
/// compute type.
Value applyFn(IntUnaryFn fn, OpBuilder &b, Location loc, ValueRange args,
              Operation *op, bool isUnsigned) {
  return fn(b, loc, args[0], op, isUnsigned);
}
Value applyFn(IntBinaryFn fn, OpBuilder &b, Location loc, ValueRange args,
              Operation *op, bool isUnsigned) {
  return fn(b, loc, args[0], args[1], op, isUnsigned);
}
Value applyFn(FloatUnaryFn fn, OpBuilder &b, Location loc, ValueRange args,
              Operation *op) {
  return fn(b, loc, widen(b, loc, args[0]), op);
}
Value applyFn(FloatBinaryFn fn, OpBuilder &b, Location loc, ValueRange args,
              Operation *op) {
  return fn(b, loc, widen(b, loc, args[0]), widen(b, loc, args[1]), op);
}

/// Lowers `op` to a generic over `inputs` applying the float or the
/// integer function of the table, per the operand's element type; a
/// missing function is an unsupported element type.
template <typename FloatFn, typename IntFn>
LogicalResult lowerWithTable(Operation *op, ValueRange inputs,
                             const TypeConverter &converter,
                             ConversionPatternRewriter &rewriter,
                             FloatFn floatFn, IntFn intFn) {
  auto resultType = cast<RankedTensorType>(
      converter.convertType(op->getResult(0).getType()));
  Type kilnElement = elementTypeOf(op->getOperand(0));
  bool isFloat = isa<FloatType>(kilnElement);
  if (isFloat ? !floatFn : !intFn)
    return unsupported(op, "element type " +
                               llvm::Twine(isFloat ? "float" : "integer") +
                               " is not supported by this op");
  Type resultElement = resultType.getElementType();
  bool isUnsigned = isUnsignedInt(kilnElement);
  Value result = buildElementwise(
      rewriter, op->getLoc(), inputs, resultType,
      [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        if (!isFloat)
          return applyFn(intFn, b, loc, args, op, isUnsigned);
        return narrowTo(b, loc, applyFn(floatFn, b, loc, args, op),
                        resultElement);
      });
  rewriter.replaceOp(op, result);
  return success();
}

/// A unary elementwise op (its first operand) lowered with its table
/// functions.
template <typename OpTy>
struct UnaryLowering : OpConversionPattern<OpTy> {
  UnaryLowering(const TypeConverter &converter, MLIRContext *context,
                FloatUnaryFn floatFn, IntUnaryFn intFn)
      : OpConversionPattern<OpTy>(converter, context), floatFn(floatFn),
        intFn(intFn) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return lowerWithTable(op, adaptor.getOperands()[0],
                          *this->getTypeConverter(), rewriter, floatFn, intFn);
  }

  FloatUnaryFn floatFn;
  IntUnaryFn intFn;
};

/// A binary broadcasting op whose operands have one element type.
template <typename OpTy>
struct BinaryLowering : OpConversionPattern<OpTy> {
  BinaryLowering(const TypeConverter &converter, MLIRContext *context,
                 FloatBinaryFn floatFn, IntBinaryFn intFn)
      : OpConversionPattern<OpTy>(converter, context), floatFn(floatFn),
        intFn(intFn) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return lowerWithTable(op, adaptor.getOperands(), *this->getTypeConverter(),
                          rewriter, floatFn, intFn);
  }

  FloatBinaryFn floatFn;
  IntBinaryFn intFn;
};

/// Max, Min, Sum, Mean: the binary function folded over all operands (Mean
/// then divides by their count).
template <typename OpTy>
struct VariadicLowering : OpConversionPattern<OpTy> {
  VariadicLowering(const TypeConverter &converter, MLIRContext *context,
                   FloatBinaryFn floatFn, IntBinaryFn intFn, bool mean)
      : OpConversionPattern<OpTy>(converter, context), floatFn(floatFn),
        intFn(intFn), mean(mean) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    Type kilnElement = elementTypeOf(op->getOperand(0));
    bool isFloat = isa<FloatType>(kilnElement);
    if (isFloat ? !floatFn : !intFn)
      return unsupported(op, "integer element type is not supported");
    Type resultElement = resultType.getElementType();
    bool isUnsigned = isUnsignedInt(kilnElement);
    Operation *raw = op.getOperation();
    size_t count = adaptor.getOperands().size();
    Value result = buildElementwise(
        rewriter, op.getLoc(), adaptor.getOperands(), resultType,
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          if (!isFloat) {
            Value acc = args[0];
            for (Value arg : args.drop_front())
              acc = intFn(b, loc, acc, arg, raw, isUnsigned);
            return acc;
          }
          Value acc = widen(b, loc, args[0]);
          for (Value arg : args.drop_front())
            acc = floatFn(b, loc, acc, widen(b, loc, arg), raw);
          if (mean)
            acc = arith::DivFOp::create(
                b, loc, acc, scalarConstant(b, loc, acc.getType(), count));
          return narrowTo(b, loc, acc, resultElement);
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  FloatBinaryFn floatFn;
  IntBinaryFn intFn;
  bool mean;
};

/// Identity: the (converted) operand itself.
struct IdentityLowering : OpConversionPattern<kiln::IdentityOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::IdentityOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getX());
    return success();
  }
};

/// Cast and CastLike: castScalar (ONNX Cast semantics) per element.
template <typename OpTy>
struct CastLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    Type from = elementTypeOf(op.getInput());
    Type to = elementTypeOf(op.getOutput());
    if (toSignless(from) == toSignless(to) &&
        adaptor.getInput().getType() == resultType) {
      rewriter.replaceOp(op, adaptor.getInput());
      return success();
    }
    Value result = buildElementwise(
        rewriter, op.getLoc(), adaptor.getInput(), resultType,
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return castScalar(b, loc, args[0], from, to);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Clip: min(max(x, lo), hi) with each bound optional; a bound is a scalar
/// (0-d or one-element tensor) read once outside the loop.
struct ClipLowering : OpConversionPattern<kiln::ClipOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ClipOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Type kilnElement = elementTypeOf(op.getInput());
    bool isFloat = isa<FloatType>(kilnElement);
    bool isUnsigned = isUnsignedInt(kilnElement);
    auto scalarOf = [&](Value bound) -> FailureOr<Value> {
      if (isa<NoneType>(bound.getType()))
        return Value();
      auto type = cast<RankedTensorType>(bound.getType());
      if (type.getNumElements() != 1)
        return failure();
      return extractFirst(rewriter, loc, bound);
    };
    FailureOr<Value> lo = scalarOf(adaptor.getMin());
    FailureOr<Value> hi = scalarOf(adaptor.getMax());
    if (failed(lo) || failed(hi))
      return unsupported(op, "a bound with more than one element");
    Value result = buildElementwise(
        rewriter, loc, adaptor.getInput(), resultType,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value x = args[0];
          if (isFloat) {
            if (*lo)
              x = arith::MaximumFOp::create(b, l, x, *lo);
            if (*hi)
              x = arith::MinimumFOp::create(b, l, x, *hi);
          } else if (isUnsigned) {
            if (*lo)
              x = arith::MaxUIOp::create(b, l, x, *lo);
            if (*hi)
              x = arith::MinUIOp::create(b, l, x, *hi);
          } else {
            if (*lo)
              x = arith::MaxSIOp::create(b, l, x, *lo);
            if (*hi)
              x = arith::MinSIOp::create(b, l, x, *hi);
          }
          return x;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Where: select(condition, X, Y), all three broadcast.
struct WhereLowering : OpConversionPattern<kiln::WhereOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::WhereOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Value result = buildElementwise(
        rewriter, op.getLoc(), adaptor.getOperands(), resultType,
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The value of a one-element constant tensor (kiln.constant, or
/// arith.constant once converted), if `value` is one.
std::optional<double> oneElementConstant(Value value) {
  DenseElementsAttr attr = constantElements(value);
  if (!attr || attr.getNumElements() != 1)
    return std::nullopt;
  Type element = attr.getElementType();
  if (isa<FloatType>(element))
    return (*attr.getValues<APFloat>().begin()).convertToDouble();
  if (element.isInteger(1))
    return std::nullopt;
  if (isa<IntegerType>(element))
    return static_cast<double>((*attr.getValues<APInt>().begin()).getSExtValue());
  return std::nullopt;
}

/// Pow. A one-element exponent of 2 or 3 is x * x (* x), as ONNX Runtime
/// special-cases them (also the common Pow(x, 2) of decomposed norms).
/// Otherwise, as ONNX Runtime: a float base with an exponent of its own type is
/// powf in that type (f32 for f16/bf16); a float base with another exponent
/// type goes through double, as does an integer base (std::pow on doubles,
/// then converted back, truncating toward zero).
struct PowLowering : OpConversionPattern<kiln::PowOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::PowOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Type baseType = elementTypeOf(op.getX());
    Type expType = elementTypeOf(op.getY());
    std::optional<double> exponent = oneElementConstant(adaptor.getY());
    if (exponent && (*exponent == 2.0 || *exponent == 3.0)) {
      bool isFloat = isa<FloatType>(baseType);
      Value result = buildElementwise(
          rewriter, op.getLoc(), adaptor.getX(), resultType,
          [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
            Value x = widen(b, loc, args[0]);
            auto mul = [&](Value l, Value r) -> Value {
              if (isFloat)
                return arith::MulFOp::create(b, loc, l, r);
              return arith::MulIOp::create(b, loc, l, r);
            };
            Value r = mul(x, x);
            if (*exponent == 3.0)
              r = mul(r, x);
            return narrowTo(b, loc, r, baseType);
          });
      rewriter.replaceOp(op, result);
      return success();
    }
    Value result = buildElementwise(
        rewriter, op.getLoc(), adaptor.getOperands(), resultType,
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          if (isa<FloatType>(baseType) && baseType == expType) {
            Value r = math::PowFOp::create(b, loc, widen(b, loc, args[0]),
                                           widen(b, loc, args[1]));
            return narrowTo(b, loc, r, baseType);
          }
          Type f64 = b.getF64Type();
          Value base = castScalar(b, loc, args[0], baseType, f64);
          Value exponent = castScalar(b, loc, args[1], expType, f64);
          Value r = math::PowFOp::create(b, loc, base, exponent);
          return castScalar(b, loc, r, f64, baseType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// SwiGLU: silu(gate) * up.
struct SwiGLULowering : OpConversionPattern<kiln::SwiGLUOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::SwiGLUOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Type element = resultType.getElementType();
    Value result = buildElementwise(
        rewriter, op.getLoc(), adaptor.getOperands(), resultType,
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value gate = widen(b, loc, args[0]);
          FloatMath m(b, loc, gate);
          Value r = m.mul(m.mul(gate, m.sigmoid(gate)), widen(b, loc, args[1]));
          return narrowTo(b, loc, r, element);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The table's scalar functions
//===----------------------------------------------------------------------===//

double f32Attr(Operation *op, StringRef name) {
  return cast<FloatAttr>(op->getAttr(name)).getValueAsDouble();
}

Value intConstant(OpBuilder &b, Location loc, Value like, int64_t v) {
  return arith::ConstantOp::create(b, loc,
                                   b.getIntegerAttr(like.getType(), v));
}

Value geluBody(OpBuilder &b, Location loc, Value x, Operation *op) {
  FloatMath m(b, loc, x);
  Value inner;
  if (cast<kiln::GeluOp>(op).getApproximate() == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    Value cube = m.mul(m.mul(x, x), x);
    Value arg = m.mul(m.c(std::sqrt(2.0 / M_PI)),
                      m.add(x, m.mul(m.c(0.044715), cube)));
    inner = m.tanh(arg);
  } else {
    // 0.5 x (1 + erf(x / sqrt 2))
    inner = math::ErfOp::create(b, loc, m.mul(x, m.c(M_SQRT1_2)));
  }
  return m.mul(m.mul(m.c(0.5), x), m.add(m.c(1), inner));
}

Value shrinkFloat(OpBuilder &b, Location loc, Value x, Operation *op) {
  FloatMath m(b, loc, x);
  Value lambd = m.c(f32Attr(op, "lambd"));
  Value bias = m.c(f32Attr(op, "bias"));
  Value below = m.cmp(arith::CmpFPredicate::OLT, x, m.neg(lambd));
  Value above = m.cmp(arith::CmpFPredicate::OGT, x, lambd);
  return m.select(below, m.add(x, bias),
                  m.select(above, m.sub(x, bias), m.c(0)));
}

/// Integer Shrink as ONNX Runtime: compared and shifted in floating point
/// (double here), converted back toward zero.
Value shrinkInt(OpBuilder &b, Location loc, Value x, Operation *op,
                bool isUnsigned) {
  Type f64 = b.getF64Type();
  Type intType = x.getType();
  Type kilnType =
      isUnsigned ? IntegerType::get(b.getContext(),
                                    intType.getIntOrFloatBitWidth(),
                                    IntegerType::Unsigned)
                 : intType;
  Value r = shrinkFloat(b, loc, castScalar(b, loc, x, kilnType, f64), op);
  return castScalar(b, loc, r, f64, kilnType);
}

Value signFloat(OpBuilder &b, Location loc, Value x, Operation *) {
  FloatMath m(b, loc, x);
  Value positive = m.cmp(arith::CmpFPredicate::OGT, x, m.c(0));
  Value negative = m.cmp(arith::CmpFPredicate::OLT, x, m.c(0));
  // NaN stays NaN; zeros keep their sign, as std::copysign-free ORT code.
  Value isNaN = m.cmp(arith::CmpFPredicate::UNO, x, x);
  Value r = m.select(positive, m.c(1), m.select(negative, m.c(-1), m.c(0)));
  return m.select(isNaN, x, r);
}

Value signInt(OpBuilder &b, Location loc, Value x, Operation *,
              bool isUnsigned) {
  Value zero = intConstant(b, loc, x, 0);
  Value one = intConstant(b, loc, x, 1);
  Value nonZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
  Value r = arith::SelectOp::create(b, loc, nonZero, one, zero);
  if (isUnsigned)
    return r;
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
  return arith::SelectOp::create(b, loc, negative, intConstant(b, loc, x, -1),
                                 r);
}

Value isInfBody(OpBuilder &b, Location loc, Value x, Operation *op) {
  auto isInf = cast<kiln::IsInfOp>(op);
  FloatMath m(b, loc, x);
  Value result = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  if (isInf.getDetectPositive() == 1)
    result = arith::OrIOp::create(
        b, loc, result,
        m.cmp(arith::CmpFPredicate::OEQ, x, m.c(INFINITY)));
  if (isInf.getDetectNegative() == 1)
    result = arith::OrIOp::create(
        b, loc, result,
        m.cmp(arith::CmpFPredicate::OEQ, x, m.c(-INFINITY)));
  return result;
}

/// Integer Div: truncates toward zero (signed) as C and ONNX Runtime.
Value divInt(OpBuilder &b, Location loc, Value x, Value y, Operation *,
             bool isUnsigned) {
  if (isUnsigned)
    return arith::DivUIOp::create(b, loc, x, y);
  return arith::DivSIOp::create(b, loc, x, y);
}

Value modFloat(OpBuilder &b, Location loc, Value x, Value y, Operation *) {
  // fmod = 1 (the verifier rejects fmod = 0 on floats): C's fmod.
  return arith::RemFOp::create(b, loc, x, y);
}

Value modInt(OpBuilder &b, Location loc, Value x, Value y, Operation *op,
             bool isUnsigned) {
  if (isUnsigned)
    return arith::RemUIOp::create(b, loc, x, y);
  Value rem = arith::RemSIOp::create(b, loc, x, y);
  if (cast<kiln::ModOp>(op).getFmod() == 1)
    return rem;
  // fmod = 0: Python's %, the sign of the divisor: a nonzero remainder whose
  // sign differs from the divisor's gets the divisor added.
  Value zero = intConstant(b, loc, x, 0);
  Value remNeg =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rem, zero);
  Value divNeg =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, y, zero);
  Value remNonZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, rem, zero);
  Value signsDiffer = arith::XOrIOp::create(b, loc, remNeg, divNeg);
  Value fix = arith::AndIOp::create(b, loc, remNonZero, signsDiffer);
  Value adjusted = arith::AddIOp::create(b, loc, rem, y);
  return arith::SelectOp::create(b, loc, fix, adjusted, rem);
}

Value bitShiftBody(OpBuilder &b, Location loc, Value x, Value y, Operation *op,
                   bool) {
  // A shift by the width or more is 0 (LLVM would give poison).
  unsigned width = x.getType().getIntOrFloatBitWidth();
  Value tooFar = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, y,
                                       intConstant(b, loc, y, width));
  Value shifted =
      cast<kiln::BitShiftOp>(op).getDirection() == "LEFT"
          ? Value(arith::ShLIOp::create(b, loc, x, y))
          : Value(arith::ShRUIOp::create(b, loc, x, y));
  return arith::SelectOp::create(b, loc, tooFar, intConstant(b, loc, x, 0),
                                 shifted);
}

Value preluFloat(OpBuilder &b, Location loc, Value x, Value slope,
                 Operation *) {
  FloatMath m(b, loc, x);
  return m.select(m.cmp(arith::CmpFPredicate::OLT, x, m.c(0)), m.mul(x, slope),
                  x);
}

Value preluInt(OpBuilder &b, Location loc, Value x, Value slope, Operation *,
               bool isUnsigned) {
  if (isUnsigned)
    return x;
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x,
                                         intConstant(b, loc, x, 0));
  return arith::SelectOp::create(b, loc, negative,
                                 arith::MulIOp::create(b, loc, x, slope), x);
}

/// Comparisons: float ones are ordered (false with NaN, except != which
/// ONNX has no op for); integer ones signed or unsigned.
template <arith::CmpFPredicate FP, arith::CmpIPredicate SP,
          arith::CmpIPredicate UP>
Value compareFloat(OpBuilder &b, Location loc, Value x, Value y, Operation *) {
  return arith::CmpFOp::create(b, loc, FP, x, y);
}
template <arith::CmpFPredicate FP, arith::CmpIPredicate SP,
          arith::CmpIPredicate UP>
Value compareInt(OpBuilder &b, Location loc, Value x, Value y, Operation *,
                 bool isUnsigned) {
  return arith::CmpIOp::create(b, loc, isUnsigned ? UP : SP, x, y);
}

/// A float binary function that is one arith op.
template <typename ArithOp>
Value floatBinary(OpBuilder &b, Location loc, Value x, Value y, Operation *) {
  return ArithOp::create(b, loc, x, y);
}
/// An integer binary function that is one arith op, signed or not.
template <typename SignedOp, typename UnsignedOp = SignedOp>
Value intBinary(OpBuilder &b, Location loc, Value x, Value y, Operation *,
                bool isUnsigned) {
  if (isUnsigned)
    return UnsignedOp::create(b, loc, x, y);
  return SignedOp::create(b, loc, x, y);
}
/// A float unary function that is one math op.
template <typename MathOp>
Value floatUnary(OpBuilder &b, Location loc, Value x, Operation *) {
  return MathOp::create(b, loc, x);
}

template <typename OpTy>
void addUnary(RewritePatternSet &patterns, const TypeConverter &converter,
              FloatUnaryFn floatFn, IntUnaryFn intFn = nullptr) {
  patterns.add<UnaryLowering<OpTy>>(converter, patterns.getContext(), floatFn,
                                    intFn);
}

template <typename OpTy>
void addBinary(RewritePatternSet &patterns, const TypeConverter &converter,
               FloatBinaryFn floatFn, IntBinaryFn intFn) {
  patterns.add<BinaryLowering<OpTy>>(converter, patterns.getContext(), floatFn,
                                     intFn);
}

template <typename OpTy, arith::CmpFPredicate FP, arith::CmpIPredicate SP,
          arith::CmpIPredicate UP>
void addCompare(RewritePatternSet &patterns, const TypeConverter &converter) {
  addBinary<OpTy>(patterns, converter, compareFloat<FP, SP, UP>,
                  compareInt<FP, SP, UP>);
}

} // namespace

void kiln::populateElementwiseToLinalgPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  using F = FloatMath;

  // Unary math functions, float only.
#define KILN_MATH_UNARY(KilnOp, MathOp)                                        \
  addUnary<kiln::KilnOp>(patterns, converter, floatUnary<math::MathOp>)
  KILN_MATH_UNARY(ExpOp, ExpOp);
  KILN_MATH_UNARY(LogOp, LogOp);
  KILN_MATH_UNARY(SqrtOp, SqrtOp);
  KILN_MATH_UNARY(TanhOp, TanhOp);
  KILN_MATH_UNARY(ErfOp, ErfOp);
  KILN_MATH_UNARY(SinOp, SinOp);
  KILN_MATH_UNARY(CosOp, CosOp);
  KILN_MATH_UNARY(TanOp, TanOp);
  KILN_MATH_UNARY(AsinOp, AsinOp);
  KILN_MATH_UNARY(AcosOp, AcosOp);
  KILN_MATH_UNARY(AtanOp, AtanOp);
  KILN_MATH_UNARY(SinhOp, SinhOp);
  KILN_MATH_UNARY(CoshOp, CoshOp);
  KILN_MATH_UNARY(AsinhOp, AsinhOp);
  KILN_MATH_UNARY(AcoshOp, AcoshOp);
  KILN_MATH_UNARY(AtanhOp, AtanhOp);
  KILN_MATH_UNARY(FloorOp, FloorOp);
  KILN_MATH_UNARY(CeilOp, CeilOp);
  // Halves to even, as ONNX Round.
  KILN_MATH_UNARY(RoundOp, RoundEvenOp);
#undef KILN_MATH_UNARY

  // Float-only activations and friends.
  addUnary<kiln::ReciprocalOp>(
      patterns, converter, +[](OpBuilder &b, Location l, Value x, Operation *) {
        F m(b, l, x);
        return m.div(m.c(1), x);
      });
  addUnary<kiln::SigmoidOp>(
      patterns, converter, +[](OpBuilder &b, Location l, Value x, Operation *) {
        return F(b, l, x).sigmoid(x);
      });
  addUnary<kiln::SiLUOp>(
      patterns, converter, +[](OpBuilder &b, Location l, Value x, Operation *) {
        F m(b, l, x);
        return m.mul(x, m.sigmoid(x));
      });
  addUnary<kiln::HardSigmoidOp>(
      patterns, converter,
      +[](OpBuilder &b, Location l, Value x, Operation *op) {
        F m(b, l, x);
        Value y = m.add(m.mul(m.c(f32Attr(op, "alpha")), x),
                        m.c(f32Attr(op, "beta")));
        return m.max(m.c(0), m.min(m.c(1), y));
      });
  addUnary<kiln::HardSwishOp>(
      patterns, converter, +[](OpBuilder &b, Location l, Value x, Operation *) {
        F m(b, l, x);
        Value y = m.add(m.mul(m.c(1.0 / 6.0), x), m.c(0.5));
        return m.mul(x, m.max(m.c(0), m.min(m.c(1), y)));
      });
  addUnary<kiln::SoftplusOp>(
      patterns, converter, +[](OpBuilder &b, Location l, Value x, Operation *) {
        return F(b, l, x).softplus(x);
      });
  addUnary<kiln::SoftsignOp>(
      patterns, converter, +[](OpBuilder &b, Location l, Value x, Operation *) {
        F m(b, l, x);
        return m.div(x, m.add(m.c(1), m.abs(x)));
      });
  addUnary<kiln::MishOp>(
      patterns, converter, +[](OpBuilder &b, Location l, Value x, Operation *) {
        F m(b, l, x);
        return m.mul(x, m.tanh(m.softplus(x)));
      });
  addUnary<kiln::LeakyReluOp>(
      patterns, converter,
      +[](OpBuilder &b, Location l, Value x, Operation *op) {
        F m(b, l, x);
        return m.select(m.cmp(arith::CmpFPredicate::OLT, x, m.c(0)),
                        m.mul(m.c(f32Attr(op, "alpha")), x), x);
      });
  addUnary<kiln::EluOp>(
      patterns, converter,
      +[](OpBuilder &b, Location l, Value x, Operation *op) {
        F m(b, l, x);
        Value negative =
            m.mul(m.c(f32Attr(op, "alpha")), m.sub(m.exp(x), m.c(1)));
        return m.select(m.cmp(arith::CmpFPredicate::OLT, x, m.c(0)), negative,
                        x);
      });
  addUnary<kiln::SeluOp>(
      patterns, converter,
      +[](OpBuilder &b, Location l, Value x, Operation *op) {
        F m(b, l, x);
        Value alpha = m.c(f32Attr(op, "alpha"));
        Value gamma = m.c(f32Attr(op, "gamma"));
        Value negative = m.sub(m.mul(alpha, m.exp(x)), alpha);
        Value y = m.select(m.cmp(arith::CmpFPredicate::OLE, x, m.c(0)),
                           negative, x);
        return m.mul(gamma, y);
      });
  addUnary<kiln::CeluOp>(
      patterns, converter,
      +[](OpBuilder &b, Location l, Value x, Operation *op) {
        F m(b, l, x);
        Value alpha = m.c(f32Attr(op, "alpha"));
        Value negative = m.mul(alpha, m.sub(m.exp(m.div(x, alpha)), m.c(1)));
        return m.add(m.max(m.c(0), x), m.min(m.c(0), negative));
      });
  addUnary<kiln::ThresholdedReluOp>(
      patterns, converter,
      +[](OpBuilder &b, Location l, Value x, Operation *op) {
        F m(b, l, x);
        return m.select(
            m.cmp(arith::CmpFPredicate::OGT, x, m.c(f32Attr(op, "alpha"))), x,
            m.c(0));
      });
  addUnary<kiln::GeluOp>(patterns, converter, geluBody);
  addUnary<kiln::IsNaNOp>(
      patterns, converter, +[](OpBuilder &b, Location l, Value x, Operation *) {
        return F(b, l, x).cmp(arith::CmpFPredicate::UNO, x, x);
      });
  addUnary<kiln::IsInfOp>(patterns, converter, isInfBody);

  // Unary ops on floats and integers.
  addUnary<kiln::AbsOp>(
      patterns, converter,
      +[](OpBuilder &b, Location l, Value x, Operation *) {
        return F(b, l, x).abs(x);
      },
      +[](OpBuilder &b, Location l, Value x, Operation *, bool isUnsigned) {
        return isUnsigned ? x : Value(math::AbsIOp::create(b, l, x));
      });
  addUnary<kiln::NegOp>(
      patterns, converter,
      +[](OpBuilder &b, Location l, Value x, Operation *) {
        return F(b, l, x).neg(x);
      },
      +[](OpBuilder &b, Location l, Value x, Operation *, bool) -> Value {
        return arith::SubIOp::create(b, l, intConstant(b, l, x, 0), x);
      });
  addUnary<kiln::ReluOp>(
      patterns, converter,
      +[](OpBuilder &b, Location l, Value x, Operation *) {
        // max(x, +0): NaN stays, -0 gives +0 as ONNX Runtime.
        F m(b, l, x);
        return m.max(x, m.c(0));
      },
      +[](OpBuilder &b, Location l, Value x, Operation *, bool) -> Value {
        return arith::MaxSIOp::create(b, l, x, intConstant(b, l, x, 0));
      });
  addUnary<kiln::SignOp>(patterns, converter, signFloat, signInt);
  addUnary<kiln::ShrinkOp>(patterns, converter, shrinkFloat, shrinkInt);
  addUnary<kiln::NotOp>(
      patterns, converter, nullptr,
      +[](OpBuilder &b, Location l, Value x, Operation *, bool) -> Value {
        return arith::XOrIOp::create(b, l, x, intConstant(b, l, x, 1));
      });
  addUnary<kiln::BitwiseNotOp>(
      patterns, converter, nullptr,
      +[](OpBuilder &b, Location l, Value x, Operation *, bool) -> Value {
        return arith::XOrIOp::create(b, l, x, intConstant(b, l, x, -1));
      });

  // Binary ops.
  addBinary<kiln::AddOp>(patterns, converter, floatBinary<arith::AddFOp>,
                         intBinary<arith::AddIOp>);
  addBinary<kiln::SubOp>(patterns, converter, floatBinary<arith::SubFOp>,
                         intBinary<arith::SubIOp>);
  addBinary<kiln::MulOp>(patterns, converter, floatBinary<arith::MulFOp>,
                         intBinary<arith::MulIOp>);
  addBinary<kiln::DivOp>(patterns, converter, floatBinary<arith::DivFOp>,
                         divInt);
  addBinary<kiln::ModOp>(patterns, converter, modFloat, modInt);
  addBinary<kiln::PReluOp>(patterns, converter, preluFloat, preluInt);
  addBinary<kiln::AndOp>(patterns, converter, nullptr,
                         intBinary<arith::AndIOp>);
  addBinary<kiln::OrOp>(patterns, converter, nullptr, intBinary<arith::OrIOp>);
  addBinary<kiln::XorOp>(patterns, converter, nullptr,
                         intBinary<arith::XOrIOp>);
  addBinary<kiln::BitwiseAndOp>(patterns, converter, nullptr,
                                intBinary<arith::AndIOp>);
  addBinary<kiln::BitwiseOrOp>(patterns, converter, nullptr,
                               intBinary<arith::OrIOp>);
  addBinary<kiln::BitwiseXorOp>(patterns, converter, nullptr,
                                intBinary<arith::XOrIOp>);
  addBinary<kiln::BitShiftOp>(patterns, converter, nullptr, bitShiftBody);

  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  addCompare<kiln::EqualOp, FP::OEQ, IP::eq, IP::eq>(patterns, converter);
  addCompare<kiln::LessOp, FP::OLT, IP::slt, IP::ult>(patterns, converter);
  addCompare<kiln::LessOrEqualOp, FP::OLE, IP::sle, IP::ule>(patterns,
                                                            converter);
  addCompare<kiln::GreaterOp, FP::OGT, IP::sgt, IP::ugt>(patterns, converter);
  addCompare<kiln::GreaterOrEqualOp, FP::OGE, IP::sge, IP::uge>(patterns,
                                                               converter);

  // Variadic ops. Max/Min propagate NaN (maximumf/minimumf).
  patterns.add<VariadicLowering<kiln::MaxOp>>(
      converter, context, floatBinary<arith::MaximumFOp>,
      intBinary<arith::MaxSIOp, arith::MaxUIOp>, /*mean=*/false);
  patterns.add<VariadicLowering<kiln::MinOp>>(
      converter, context, floatBinary<arith::MinimumFOp>,
      intBinary<arith::MinSIOp, arith::MinUIOp>, /*mean=*/false);
  patterns.add<VariadicLowering<kiln::SumOp>>(
      converter, context, floatBinary<arith::AddFOp>, nullptr,
      /*mean=*/false);
  patterns.add<VariadicLowering<kiln::MeanOp>>(
      converter, context, floatBinary<arith::AddFOp>, nullptr, /*mean=*/true);

  patterns.add<IdentityLowering, ClipLowering, WhereLowering, PowLowering,
               SwiGLULowering, CastLowering<kiln::CastOp>,
               CastLowering<kiln::CastLikeOp>>(converter, context);
}
