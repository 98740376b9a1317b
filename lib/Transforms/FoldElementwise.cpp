//===- FoldElementwise.cpp - Evaluating elementwise ops on constants ------===//
//
// kiln-constant-fold's evaluator of the elementwise ops with numpy
// (multidirectional) broadcasting: unary math, arithmetic, comparisons,
// logic, Max/Min/Sum/Mean, Pow, Clip, Where, Cast and CastLike.
//
// Numerics are those of ONNX Runtime's CPU kernels, which compute in the
// element type: f32 (and f16/bf16, computed in float and rounded) arithmetic
// in float, not double, so +, -, *, / and sqrt are bit-exact; libm's float
// functions for exp, tanh, erf, ... (ONNX Runtime's vectorized versions may
// differ in the last bit); integers wrap around. Results ONNX leaves
// undefined are not folded: integer division or modulo by zero, signed
// overflow of a division, NaN or out-of-range floats cast to integers.
//
//===----------------------------------------------------------------------===//

#include "FoldUtils.h"

#include "kiln/Dialect/KilnOps.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln::fold {
namespace {

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

/// Calls `fn(resultIndex, operandIndices)` for every element of a result of
/// shape `result`, with the index of the element of each operand that numpy
/// broadcasting reads. Splat operands always read index 0.
void forEachBroadcast(ArrayRef<int64_t> result,
                      ArrayRef<const ConstTensor *> operands,
                      llvm::function_ref<void(int64_t, ArrayRef<int64_t>)> fn) {
  size_t rank = result.size(), n = operands.size();
  // strides[k][d]: the step of operand k's index when result dim d advances.
  SmallVector<SmallVector<int64_t>> strides(n, SmallVector<int64_t>(rank, 0));
  for (size_t k = 0; k < n; ++k) {
    if (operands[k]->isSplat())
      continue;
    ArrayRef<int64_t> shape = operands[k]->getType().getShape();
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      size_t rd = d + rank - shape.size();
      strides[k][rd] = shape[d] == 1 ? 0 : stride;
      stride *= shape[d];
    }
  }
  int64_t count = ShapedType::getNumElements(result);
  SmallVector<int64_t> coords(rank, 0), indices(n, 0);
  for (int64_t i = 0; i < count; ++i) {
    fn(i, indices);
    // Advance the row-major coordinates and every operand index with them.
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < n; ++k)
        indices[k] += strides[k][d];
      if (++coords[d] < result[d])
        break;
      for (size_t k = 0; k < n; ++k)
        indices[k] -= strides[k][d] * result[d];
      coords[d] = 0;
    }
  }
}

/// Element `index` of the result, computed by `fn(result, index, operandIndices)`,
/// which returns false when the element is undefined. A splat result when
/// every operand is a splat.
std::optional<ConstTensor>
mapElements(RankedTensorType resultType, ArrayRef<const ConstTensor *> operands,
            EvalContext &ctx,
            llvm::function_ref<bool(ConstTensor &, int64_t, ArrayRef<int64_t>)> fn) {
  if (llvm::all_of(operands, [](const ConstTensor *t) { return t->isSplat(); })) {
    ConstTensor result = ConstTensor::getSplat(resultType);
    SmallVector<int64_t> zeros(operands.size(), 0);
    if (resultType.getNumElements() != 0 && !fn(result, 0, zeros))
      return std::nullopt;
    return result;
  }
  std::optional<ConstTensor> result = ctx.allocate(resultType);
  if (!result)
    return std::nullopt;
  bool ok = true;
  forEachBroadcast(resultType.getShape(), operands,
                   [&](int64_t i, ArrayRef<int64_t> in) {
                     if (ok)
                       ok = fn(*result, i, in);
                   });
  if (!ok)
    return std::nullopt;
  return result;
}

//===----------------------------------------------------------------------===//
// Scalar arithmetic in the element type
//===----------------------------------------------------------------------===//

/// fn applied in the precision ONNX Runtime uses for `type`: double for f64,
/// float for the others (then rounded to f16/bf16).
template <typename Fn> double inPrecision(Type type, double a, Fn fn) {
  if (type.isF64())
    return fn(a);
  return roundToType(type, static_cast<double>(fn(static_cast<float>(a))));
}
template <typename Fn> double inPrecision(Type type, double a, double b, Fn fn) {
  if (type.isF64())
    return fn(a, b);
  return roundToType(type, static_cast<double>(fn(static_cast<float>(a),
                                                  static_cast<float>(b))));
}

