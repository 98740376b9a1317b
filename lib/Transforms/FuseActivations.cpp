//===- FuseActivations.cpp - Fuse GELU, SiLU, SwiGLU ----------------------===//
//
// kiln-fuse-activations: activations that exporters write out as arithmetic
// become single ops.
//   GELU, erf form   x * 0.5 * (1 + erf(x / sqrt 2))            -> kiln.gelu
//   GELU, tanh form  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
//                                                  -> kiln.gelu {approximate =
//                                                  "tanh"}
//   SiLU             Mul(x, Sigmoid(x))                          -> kiln.silu
//   SwiGLU           Mul(silu(gate), up)                         -> kiln.swiglu
// The products may be associated and ordered in any way PyTorch emits them
// (x * 0.5 first, or 0.5 * (1 + erf) first; constants on either side);
// x / sqrt 2 may be x * (1 / sqrt 2), x^3 may be Pow(x, 3) or x * x * x.
// Constants are compared with the tolerance of their element type; every
// intermediate must have a single use, and the result must have x's type
// (a constant that broadcasts the result up is not a scalar factor).
//
//===----------------------------------------------------------------------===//

#include "FusionMatchers.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/MathExtras.h"

#include <array>

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEACTIVATIONS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using namespace kiln::fusion;

namespace {

/// How many ops of each kind the patterns made (the pass's statistics).
struct ActivationCounts {
  int64_t gelu = 0, silu = 0, swiglu = 0;
};

/// True when `v` is `x * c`, `c * x` or `x / (1 / c)` for a scalar constant
/// near `c` (the single-use op being erased with the match).
bool isScaledBy(Value v, Value x, double c, Type elementType) {
  Operation *op = v.hasOneUse() ? v.getDefiningOp() : nullptr;
  if (auto mul = dyn_cast_or_null<MulOp>(op)) {
    Value other = getOtherOperand(mul, x);
    return other && isScalarNear(other, c, elementType);
  }
  if (auto div = dyn_cast_or_null<DivOp>(op))
    return div.getA() == x && isScalarNear(div.getB(), 1.0 / c, elementType);
  return false;
}

/// True when `v` is x^3: Pow(x, 3), x * (x * x) or (x * x) * x.
bool isCube(Value v, Value x, Type elementType) {
  if (auto pow = getSingleUseDef<PowOp>(v))
    return pow.getX() == x && isScalarNear(pow.getY(), 3.0, elementType);
  auto mul = getSingleUseDef<MulOp>(v);
  if (!mul)
    return false;
  Value square = getOtherOperand(mul, x);
  auto inner = getSingleUseDef<MulOp>(square);
  return inner && inner.getA() == x && inner.getB() == x;
}

/// The argument of erf in the exact GELU: x / sqrt 2 or x * (1 / sqrt 2).
bool isErfArgument(Value v, Value x, Type elementType) {
  return isScaledBy(v, x, 1.0 / llvm::numbers::sqrt2, elementType);
}

/// The argument of tanh in the approximate GELU:
/// sqrt(2/pi) * (x + 0.044715 * x^3), operands in either order.
bool isTanhArgument(Value v, Value x, Type elementType) {
  auto scaled = getSingleUseDef<MulOp>(v);
  if (!scaled)
    return false;
  const double sqrt2OverPi = std::sqrt(2.0 / llvm::numbers::pi);
  for (auto [c, inner] : {std::pair(scaled.getA(), scaled.getB()),
                          std::pair(scaled.getB(), scaled.getA())}) {
    if (!isScalarNear(c, sqrt2OverPi, elementType))
      continue;
    auto sum = getSingleUseDef<AddOp>(inner);
    if (!sum)
      return false;
    Value cubic = getOtherOperand(sum, x);
    auto cubicMul = getSingleUseDef<MulOp>(cubic);
    if (!cubicMul)
      return false;
    for (auto [k, cube] : {std::pair(cubicMul.getA(), cubicMul.getB()),
                           std::pair(cubicMul.getB(), cubicMul.getA())})
      if (isScalarNear(k, 0.044715, elementType) &&
          isCube(cube, x, elementType))
        return true;
    return false;
  }
  return false;
}

/// GELU, either form, as a product of the three factors x, 0.5 and
/// (1 + erf(...)) or (1 + tanh(...)), associated either way.
struct FuseGelu : OpRewritePattern<MulOp> {
  FuseGelu(MLIRContext *ctx, ActivationCounts &counts)
      : OpRewritePattern(ctx, /*benefit=*/2), counts(counts) {}

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    // The three factors: one root operand and the two of a single-use Mul
    // that is the other root operand.
    for (auto [lone, other] : {std::pair(root.getA(), root.getB()),
                               std::pair(root.getB(), root.getA())}) {
      auto inner = getSingleUseDef<MulOp>(other);
      if (!inner)
        continue;
      std::array<Value, 3> factors = {lone, inner.getA(), inner.getB()};
      if (auto match = matchFactors(root, factors)) {
        auto [approximate, x] = *match;
        rewriter.replaceOpWithNewOp<GeluOp>(
            root, x, rewriter.getStringAttr(approximate));
        ++counts.gelu;
        return success();
      }
    }
    return rewriter.notifyMatchFailure(root, "not a GELU product");
  }

private:
  /// The GELU's `approximate` ("none" or "tanh") and x when `factors` are
  /// x, 0.5 and 1 + f(x) in some order.
  static std::optional<std::pair<StringRef, Value>>
  matchFactors(MulOp root, ArrayRef<Value> factors) {
    auto type = dyn_cast<RankedTensorType>(root.getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      return std::nullopt;
    Type et = type.getElementType();
    for (int half = 0; half < 3; ++half) {
      if (!isScalarNear(factors[half], 0.5, et))
        continue;
      for (int onePlus = 0; onePlus < 3; ++onePlus) {
        if (onePlus == half)
          continue;
        Value x = factors[3 - half - onePlus];
        if (x.getType() != type)
          continue;
        auto add = getSingleUseDef<AddOp>(factors[onePlus]);
        if (!add)
          continue;
        for (auto [one, act] : {std::pair(add.getA(), add.getB()),
                                std::pair(add.getB(), add.getA())}) {
          if (!isScalarNear(one, 1.0, et))
            continue;
          if (auto erf = getSingleUseDef<ErfOp>(act))
            if (isErfArgument(erf.getX(), x, et))
              return std::pair(StringRef("none"), x);
          if (auto tanh = getSingleUseDef<TanhOp>(act))
            if (isTanhArgument(tanh.getX(), x, et))
              return std::pair(StringRef("tanh"), x);
        }
      }
    }
    return std::nullopt;
  }

  ActivationCounts &counts;
};

/// Mul(x, Sigmoid(x)) in either order -> kiln.silu.
struct FuseSiLU : OpRewritePattern<MulOp> {
  FuseSiLU(MLIRContext *ctx, ActivationCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    for (auto [x, s] : {std::pair(root.getA(), root.getB()),
                        std::pair(root.getB(), root.getA())}) {
      auto sigmoid = getSingleUseDef<SigmoidOp>(s);
      if (!sigmoid || sigmoid.getX() != x || x.getType() != root.getType())
        continue;
      rewriter.replaceOpWithNewOp<SiLUOp>(root, x);
      ++counts.silu;
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not x * sigmoid(x)");
  }

  ActivationCounts &counts;
};

/// Mul(silu(gate), up) in either order, gate and up of the result's type
/// -> kiln.swiglu.
struct FuseSwiGLU : OpRewritePattern<MulOp> {
  FuseSwiGLU(MLIRContext *ctx, ActivationCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    for (auto [s, up] : {std::pair(root.getA(), root.getB()),
                         std::pair(root.getB(), root.getA())}) {
      auto silu = getSingleUseDef<SiLUOp>(s);
      if (!silu || up.getType() != root.getType() ||
          silu.getType() != root.getType())
        continue;
      rewriter.replaceOpWithNewOp<SwiGLUOp>(root, silu.getX(), up);
      ++counts.swiglu;
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not silu(gate) * up");
  }

  ActivationCounts &counts;
};

struct FuseActivationsPass
    : kiln::impl::KilnFuseActivationsBase<FuseActivationsPass> {
  using Base::Base;

  kiln::Statistic numGelu{this, "gelus-fused", "kiln.gelu ops created"};
  kiln::Statistic numSilu{this, "silus-fused", "kiln.silu ops created"};
  kiln::Statistic numSwiGLU{this, "swiglus-fused", "kiln.swiglu ops created"};

  void runOnOperation() override {
    ActivationCounts counts;
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGelu, FuseSiLU, FuseSwiGLU>(&getContext(), counts);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("kiln-fuse-activations did not converge");
      return signalPassFailure();
    }
    numGelu += counts.gelu;
    numSilu += counts.silu;
    numSwiGLU += counts.swiglu;
  }
};

} // namespace
