//===- ElementwiseFolds.cpp - Local folds of the elementwise ops ----------===//
//
// Only local folds: identities (Identity, Cast to the same type, Neg(Neg x),
// ...), ops whose operands are all splat constants, and Cast of a small
// constant. Folding arbitrary constants is kiln-constant-fold's job.
//
// Numerics follow ONNX runtimes: arithmetic is done in the element type
// (APFloat in its semantics, so f16/bf16/f32 round exactly as the hardware
// does; libm functions in float, or double for f64), integers wrap around.
// Cases where ONNX leaves the result undefined (integer division by zero,
// out-of-range float to int casts) are not folded.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/APSInt.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

namespace {
using FloatUnaryFn = llvm::function_ref<std::optional<APFloat>(const APFloat &)>;
using IntUnaryFn =
    llvm::function_ref<std::optional<APInt>(const APInt &, bool isUnsigned)>;
using FloatBinaryFn =
    llvm::function_ref<std::optional<APFloat>(const APFloat &, const APFloat &)>;
using IntBinaryFn = llvm::function_ref<std::optional<APInt>(
    const APInt &, const APInt &, bool isUnsigned)>;
} // namespace

//===----------------------------------------------------------------------===//
// Splat folding machinery
//===----------------------------------------------------------------------===//

/// The operands' constants when all are splats and the result is static.
static std::optional<SmallVector<DenseElementsAttr>>
getSplatOperands(Operation *op, ArrayRef<Attribute> operands) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType.hasStaticShape() || operands.empty())
    return std::nullopt;
  SmallVector<DenseElementsAttr> splats;
  for (Attribute a : operands) {
    auto dense = dyn_cast_or_null<DenseElementsAttr>(a);
    if (!dense || !dense.isSplat())
      return std::nullopt;
    splats.push_back(dense);
  }
  return splats;
}

static bool isUnsignedElement(Type t) { return t.isUnsignedInteger(); }

/// A splat of the op's result type holding `value` (IntegerAttr/FloatAttr).
static OpFoldResult makeSplat(Operation *op, Attribute value) {
  if (!value)
    return {};
  return DenseElementsAttr::get(cast<ShapedType>(op->getResult(0).getType()),
                                value);
}

static Attribute toAttr(Type elementType, std::optional<APFloat> f) {
  return f ? FloatAttr::get(elementType, *f) : Attribute();
}
static Attribute toAttr(Type elementType, std::optional<APInt> i) {
  return i ? IntegerAttr::get(elementType, *i) : Attribute();
}

/// Folds a unary op on a splat; a null function means "floats/ints: no fold".
static OpFoldResult foldSplatUnary(Operation *op, ArrayRef<Attribute> operands,
                                   FloatUnaryFn onFloat, IntUnaryFn onInt = {}) {
  auto splats = getSplatOperands(op, operands);
  if (!splats)
    return {};
  DenseElementsAttr x = splats->front();
  Type elementType = x.getElementType();
  if (isa<FloatType>(elementType))
    return onFloat ? makeSplat(op, toAttr(elementType,
                                          onFloat(x.getSplatValue<APFloat>())))
                   : OpFoldResult();
  return onInt ? makeSplat(op, toAttr(elementType,
                                      onInt(x.getSplatValue<APInt>(),
                                            isUnsignedElement(elementType))))
               : OpFoldResult();
}

/// Folds a binary or variadic op on splats, left to right.
static OpFoldResult foldSplatNary(Operation *op, ArrayRef<Attribute> operands,
                                  FloatBinaryFn onFloat, IntBinaryFn onInt) {
  auto splats = getSplatOperands(op, operands);
  if (!splats)
    return {};
  Type elementType = splats->front().getElementType();
  if (isa<FloatType>(elementType)) {
    std::optional<APFloat> acc = splats->front().getSplatValue<APFloat>();
    for (DenseElementsAttr next : llvm::drop_begin(*splats))
      if (acc)
        acc = onFloat(*acc, next.getSplatValue<APFloat>());
    return makeSplat(op, toAttr(elementType, acc));
  }
  bool isUnsigned = isUnsignedElement(elementType);
  std::optional<APInt> acc = splats->front().getSplatValue<APInt>();
  for (DenseElementsAttr next : llvm::drop_begin(*splats))
    if (acc)
      acc = onInt(*acc, next.getSplatValue<APInt>(), isUnsigned);
  return makeSplat(op, toAttr(elementType, acc));
}