/// numpy's maximum/minimum: NaN propagates, +0 is above -0.
double maximumOf(double a, double b, bool isMax) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return (std::signbit(a) == isMax) ? b : a;
  return (a > b) == isMax ? a : b;
}

/// Signed or unsigned order of two integers of `type`.
bool intLess(Type type, int64_t a, int64_t b) {
  if (type.isUnsignedInteger(64))
    return static_cast<uint64_t>(a) < static_cast<uint64_t>(b);
  return a < b;
}

enum class Arith { Add, Sub, Mul, Div, Mod, FMod, BitAnd, BitOr, BitXor };

/// An integer binary op; std::nullopt where ONNX leaves it undefined.
std::optional<int64_t> intBinary(Arith kind, Type type, int64_t a, int64_t b) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  bool isUnsigned = isZeroExtended(type);
  switch (kind) {
  case Arith::Add:
    return wrapToType(type, ua + ub);
  case Arith::Sub:
    return wrapToType(type, ua - ub);
  case Arith::Mul:
    return wrapToType(type, ua * ub);
  case Arith::BitAnd:
    return wrapToType(type, ua & ub);
  case Arith::BitOr:
    return wrapToType(type, ua | ub);
  case Arith::BitXor:
    return wrapToType(type, ua ^ ub);
  case Arith::Div:
  case Arith::Mod:
  case Arith::FMod: {
    if (b == 0)
      return std::nullopt;
    if (isUnsigned)
      return wrapToType(type, kind == Arith::Div ? ua / ub : ua % ub);
    if (a == std::numeric_limits<int64_t>::min() && b == -1)
      return std::nullopt;
    if (kind == Arith::Div) {
      // C++ division truncates toward zero, as ONNX Runtime's Div does. The
      // quotient of the narrow type's minimum by -1 does not fit: undefined.
      int64_t q = a / b;
      if (wrapToType(type, static_cast<uint64_t>(q)) != q)
        return std::nullopt;
      return q;
    }
    int64_t r = a % b;
    // Mod with fmod = 0 takes the divisor's sign, as Python's %.
    if (kind == Arith::Mod && r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  }
  return std::nullopt;
}

std::optional<double> floatBinary(Arith kind, Type type, double a, double b) {
  switch (kind) {
  case Arith::Add:
    return inPrecision(type, a, b, [](auto x, auto y) { return x + y; });
  case Arith::Sub:
    return inPrecision(type, a, b, [](auto x, auto y) { return x - y; });
  case Arith::Mul:
    return inPrecision(type, a, b, [](auto x, auto y) { return x * y; });
  case Arith::Div:
    return inPrecision(type, a, b, [](auto x, auto y) { return x / y; });
  case Arith::FMod:
    return inPrecision(type, a, b,
                       [](auto x, auto y) { return std::fmod(x, y); });
  default:
    return std::nullopt;
  }
}

//===----------------------------------------------------------------------===//
// Op evaluators
//===----------------------------------------------------------------------===//

using FloatFn = double (*)(Type, double);
using IntFn = std::optional<int64_t> (*)(Type, int64_t);

/// A unary op: `onFloat` on float elements, `onInt` on integer ones (null:
/// not folded for that kind).
std::optional<ConstTensor> evalUnary(RankedTensorType resultType,
                                     const ConstTensor &x, EvalContext &ctx,
                                     FloatFn onFloat, IntFn onInt) {
  Type type = x.getElementType();
  if (x.isFloat() ? !onFloat : !onInt)
    return std::nullopt;
  return mapElements(resultType, {&x}, ctx,
                     [&](ConstTensor &out, int64_t i, ArrayRef<int64_t> in) {
                       if (x.isFloat()) {
                         out.setFloat(i, onFloat(type, x.getFloat(in[0])));
                         return true;
                       }
                       std::optional<int64_t> v = onInt(type, x.getInt(in[0]));
                       if (v)
                         out.setInt(i, *v);
                       return v.has_value();
                     });
}

/// A unary float function computed in the element type's precision.
#define KILN_FLOAT_FN(expr)                                                    \
  +[](Type t, double a) {                                                      \
    return inPrecision(t, a, [](auto v) {                                      \
      using T = decltype(v);                                                   \
      return static_cast<T>(expr);                                             \
    });                                                                        \
  }

std::optional<ConstTensor> evalUnaryOp(Operation *op, const ConstTensor &x,
                                       RankedTensorType resultType,
                                       EvalContext &ctx) {
  IntFn noInt = nullptr;
  FloatFn noFloat = nullptr;
  auto unary = [&](FloatFn f, IntFn i) {
    return evalUnary(resultType, x, ctx, f, i);
  };
  return llvm::TypeSwitch<Operation *, std::optional<ConstTensor>>(op)
      .Case([&](NegOp) {
        return unary(KILN_FLOAT_FN(-v), +[](Type t, int64_t a) -> std::optional<int64_t> {
          return wrapToType(t, 0 - static_cast<uint64_t>(a));
        });
      })
      .Case([&](AbsOp) {
        return unary(KILN_FLOAT_FN(std::abs(v)),
                     +[](Type t, int64_t a) -> std::optional<int64_t> {
                       // ui64 values above INT64_MAX are held negative.
                       if (isZeroExtended(t) || a >= 0)
                         return a;
                       return wrapToType(t, 0 - static_cast<uint64_t>(a));
                     });
      })
      .Case([&](ReluOp) {
        // max(x, +0): -0 gives +0 as ONNX Runtime's maxps does; NaN stays.
        return unary(+[](Type, double a) {
                       return std::isnan(a) || a > 0 ? a : 0.0;
                     },
                     +[](Type, int64_t a) -> std::optional<int64_t> {
                       return a < 0 ? 0 : a;
                     });
      })
      .Case([&](SignOp) {
        return unary(+[](Type, double a) {
                       return std::isnan(a) ? a : a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0;
                     },
                     +[](Type t, int64_t a) -> std::optional<int64_t> {
                       if (isZeroExtended(t))
                         return a != 0;
                       return a > 0 ? 1 : a < 0 ? -1 : 0;
                     });
      })
      .Case([&](NotOp) {
        return unary(noFloat, +[](Type, int64_t a) -> std::optional<int64_t> {
          return a == 0;
        });
      })
      .Case([&](SqrtOp) { return unary(KILN_FLOAT_FN(std::sqrt(v)), noInt); })
      .Case([&](ExpOp) { return unary(KILN_FLOAT_FN(std::exp(v)), noInt); })
      .Case([&](LogOp) { return unary(KILN_FLOAT_FN(std::log(v)), noInt); })
      .Case([&](ReciprocalOp) { return unary(KILN_FLOAT_FN(T(1) / v), noInt); })
      .Case([&](SigmoidOp) {
        return unary(KILN_FLOAT_FN(T(1) / (T(1) + std::exp(-v))), noInt);
      })
      .Case([&](TanhOp) { return unary(KILN_FLOAT_FN(std::tanh(v)), noInt); })
      .Case([&](ErfOp) { return unary(KILN_FLOAT_FN(std::erf(v)), noInt); })
      .Case([&](SinOp) { return unary(KILN_FLOAT_FN(std::sin(v)), noInt); })
      .Case([&](CosOp) { return unary(KILN_FLOAT_FN(std::cos(v)), noInt); })
      .Case([&](FloorOp) { return unary(KILN_FLOAT_FN(std::floor(v)), noInt); })
      .Case([&](CeilOp) { return unary(KILN_FLOAT_FN(std::ceil(v)), noInt); })
      // nearbyint in the default rounding mode: halves to even, as ONNX Round.
      .Case([&](RoundOp) { return unary(KILN_FLOAT_FN(std::nearbyint(v)), noInt); })
      .Case([&](SoftplusOp) {
        return unary(KILN_FLOAT_FN(std::log(std::exp(v) + T(1))), noInt);
      })
      .Case([&](SoftsignOp) {
        return unary(KILN_FLOAT_FN(v / (T(1) + std::abs(v))), noInt);
      })
      .Default([](Operation *) { return std::nullopt; });
}
#undef KILN_FLOAT_FN

/// A broadcasting binary (or left-to-right variadic) arithmetic op.
std::optional<ConstTensor> evalArith(Arith kind, RankedTensorType resultType,
                                     ConstOperands xs, EvalContext &ctx) {
  Type type = xs[0]->getElementType();
  bool isFloat = xs[0]->isFloat();
  if (isFloat && (kind == Arith::Mod || kind >= Arith::BitAnd))
    return std::nullopt;
  return mapElements(
      resultType, xs, ctx, [&](ConstTensor &out, int64_t i, ArrayRef<int64_t> in) {
        if (isFloat) {
          double acc = xs[0]->getFloat(in[0]);
          for (size_t k = 1; k < xs.size(); ++k)
            acc = *floatBinary(kind, type, acc, xs[k]->getFloat(in[k]));
          out.setFloat(i, acc);
          return true;
        }
        int64_t acc = xs[0]->getInt(in[0]);
        for (size_t k = 1; k < xs.size(); ++k) {
          std::optional<int64_t> next = intBinary(kind, type, acc, xs[k]->getInt(in[k]));
          if (!next)
            return false;
          acc = *next;
        }
        out.setInt(i, acc);
        return true;
      });
}

enum class Compare { Eq, Lt, Le, Gt, Ge };

std::optional<ConstTensor> evalCompare(Compare kind, RankedTensorType resultType,
                                       const ConstTensor &a, const ConstTensor &b,
                                       EvalContext &ctx) {
  Type type = a.getElementType();
  return mapElements(
      resultType, {&a, &b}, ctx,
      [&](ConstTensor &out, int64_t i, ArrayRef<int64_t> in) {
        bool lt, eq, ordered = true;
        if (a.isFloat()) {
          double x = a.getFloat(in[0]), y = b.getFloat(in[1]);
          ordered = !std::isnan(x) && !std::isnan(y);
          lt = x < y;
          eq = x == y;
        } else {
          int64_t x = a.getInt(in[0]), y = b.getInt(in[1]);
          lt = intLess(type, x, y);
          eq = x == y;
        }
        bool r = false;
        if (ordered) {
          switch (kind) {
          case Compare::Eq: r = eq; break;
          case Compare::Lt: r = lt; break;
          case Compare::Le: r = lt || eq; break;
          case Compare::Gt: r = !lt && !eq; break;
          case Compare::Ge: r = !lt; break;
          }
        }
        out.setInt(i, r);
        return true;
      });
}

std::optional<ConstTensor> evalExtremum(bool isMax, RankedTensorType resultType,
                                        ConstOperands xs, EvalContext &ctx) {
  Type type = xs[0]->getElementType();
  return mapElements(
      resultType, xs, ctx, [&](ConstTensor &out, int64_t i, ArrayRef<int64_t> in) {
        if (xs[0]->isFloat()) {
          double acc = xs[0]->getFloat(in[0]);
          for (size_t k = 1; k < xs.size(); ++k)
            acc = maximumOf(acc, xs[k]->getFloat(in[k]), isMax);
          out.setFloat(i, acc);
          return true;
        }
        int64_t acc = xs[0]->getInt(in[0]);
        for (size_t k = 1; k < xs.size(); ++k) {
          int64_t v = xs[k]->getInt(in[k]);
          if (intLess(type, acc, v) == isMax && acc != v)
            acc = v;
        }
        out.setInt(i, acc);
        return true;
      });
}

std::optional<ConstTensor> evalPow(RankedTensorType resultType,
                                   const ConstTensor &x, const ConstTensor &y,
                                   EvalContext &ctx) {
  // Float bases only: ONNX Runtime computes integer powers through double
  // std::pow, whose rounding for large results Kiln does not reproduce.
  if (!x.isFloat())
    return std::nullopt;
  Type type = x.getElementType();
  // ONNX Runtime's special cases of a scalar exponent 2 or 3.
  std::optional<double> scalarExponent;
  if (y.getNumElements() == 1)
    scalarExponent = y.getAsDouble(0);
  bool sameType = y.getElementType() == type;
  return mapElements(
      resultType, {&x, &y}, ctx,
      [&](ConstTensor &out, int64_t i, ArrayRef<int64_t> in) {
        double a = x.getFloat(in[0]), e = y.getAsDouble(in[1]);
        double r;
        if (scalarExponent == 2.0)
          r = inPrecision(type, a, [](auto v) { return v * v; });
        else if (scalarExponent == 3.0)
          r = inPrecision(type, a, [](auto v) { return v * v * v; });
        else if (type.isF64())
          r = std::pow(a, e);
        else if (sameType)
          // std::pow(float, float): powf.
          r = roundToType(type, std::pow(static_cast<float>(a), static_cast<float>(e)));
        else
          // A float base with another exponent type goes through double.
          r = roundToType(type, std::pow(static_cast<double>(static_cast<float>(a)), e));
        out.setFloat(i, r);
        return true;
      });
}

std::optional<ConstTensor> evalWhere(RankedTensorType resultType,
                                     const ConstTensor &c, const ConstTensor &x,
                                     const ConstTensor &y, EvalContext &ctx) {
  return mapElements(resultType, {&c, &x, &y}, ctx,
                     [&](ConstTensor &out, int64_t i, ArrayRef<int64_t> in) {
                       if (c.getInt(in[0]))
                         out.copyElement(i, x, in[1]);
                       else
                         out.copyElement(i, y, in[2]);
                       return true;
                     });
}

std::optional<ConstTensor> evalClip(RankedTensorType resultType,
                                    const ConstTensor &x, const ConstTensor *lo,
                                    const ConstTensor *hi, EvalContext &ctx) {
  Type type = x.getElementType();
  if ((lo && lo->getNumElements() != 1) || (hi && hi->getNumElements() != 1))
    return std::nullopt;
  return mapElements(resultType, {&x}, ctx,
                     [&](ConstTensor &out, int64_t i, ArrayRef<int64_t> in) {
                       if (x.isFloat()) {
                         double v = x.getFloat(in[0]);
                         if (lo && v < lo->getFloat(0))
                           v = lo->getFloat(0);
                         if (hi && v > hi->getFloat(0))
                           v = hi->getFloat(0);
                         out.setFloat(i, v);
                         return true;
                       }
                       int64_t v = x.getInt(in[0]);
                       if (lo && intLess(type, v, lo->getInt(0)))
                         v = lo->getInt(0);
                       if (hi && intLess(type, hi->getInt(0), v))
                         v = hi->getInt(0);
                       out.setInt(i, v);
                       return true;
                     });
}

} // namespace

