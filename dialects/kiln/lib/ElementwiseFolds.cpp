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

/// Folds a comparison of two splats to an i1 splat; `pred` sees the
/// ordering as APFloat::cmpResult (integers are never unordered).
static OpFoldResult foldSplatCompare(Operation *op, ArrayRef<Attribute> operands,
                                     llvm::function_ref<bool(APFloat::cmpResult)> pred) {
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
  return makeSplat(op, BoolAttr::get(op->getContext(), pred(order)));
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

#define KILN_MATH_FN(expr) [](const APFloat &x) -> std::optional<APFloat> {    \
    return applyMath(x, [](auto v) { return expr; });                          \
  }

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

OpFoldResult ExpOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(*this, adaptor.getOperands(), KILN_MATH_FN(std::exp(v)));
}
OpFoldResult LogOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(*this, adaptor.getOperands(), KILN_MATH_FN(std::log(v)));
}
OpFoldResult SqrtOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(*this, adaptor.getOperands(), KILN_MATH_FN(std::sqrt(v)));
}
OpFoldResult TanhOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(*this, adaptor.getOperands(), KILN_MATH_FN(std::tanh(v)));
}
OpFoldResult ErfOp::fold(FoldAdaptor adaptor) {
  // Erf on integer tensors (which ONNX allows) is left to the runtime.
  return foldSplatUnary(*this, adaptor.getOperands(), KILN_MATH_FN(std::erf(v)));
}
OpFoldResult SinOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(*this, adaptor.getOperands(), KILN_MATH_FN(std::sin(v)));
}
OpFoldResult CosOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(*this, adaptor.getOperands(), KILN_MATH_FN(std::cos(v)));
}
OpFoldResult SigmoidOp::fold(FoldAdaptor adaptor) {
  return foldSplatUnary(*this, adaptor.getOperands(),
                        KILN_MATH_FN(1 / (1 + std::exp(-v))));
}

//===----------------------------------------------------------------------===//
// Binary and variadic ops
//===----------------------------------------------------------------------===//

static constexpr auto kRound = APFloat::rmNearestTiesToEven;

static std::optional<APFloat> floatAdd(const APFloat &a, const APFloat &b) {
  APFloat r = a;
  r.add(b, kRound);
  return r;
}
static std::optional<APInt> intAdd(const APInt &a, const APInt &b, bool) {
  return a + b;
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(*this, adaptor.getOperands(), floatAdd, intAdd);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        APFloat r = a;
        r.subtract(b, kRound);
        return r;
      },
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a - b;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        APFloat r = a;
        r.multiply(b, kRound);
        return r;
      },
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a * b;
      });
}

static std::optional<APFloat> floatDiv(const APFloat &a, const APFloat &b) {
  APFloat r = a;
  r.divide(b, kRound);
  return r;
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

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return maximum(a, b);
      },
      [](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
        return isUnsigned ? llvm::APIntOps::umax(a, b) : llvm::APIntOps::smax(a, b);
      });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return minimum(a, b);
      },
      [](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
        return isUnsigned ? llvm::APIntOps::umin(a, b) : llvm::APIntOps::smin(a, b);
      });
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

OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  return foldSplatCompare(*this, adaptor.getOperands(),
                          [](APFloat::cmpResult r) { return r == APFloat::cmpEqual; });
}
OpFoldResult LessOp::fold(FoldAdaptor adaptor) {
  return foldSplatCompare(*this, adaptor.getOperands(),
                          [](APFloat::cmpResult r) { return r == APFloat::cmpLessThan; });
}
OpFoldResult LessOrEqualOp::fold(FoldAdaptor adaptor) {
  return foldSplatCompare(*this, adaptor.getOperands(), [](APFloat::cmpResult r) {
    return r == APFloat::cmpLessThan || r == APFloat::cmpEqual;
  });
}
OpFoldResult GreaterOp::fold(FoldAdaptor adaptor) {
  return foldSplatCompare(*this, adaptor.getOperands(), [](APFloat::cmpResult r) {
    return r == APFloat::cmpGreaterThan;
  });
}
OpFoldResult GreaterOrEqualOp::fold(FoldAdaptor adaptor) {
  return foldSplatCompare(*this, adaptor.getOperands(), [](APFloat::cmpResult r) {
    return r == APFloat::cmpGreaterThan || r == APFloat::cmpEqual;
  });
}

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(*this, adaptor.getOperands(), {},
                       [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
                         return a & b;
                       });
}
OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(*this, adaptor.getOperands(), {},
                       [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
                         return a | b;
                       });
}
OpFoldResult XorOp::fold(FoldAdaptor adaptor) {
  return foldSplatNary(*this, adaptor.getOperands(), {},
                       [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
                         return a ^ b;
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