/// Folds a comparison of two splats to an i1 splat: true when their ordering
/// is one of `accepted` (integers are never unordered, NaNs always are).
static OpFoldResult foldSplatCompare(Operation *op, ArrayRef<Attribute> operands,
                                     std::initializer_list<APFloat::cmpResult> accepted) {
  auto splats = getSplatOperands(op, operands);
  if (!splats)
    return {};
  DenseElementsAttr a = (*splats)[0], b = (*splats)[1];
  Type elementType = a.getElementType();
  APFloat::cmpResult order;
  if (isa<FloatType>(elementType)) {
    order = a.getSplatValue<APFloat>().compare(b.getSplatValue<APFloat>());
  } else {
    APInt x = a.getSplatValue<APInt>(), y = b.getSplatValue<APInt>();
    bool isUnsigned = isUnsignedElement(elementType) || elementType.isInteger(1);
    bool less = isUnsigned ? x.ult(y) : x.slt(y);
    order = x == y ? APFloat::cmpEqual
                   : less ? APFloat::cmpLessThan : APFloat::cmpGreaterThan;
  }
  return makeSplat(op, BoolAttr::get(op->getContext(),
                                     llvm::is_contained(accepted, order)));
}

/// A libm function as ONNX runtimes apply it: in double for f64, in float
/// for the narrower types, rounded back to the element type.
template <typename Fn>
static APFloat applyMath(const APFloat &x, Fn fn) {
  if (&x.getSemantics() == &APFloat::IEEEdouble())
    return APFloat(fn(x.convertToDouble()));
  bool losesInfo;
  APFloat single = x;
  single.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &losesInfo);
  APFloat result(fn(single.convertToFloat()));
  result.convert(x.getSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
  return result;
}

/// The fold of a unary float op computing `expr` from `v` (a float, or a
/// double for f64) in type `T`, through applyMath. Attributes the expression
/// uses are read before it, as locals.
#define KILN_FOLD_MATH(expr)                                                   \
  foldSplatUnary(*this, adaptor.getOperands(),                                 \
                 [&](const APFloat &x) -> std::optional<APFloat> {             \
                   return applyMath(x, [&](auto v) {                           \
                     using T = decltype(v);                                    \
                     return static_cast<T>(expr);                              \
                   });                                                         \
                 })

/// Op(Op(x)) -> x for an involution.
template <typename OpTy>
static OpFoldResult foldInvolution(OpTy op) {
  if (auto inner = op.getX().template getDefiningOp<OpTy>())
    return inner.getX();
  return {};
}

static APFloat floatOf(const APFloat &like, double value) {
  bool losesInfo;
  APFloat f(value);
  f.convert(like.getSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
  return f;
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getX(); }

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(
      *this, adaptor.getOperands(), [](const APFloat &x) { return abs(x); },
      [](const APInt &x, bool isUnsigned) { return isUnsigned ? x : x.abs(); });
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult folded = foldInvolution(*this))
    return folded;
  return foldSplatUnary(
      *this, adaptor.getOperands(), [](const APFloat &x) { return neg(x); },
      [](const APInt &x, bool) -> std::optional<APInt> { return -x; });
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult folded = foldInvolution(*this))
    return folded;
  return foldSplatUnary(*this, adaptor.getOperands(), {},
                        [](const APInt &x, bool) -> std::optional<APInt> { return ~x; });
}

OpFoldResult ReciprocalOp::fold(FoldAdaptor adaptor) {
  // Reciprocal is defined on floats only, where 1/(1/x) is x up to rounding,
  // which ONNX graphs that write it expect.
  if (OpFoldResult folded = foldInvolution(*this))
    return folded;
  return foldSplatUnary(*this, adaptor.getOperands(),
                        [](const APFloat &x) -> std::optional<APFloat> {
                          APFloat one = floatOf(x, 1.0);
                          one.divide(x, APFloat::rmNearestTiesToEven);
                          return one;
                        });
}