bool castElement(const ConstTensor &src, int64_t from, ConstTensor &dst,
                 int64_t to) {
  Type toType = dst.getElementType();
  Type fromType = src.getElementType();
  if (src.isFloat()) {
    double x = src.getFloat(from);
    if (dst.isFloat()) {
      dst.setFloat(to, roundToType(toType, x));
      return true;
    }
    if (toType.isInteger(1)) {
      dst.setInt(to, x != 0 || std::isnan(x));
      return true;
    }
    // Truncation toward zero (C++ static_cast, as ONNX Runtime's Cast);
    // NaN, infinities and values out of the target's range are undefined.
    if (!std::isfinite(x))
      return false;
    double t = std::trunc(x);
    unsigned width = toType.getIntOrFloatBitWidth();
    double lo, hi; // the range [lo, hi) of the target type
    if (isZeroExtended(toType)) {
      lo = 0;
      hi = std::ldexp(1.0, width);
    } else {
      lo = -std::ldexp(1.0, width - 1);
      hi = std::ldexp(1.0, width - 1);
    }
    if (!(t >= lo && t < hi))
      return false;
    if (isZeroExtended(toType))
      dst.setInt(to, wrapToType(toType, static_cast<uint64_t>(t)));
    else
      dst.setInt(to, static_cast<int64_t>(t));
    return true;
  }
  int64_t v = src.getInt(from);
  if (dst.isFloat()) {
    // One rounding from the integer to the target type.
    APFloat f(cast<FloatType>(toType).getFloatSemantics());
    f.convertFromAPInt(APInt(64, static_cast<uint64_t>(v)),
                       /*IsSigned=*/!fromType.isUnsignedInteger(64),
                       APFloat::rmNearestTiesToEven);
    dst.setFloat(to, f.convertToDouble());
    return true;
  }
  if (toType.isInteger(1)) {
    dst.setInt(to, v != 0);
    return true;
  }
  dst.setInt(to, wrapToType(toType, static_cast<uint64_t>(v)));
  return true;
}