OpFoldResult ReluOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(
      *this, adaptor.getOperands(),
      [](const APFloat &x) -> std::optional<APFloat> {
        return x.isNegative() && !x.isNaN() ? APFloat::getZero(x.getSemantics()) : x;
      },
      [](const APInt &x, bool) -> std::optional<APInt> {
        return x.isNegative() ? APInt::getZero(x.getBitWidth()) : x;
      });
}

OpFoldResult SignOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(
      *this, adaptor.getOperands(),
      [](const APFloat &x) -> std::optional<APFloat> {
        if (x.isNaN())
          return std::nullopt;
        return floatOf(x, x.isZero() ? 0.0 : x.isNegative() ? -1.0 : 1.0);
      },
      [](const APInt &x, bool isUnsigned) -> std::optional<APInt> {
        int64_t sign = x.isZero() ? 0 : (!isUnsigned && x.isNegative()) ? -1 : 1;
        return APInt(x.getBitWidth(), sign, /*isSigned=*/true);
      });
}

static OpFoldResult foldRounding(Operation *op, ArrayRef<Attribute> operands,
                                 APFloat::roundingMode mode) {
  return foldSplatUnary(op, operands,
                        [mode](const APFloat &x) -> std::optional<APFloat> {
                          APFloat r = x;
                          r.roundToIntegral(mode);
                          return r;
                        });
}

OpFoldResult FloorOp::fold(FoldAdaptor adaptor) {
  return foldRounding(*this, adaptor.getOperands(), APFloat::rmTowardNegative);
}
OpFoldResult CeilOp::fold(FoldAdaptor adaptor) {
  return foldRounding(*this, adaptor.getOperands(), APFloat::rmTowardPositive);
}
OpFoldResult RoundOp::fold(FoldAdaptor adaptor) {
  return foldRounding(*this, adaptor.getOperands(), APFloat::rmNearestTiesToEven);
}

/// Folders that apply one formula to a float splat.
#define KILN_MATH_FOLDER(OpTy, expr)                                           \
  OpFoldResult OpTy::fold(FoldAdaptor adaptor) { return KILN_FOLD_MATH(expr); }

// Erf on integer tensors (which ONNX allows) is left to the runtime.
KILN_MATH_FOLDER(ExpOp, std::exp(v))
KILN_MATH_FOLDER(LogOp, std::log(v))
KILN_MATH_FOLDER(SqrtOp, std::sqrt(v))
KILN_MATH_FOLDER(TanhOp, std::tanh(v))
KILN_MATH_FOLDER(ErfOp, std::erf(v))
KILN_MATH_FOLDER(SinOp, std::sin(v))
KILN_MATH_FOLDER(CosOp, std::cos(v))
KILN_MATH_FOLDER(SigmoidOp, T(1) / (T(1) + std::exp(-v)))
KILN_MATH_FOLDER(TanOp, std::tan(v))
KILN_MATH_FOLDER(AsinOp, std::asin(v))
KILN_MATH_FOLDER(AcosOp, std::acos(v))
KILN_MATH_FOLDER(AtanOp, std::atan(v))
KILN_MATH_FOLDER(SinhOp, std::sinh(v))
KILN_MATH_FOLDER(CoshOp, std::cosh(v))
KILN_MATH_FOLDER(AsinhOp, std::asinh(v))
KILN_MATH_FOLDER(AcoshOp, std::acosh(v))
KILN_MATH_FOLDER(AtanhOp, std::atanh(v))
// The activation functions, as ONNX defines them (not the rewritten forms
// some runtimes use for range: the results may differ there in the last bit).
KILN_MATH_FOLDER(SoftplusOp, std::log(std::exp(v) + T(1)))
KILN_MATH_FOLDER(SoftsignOp, v / (T(1) + std::abs(v)))
KILN_MATH_FOLDER(MishOp, v * std::tanh(std::log(std::exp(v) + T(1))))
// ONNX: x * max(0, min(1, alpha * x + beta)) with alpha = 1/6, beta = 1/2.
KILN_MATH_FOLDER(HardSwishOp,
                 v * std::max(T(0), std::min(T(1), T(1.0 / 6) * v + T(0.5))))
#undef KILN_MATH_FOLDER

OpFoldResult LeakyReluOp::fold(FoldAdaptor adaptor) {
  float alpha = getAlpha().convertToFloat();
  return KILN_FOLD_MATH(v < 0 ? alpha * v : v);
}
OpFoldResult HardSigmoidOp::fold(FoldAdaptor adaptor) {
  float alpha = getAlpha().convertToFloat(), beta = getBeta().convertToFloat();
  return KILN_FOLD_MATH(std::max(T(0), std::min(T(1), alpha * v + beta)));
}
OpFoldResult EluOp::fold(FoldAdaptor adaptor) {
  float alpha = getAlpha().convertToFloat();
  return KILN_FOLD_MATH(v < 0 ? alpha * (std::exp(v) - T(1)) : v);
}
OpFoldResult SeluOp::fold(FoldAdaptor adaptor) {
  float alpha = getAlpha().convertToFloat(), gamma = getGamma().convertToFloat();
  return KILN_FOLD_MATH(v <= 0 ? gamma * (alpha * std::exp(v) - alpha) : gamma * v);
}
OpFoldResult CeluOp::fold(FoldAdaptor adaptor) {
  float alpha = getAlpha().convertToFloat();
  return KILN_FOLD_MATH(std::max(T(0), v) +
                        std::min(T(0), alpha * (std::exp(v / alpha) - T(1))));
}
OpFoldResult ThresholdedReluOp::fold(FoldAdaptor adaptor) {
  float alpha = getAlpha().convertToFloat();
  return KILN_FOLD_MATH(v > alpha ? v : T(0));
}
OpFoldResult GeluOp::fold(FoldAdaptor adaptor) {
  if (getApproximate() == "tanh")
    return KILN_FOLD_MATH(T(0.5) * v *
                          (T(1) + std::tanh(std::sqrt(T(2) / T(M_PI)) *
                                            (v + T(0.044715) * v * v * v))));
  return KILN_FOLD_MATH(T(0.5) * v * (T(1) + std::erf(v / std::sqrt(T(2)))));
}
OpFoldResult ShrinkOp::fold(FoldAdaptor adaptor) {
  // Float inputs only; on integers the float attributes make the result
  // depend on how a runtime converts them.
  float bias = getBias().convertToFloat(), lambd = getLambd().convertToFloat();
  return KILN_FOLD_MATH(v < -lambd ? v + bias : v > lambd ? v - bias : T(0));
}

OpFoldResult BitwiseNotOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(*this, adaptor.getOperands(), {},
                        [](const APInt &x, bool) -> std::optional<APInt> { return ~x; });
}

//===----------------------------------------------------------------------===//
// Binary and variadic ops
//===----------------------------------------------------------------------===//

static constexpr auto kRound = APFloat::rmNearestTiesToEven;

/// a op b in the element type, for APFloat's add, subtract, multiply, divide.
template <APFloat::opStatus (APFloat::*Op)(const APFloat &, APFloat::roundingMode)>
static std::optional<APFloat> floatArith(const APFloat &a, const APFloat &b) {
  APFloat r = a;
  (r.*Op)(b, kRound);
  return r;
}
static constexpr auto floatAdd = floatArith<&APFloat::add>;
static constexpr auto floatDiv = floatArith<&APFloat::divide>;

/// a op b with wrap-around, for std::plus, std::minus, std::bit_and, ... .
template <typename Op>
static std::optional<APInt> intArith(const APInt &a, const APInt &b, bool) {
  return Op()(a, b);
}
static constexpr auto intAdd = intArith<std::plus<APInt>>;

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(*this, adaptor.getOperands(), floatAdd, intAdd);
}
OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(*this, adaptor.getOperands(),
                       floatArith<&APFloat::subtract>, intArith<std::minus<APInt>>);
}
OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(*this, adaptor.getOperands(),
                       floatArith<&APFloat::multiply>,
                       intArith<std::multiplies<APInt>>);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(
      *this, adaptor.getOperands(), floatDiv,
      [](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        if (isUnsigned)
          return a.udiv(b);
        bool overflow;
        APInt r = a.sdiv_ov(b, overflow);
        return overflow ? std::nullopt : std::optional<APInt>(r);
      });
}