std::optional<ConstTensor> evaluateElementwise(Operation *op,
                                               ConstOperands operands,
                                               EvalContext &ctx) {
  if (op->getNumResults() != 1)
    return std::nullopt;
  auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType || !resultType.hasStaticShape() || operands.empty() ||
      !operands[0])
    return std::nullopt;
  const ConstTensor &x = *operands[0];
  bool isBinary = operands.size() == 2 && operands[1];
  bool allPresent = llvm::all_of(operands, [](const ConstTensor *t) { return t; });
  auto arith = [&](Arith kind) -> std::optional<ConstTensor> {
    if (!isBinary)
      return std::nullopt;
    return evalArith(kind, resultType, operands, ctx);
  };
  auto compare = [&](Compare kind) -> std::optional<ConstTensor> {
    if (!isBinary)
      return std::nullopt;
    return evalCompare(kind, resultType, x, *operands[1], ctx);
  };
  return llvm::TypeSwitch<Operation *, std::optional<ConstTensor>>(op)
      .Case([&](AddOp) { return arith(Arith::Add); })
      .Case([&](SubOp) { return arith(Arith::Sub); })
      .Case([&](MulOp) { return arith(Arith::Mul); })
      .Case([&](DivOp) { return arith(Arith::Div); })
      .Case([&](ModOp mod) -> std::optional<ConstTensor> {
        if (x.isFloat() && mod.getFmod() != 1)
          return std::nullopt;
        return arith(mod.getFmod() == 1 ? Arith::FMod : Arith::Mod);
      })
      .Case([&](AndOp) { return arith(Arith::BitAnd); })
      .Case([&](OrOp) { return arith(Arith::BitOr); })
      .Case([&](XorOp) { return arith(Arith::BitXor); })
      .Case([&](BitwiseAndOp) { return arith(Arith::BitAnd); })
      .Case([&](BitwiseOrOp) { return arith(Arith::BitOr); })
      .Case([&](BitwiseXorOp) { return arith(Arith::BitXor); })
      .Case([&](SumOp) -> std::optional<ConstTensor> {
        if (!allPresent)
          return std::nullopt;
        return evalArith(Arith::Add, resultType, operands, ctx);
      })
      .Case([&](MeanOp) -> std::optional<ConstTensor> {
        if (!allPresent)
          return std::nullopt;
        // The sum, then one division by the operand count.
        std::optional<ConstTensor> sum =
            evalArith(Arith::Add, resultType, operands, ctx);
        if (!sum)
          return std::nullopt;
        Type type = resultType.getElementType();
        double count = static_cast<double>(operands.size());
        int64_t n = sum->isSplat() ? 1 : sum->getNumElements();
        for (int64_t i = 0; i < n; ++i)
          sum->setFloat(i, *floatBinary(Arith::Div, type, sum->getFloat(i), count));
        return sum;
      })
      .Case([&](MaxOp) -> std::optional<ConstTensor> {
        if (!allPresent)
          return std::nullopt;
        return evalExtremum(true, resultType, operands, ctx);
      })
      .Case([&](MinOp) -> std::optional<ConstTensor> {
        if (!allPresent)
          return std::nullopt;
        return evalExtremum(false, resultType, operands, ctx);
      })
      .Case([&](EqualOp) { return compare(Compare::Eq); })
      .Case([&](LessOp) { return compare(Compare::Lt); })
      .Case([&](LessOrEqualOp) { return compare(Compare::Le); })
      .Case([&](GreaterOp) { return compare(Compare::Gt); })
      .Case([&](GreaterOrEqualOp) { return compare(Compare::Ge); })
      .Case([&](PowOp) -> std::optional<ConstTensor> {
        if (!isBinary)
          return std::nullopt;
        return evalPow(resultType, x, *operands[1], ctx);
      })
      .Case([&](WhereOp) -> std::optional<ConstTensor> {
        if (!allPresent || operands.size() != 3)
          return std::nullopt;
        return evalWhere(resultType, x, *operands[1], *operands[2], ctx);
      })
      .Case([&](ClipOp) {
        return evalClip(resultType, x, operands[1], operands[2], ctx);
      })
      .Case<CastOp, CastLikeOp>([&](Operation *) {
        return mapElements(resultType, {&x}, ctx,
                           [&](ConstTensor &out, int64_t i, ArrayRef<int64_t> in) {
                             return castElement(x, in[0], out, i);
                           });
      })
      .Default([&](Operation *op) -> std::optional<ConstTensor> {
        if (operands.size() != 1)
          return std::nullopt;
        return evalUnaryOp(op, x, resultType, ctx);
      });
}

} // namespace kiln::fold