OpFoldResult ModOp::fold(FoldAdaptor adaptor) {
  bool fmod = getFmod() == 1;
  return foldSplatNary(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        APFloat r = a; // Floats take fmod = 1: C's fmod.
        r.mod(b);
        return r;
      },
      [fmod](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        if (isUnsigned)
          return a.urem(b);
        APInt r = a.srem(b);
        // fmod = 0: the remainder takes the divisor's sign, as Python's %.
        if (!fmod && !r.isZero() && r.isNegative() != b.isNegative())
          r += b;
        return r;
      });
}

/// Max or Min of splats; floats propagate NaN, as numpy's maximum/minimum.
static OpFoldResult foldExtremum(Operation *op, ArrayRef<Attribute> operands,
                                 bool isMax) {
  return foldSplatNary(
      op, operands,
      [isMax](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return isMax ? maximum(a, b) : minimum(a, b);
      },
      [isMax](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
        bool aWins = isMax ? (isUnsigned ? a.uge(b) : a.sge(b))
                           : (isUnsigned ? a.ule(b) : a.sle(b));
        return aWins ? a : b;
      });
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  return foldExtremum(*this, adaptor.getOperands(), /*isMax=*/true);
}
OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldExtremum(*this, adaptor.getOperands(), /*isMax=*/false);
}

OpFoldResult SumOp::fold(FoldAdaptor adaptor) {
  if (getNumOperands() == 1 && getOperand(0).getType() == getType())
    return getOperand(0);
  return foldSplatNary(*this, adaptor.getOperands(), floatAdd, intAdd);
}

OpFoldResult MeanOp::fold(FoldAdaptor adaptor) {
  if (getNumOperands() == 1 && getOperand(0).getType() == getType())
    return getOperand(0);
  // The sum, then one division by the operand count, as ONNX Runtime does.
  auto sum = dyn_cast_or_null<DenseElementsAttr>(dyn_cast_or_null<Attribute>(
      foldSplatNary(*this, adaptor.getOperands(), floatAdd, intAdd)));
  if (!sum)
    return {};
  APFloat value = sum.getSplatValue<APFloat>();
  return makeSplat(*this, toAttr(sum.getElementType(),
                                 floatDiv(value, floatOf(value, getNumOperands()))));
}

using Order = APFloat::cmpResult;
OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  return foldSplatCompare(*this, adaptor.getOperands(), {Order::cmpEqual});
}
OpFoldResult LessOp::fold(FoldAdaptor adaptor) {
  return foldSplatCompare(*this, adaptor.getOperands(), {Order::cmpLessThan});
}
OpFoldResult LessOrEqualOp::fold(FoldAdaptor adaptor) {
  return foldSplatCompare(*this, adaptor.getOperands(),
                          {Order::cmpLessThan, Order::cmpEqual});
}
OpFoldResult GreaterOp::fold(FoldAdaptor adaptor) {
  return foldSplatCompare(*this, adaptor.getOperands(), {Order::cmpGreaterThan});
}
OpFoldResult GreaterOrEqualOp::fold(FoldAdaptor adaptor) {
  return foldSplatCompare(*this, adaptor.getOperands(),
                          {Order::cmpGreaterThan, Order::cmpEqual});
}

/// Logic and bitwise ops: one APInt operator on integer (or i1) splats.
#define KILN_INT_FOLDER(OpTy, Fn)                                              \
  OpFoldResult OpTy::fold(FoldAdaptor adaptor) {                               \
    return foldSplatNary(*this, adaptor.getOperands(), {}, intArith<Fn<APInt>>); \
  }
KILN_INT_FOLDER(AndOp, std::bit_and)
KILN_INT_FOLDER(OrOp, std::bit_or)
KILN_INT_FOLDER(XorOp, std::bit_xor)
KILN_INT_FOLDER(BitwiseAndOp, std::bit_and)
KILN_INT_FOLDER(BitwiseOrOp, std::bit_or)
KILN_INT_FOLDER(BitwiseXorOp, std::bit_xor)
#undef KILN_INT_FOLDER

OpFoldResult BitShiftOp::fold(FoldAdaptor adaptor) {
  bool left = getDirection() == "LEFT";
  return foldSplatNary(
      *this, adaptor.getOperands(), {},
      [left](const APInt &x, const APInt &y, bool) -> std::optional<APInt> {
        // Shifting by the bit width or more is undefined in C++ and ONNX.
        if (y.uge(x.getBitWidth()))
          return std::nullopt;
        return left ? x.shl(y) : x.lshr(y);
      });
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  // Float bases only: runtimes differ on integer powers.
  auto splats = getSplatOperands(*this, adaptor.getOperands());
  if (!splats || !isa<FloatType>((*splats)[0].getElementType()))
    return {};
  DenseElementsAttr exponent = (*splats)[1];
  double e;
  if (isa<FloatType>(exponent.getElementType()))
    e = exponent.getSplatValue<APFloat>().convertToDouble();
  else if (exponent.getElementType().isUnsignedInteger())
    e = static_cast<double>(exponent.getSplatValue<APInt>().getZExtValue());
  else
    e = static_cast<double>(exponent.getSplatValue<APInt>().getSExtValue());
  APFloat x = (*splats)[0].getSplatValue<APFloat>();
  return makeSplat(*this, FloatAttr::get((*splats)[0].getElementType(),
                                         applyMath(x, [e](auto v) {
                                           return std::pow(v, static_cast<decltype(v)>(e));
                                         })));
}

OpFoldResult PReluOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(
      *this, adaptor.getOperands(),
      [](const APFloat &x, const APFloat &slope) -> std::optional<APFloat> {
        return x.isNegative() && !x.isZero() ? *floatArith<&APFloat::multiply>(x, slope)
                                             : x;
      },
      [](const APInt &x, const APInt &slope, bool isUnsigned) -> std::optional<APInt> {
        return !isUnsigned && x.isNegative() ? x * slope : x;
      });
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  // A splat condition selects one operand; it is the result when it already
  // has the result type, or is itself a splat (then broadcast).
  auto condition = dyn_cast_or_null<DenseElementsAttr>(adaptor.getCondition());
  if (!condition || !condition.isSplat())
    return {};
  bool pick = condition.getSplatValue<bool>();
  Value chosen = pick ? getX() : getY();
  if (chosen.getType() == getType())
    return chosen;
  auto constant = dyn_cast_or_null<DenseElementsAttr>(pick ? adaptor.getX() : adaptor.getY());
  if (!constant || !constant.isSplat() || !getType().hasStaticShape())
    return {};
  return makeSplat(*this, constant.getSplatValue<Attribute>());
}

OpFoldResult ClipOp::fold(FoldAdaptor adaptor) {
  // No bounds: the identity. Otherwise a splat input with splat bounds.
  if (isNone(getMin()) && isNone(getMax()))
    return getInput();
  auto input = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput());
  if (!input || !input.isSplat() || !getType().hasStaticShape())
    return {};
  bool isUnsigned = isUnsignedElement(input.getElementType());
  auto less = [isUnsigned](Attribute a, Attribute b) {
    if (auto f = dyn_cast<FloatAttr>(a))
      return f.getValue() < cast<FloatAttr>(b).getValue();
    APInt x = cast<IntegerAttr>(a).getValue(), y = cast<IntegerAttr>(b).getValue();
    return isUnsigned ? x.ult(y) : x.slt(y);
  };
  // max(x, min) then min(.., max); a NaN input stays NaN.
  Attribute value = input.getSplatValue<Attribute>();
  for (auto [bound, boundAttr, isMin] :
       {std::tuple(getMin(), adaptor.getMin(), true),
        std::tuple(getMax(), adaptor.getMax(), false)}) {
    if (isNone(bound))
      continue;
    auto dense = dyn_cast_or_null<DenseElementsAttr>(boundAttr);
    if (!dense)
      return {};
    Attribute b = dense.getSplatValue<Attribute>();
    if (isMin ? less(value, b) : less(b, value))
      value = b;
  }
  return makeSplat(*this, value);
}

/// IsNaN and IsInf of a splat.
static OpFoldResult foldFloatClass(Operation *op, ArrayRef<Attribute> operands,
                                   llvm::function_ref<bool(const APFloat &)> pred) {
  auto splats = getSplatOperands(op, operands);
  if (!splats)
    return {};
  return makeSplat(op, BoolAttr::get(op->getContext(),
                                     pred(splats->front().getSplatValue<APFloat>())));
}

OpFoldResult IsNaNOp::fold(FoldAdaptor adaptor) {
  return foldFloatClass(*this, adaptor.getOperands(),
                        [](const APFloat &x) { return x.isNaN(); });
}

OpFoldResult IsInfOp::fold(FoldAdaptor adaptor) {
  bool negative = getDetectNegative() == 1, positive = getDetectPositive() == 1;
  return foldFloatClass(*this, adaptor.getOperands(), [&](const APFloat &x) {
    return x.isInfinity() && (x.isNegative() ? negative : positive);
  });
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// Casts larger than this are left to kiln-constant-fold (unless splats).
static constexpr int64_t kMaxCastFoldElements = 64;

/// One element of Cast, or null where ONNX leaves the result undefined
/// (NaN, infinities or out-of-range values cast to an integer).
static Attribute castElement(Attribute value, Type to) {
  if (auto f = dyn_cast<FloatAttr>(value)) {
    APFloat x = f.getValue();
    if (auto toFloat = dyn_cast<FloatType>(to)) {
      bool losesInfo;
      x.convert(toFloat.getFloatSemantics(), kRound, &losesInfo);
      return FloatAttr::get(to, x);
    }
    if (to.isInteger(1))
      return IntegerAttr::get(to, APInt(1, !x.isZero()));
    APSInt result(to.getIntOrFloatBitWidth(), to.isUnsignedInteger());
    bool isExact;
    if (x.convertToInteger(result, APFloat::rmTowardZero, &isExact) ==
        APFloat::opInvalidOp)
      return {};
    return IntegerAttr::get(to, result);
  }
  auto i = dyn_cast<IntegerAttr>(value);
  if (!i)
    return {};
  APInt x = i.getValue();
  bool isSigned = !i.getType().isUnsignedInteger() && !i.getType().isInteger(1);
  if (auto toFloat = dyn_cast<FloatType>(to)) {
    APFloat f(toFloat.getFloatSemantics());
    f.convertFromAPInt(x, isSigned, kRound);
    return FloatAttr::get(to, f);
  }
  if (to.isInteger(1))
    return IntegerAttr::get(to, APInt(1, !x.isZero()));
  unsigned width = to.getIntOrFloatBitWidth();
  return IntegerAttr::get(to, isSigned ? x.sextOrTrunc(width) : x.zextOrTrunc(width));
}

/// Cast and CastLike: to the same type is the input; a splat or small
/// constant input is cast element by element.
static OpFoldResult foldCast(Value input, Attribute constant, Type resultType) {
  if (input.getType() == resultType)
    return input;
  auto dense = dyn_cast_or_null<DenseElementsAttr>(constant);
  auto type = cast<RankedTensorType>(resultType);
  if (!dense || !type.hasStaticShape() ||
      (!dense.isSplat() && dense.getNumElements() > kMaxCastFoldElements))
    return {};
  SmallVector<Attribute> inputs;
  if (dense.isSplat())
    inputs.push_back(dense.getSplatValue<Attribute>());
  else
    llvm::append_range(inputs, dense.getValues<Attribute>());
  SmallVector<Attribute> values;
  for (Attribute value : inputs) {
    Attribute cast = castElement(value, type.getElementType());
    if (!cast)
      return {};
    values.push_back(cast);
  }
  if (dense.isSplat())
    return DenseElementsAttr::get(type, values.front());
  return DenseElementsAttr::get(type, values);
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  return foldCast(getInput(), adaptor.getInput(), getType());
}

OpFoldResult CastLikeOp::fold(FoldAdaptor adaptor) {
  return foldCast(getInput(), adaptor.getInput(), getType());
}
