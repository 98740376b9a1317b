//===- FuseNormalization.cpp - Fuse LayerNorm and RMSNorm -----------------===//
//
// kiln-fuse-normalization: normalizations written out as plain ops become
// one op.
//
//   RMSNorm   N = x / sqrt(ReduceMean(x^2) + eps)        -> kiln.rms_norm
//   LayerNorm d = x - ReduceMean(x)
//             N = d / sqrt(ReduceMean(d^2) + eps)        ->
//             kiln.layer_normalization
//
// followed by an optional Mul by a weight (either side) and, for LayerNorm,
// an optional Add of a bias. The core is matched with its variants: x^2 as
// Pow(x, 2) or x * x; the division as Div(x, s), x * Reciprocal(s) or
// x * (1 / s); eps on either side of its Add. A Cast of x to a wider float
// and of N back to x's type (PyTorch's Llama RMSNorm) becomes the op's
// `stash_type`. The reductions must cover the trailing dims with
// keepdims = 1, eps must be a scalar constant, and every intermediate must
// have no user outside the match.
//
// LayerNorm is fused into the ONNX-level kiln.layer_normalization (its Mean
// and InvStdDev results left unused) rather than a Kiln op of its own: it is
// one op every backend and the ONNX importer already know.
//
//===----------------------------------------------------------------------===//

#include "FusionMatchers.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSENORMALIZATION
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using namespace kiln::fusion;

namespace {

/// How many ops of each kind the patterns made (the pass's statistics).
struct NormalizationCounts {
  int64_t layerNorms = 0, rmsNorms = 0;
};

/// The matched core `N = num / sqrt(ReduceMean(num^2) + eps)`.
struct NormCore {
  Value num;         ///< The value normalized (x, or x - mean).
  Operation *square; ///< Pow(num, 2) or Mul(num, num).
  int64_t firstAxis; ///< The reduction covers firstAxis .. rank-1.
  double epsilon;
};

/// The trailing axes' start of a keepdims ReduceMean over `data`.
std::optional<int64_t> getTrailingMeanStart(ReduceMeanOp mean) {
  if (mean.getKeepdims() != 1)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> axes = getReductionAxes(mean);
  if (!axes)
    return std::nullopt;
  int64_t rank = cast<RankedTensorType>(mean.getData().getType()).getRank();
  return getTrailingAxesStart(*axes, rank);
}

/// The `s` in `root = num / s`, `num * Reciprocal(s)` or `num * (1 / s)`
/// (the reciprocal single-use), with `num`.
std::optional<std::pair<Value, Value>> matchDivision(Operation *root) {
  if (auto div = dyn_cast<DivOp>(root))
    return std::pair(div.getA(), div.getB());
  auto mul = dyn_cast<MulOp>(root);
  if (!mul)
    return std::nullopt;
  for (auto [num, inv] :
       {std::pair(mul.getA(), mul.getB()), std::pair(mul.getB(), mul.getA())}) {
    if (auto recip = getSingleUseDef<ReciprocalOp>(inv))
      return std::pair(num, recip.getX());
    if (auto div = getSingleUseDef<DivOp>(inv))
      if (isScalarNear(div.getA(), 1.0, getElementTypeOrSelf(div.getType())))
        return std::pair(num, div.getB());
  }
  return std::nullopt;
}

/// Matches the core rooted at the division `root`.
std::optional<NormCore> matchNormCore(Operation *root) {
  auto type = dyn_cast<RankedTensorType>(root->getResult(0).getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  Type et = type.getElementType();
  auto division = matchDivision(root);
  if (!division)
    return std::nullopt;
  auto [num, denominator] = *division;
  if (num.getType() != type)
    return std::nullopt;
  auto sqrt = getSingleUseDef<SqrtOp>(denominator);
  auto sum = sqrt ? getSingleUseDef<AddOp>(sqrt.getX()) : nullptr;
  if (!sum)
    return std::nullopt;
  for (auto [m, e] :
       {std::pair(sum.getA(), sum.getB()), std::pair(sum.getB(), sum.getA())}) {
    std::optional<double> eps = getScalarConstant(e);
    auto mean = getSingleUseDef<ReduceMeanOp>(m);
    if (!eps || *eps < 0.0 || !mean)
      continue;
    // eps must not broadcast the statistics to a larger shape.
    if (sum.getType() != mean.getType())
      return std::nullopt;
    std::optional<int64_t> first = getTrailingMeanStart(mean);
    if (!first)
      return std::nullopt;
    Operation *square =
        mean.getData().hasOneUse() ? mean.getData().getDefiningOp() : nullptr;
    if (auto pow = dyn_cast_or_null<PowOp>(square)) {
      if (pow.getX() != num || !isScalarNear(pow.getY(), 2.0, et) ||
          pow.getType() != type)
        return std::nullopt;
    } else if (auto mul = dyn_cast_or_null<MulOp>(square)) {
      if (mul.getA() != num || mul.getB() != num)
        return std::nullopt;
    } else {
      return std::nullopt;
    }
    return NormCore{num, square, *first, *eps};
  }
  return std::nullopt;
}

/// True when `w` (a weight or bias) broadcasts to the normalized dims
/// `xType.shape[first:]` without growing them, with `xType`'s element type.
bool fitsNormalizedDims(Value w, RankedTensorType xType, int64_t first) {
  auto wType = dyn_cast<RankedTensorType>(w.getType());
  if (!wType || wType.getElementType() != xType.getElementType() ||
      wType.getRank() > xType.getRank() - first)
    return false;
  for (auto [d, x] : llvm::zip(llvm::reverse(wType.getShape()),
                               llvm::reverse(xType.getShape())))
    if (d != 1 && (ShapedType::isDynamic(d) || d != x))
      return false;
  return true;
}

/// Where the match ends: the normalized input (before any Cast up), the last
/// op's result, weight and bias (null when absent) and stash_type.
struct NormTail {
  Value x, result, scale, bias;
  int64_t stashType;
};

/// Extends the core ending in `normalized` (whose input is `input`) over a
/// Cast back to the input's type, a Mul by a weight and, when `withBias`, an
/// Add of a bias.
std::optional<NormTail> matchTail(Value input, Value normalized, int64_t first,
                                  bool withBias) {
  NormTail tail{input, normalized, Value(), Value(), 0};
  Type computeType = getElementTypeOrSelf(input);
  if (auto up = input.getDefiningOp<CastOp>()) {
    Type narrow = getElementTypeOrSelf(up.getInput());
    auto down = normalized.hasOneUse()
                    ? dyn_cast<CastOp>(*normalized.getUsers().begin())
                    : nullptr;
    if (isa<FloatType>(narrow) && down &&
        getElementTypeOrSelf(down.getType()) == narrow &&
        narrow.getIntOrFloatBitWidth() <= computeType.getIntOrFloatBitWidth()) {
      tail.x = up.getInput();
      tail.result = down.getResult();
    }
  }
  std::optional<int64_t> code = getOnnxFloatCode(computeType);
  if (!code)
    return std::nullopt;
  tail.stashType = *code;
  auto xType = cast<RankedTensorType>(tail.x.getType());
  if (tail.result.hasOneUse())
    if (auto mul = dyn_cast<MulOp>(*tail.result.getUsers().begin())) {
      Value w = getOtherOperand(mul, tail.result);
      if (w != tail.result && fitsNormalizedDims(w, xType, first) &&
          mul.getType() == xType) {
        tail.scale = w;
        tail.result = mul.getResult();
      }
    }
  if (withBias && tail.result.hasOneUse())
    if (auto add = dyn_cast<AddOp>(*tail.result.getUsers().begin())) {
      Value b = getOtherOperand(add, tail.result);
      if (b != tail.result && fitsNormalizedDims(b, xType, first) &&
          add.getType() == xType) {
        tail.bias = b;
        tail.result = add.getResult();
      }
    }
  return tail;
}

/// The tail's weight; for a normalization without one, a scale of ones:
/// the normalized dims' shape when static, else a scalar (which broadcasts
/// as well).
Value scaleOrOnes(PatternRewriter &rewriter, Location loc,
                  const NormTail &tail, int64_t first) {
  if (tail.scale)
    return tail.scale;
  auto xType = cast<RankedTensorType>(tail.x.getType());
  ArrayRef<int64_t> dims = xType.getShape().drop_front(first);
  if (llvm::any_of(dims, ShapedType::isDynamic))
    dims = {};
  auto type = RankedTensorType::get(dims, xType.getElementType());
  return ConstantOp::create(
      rewriter, loc,
      DenseElementsAttr::get(type,
                             FloatAttr::get(xType.getElementType(), 1.0)));
}

/// What the fused op of `tail` is built from: `last`, the op it replaces
/// (the rewriter's insertion point is set before it), the scale and the
/// axis counted from the end, as exporters write it (-1: the last).
struct FusedOperands {
  Operation *last;
  Value scale;
  int64_t axis;
};

FusedOperands prepareFused(PatternRewriter &rewriter, Location loc,
                           const NormTail &tail, int64_t first) {
  Operation *last = tail.result.getDefiningOp();
  rewriter.setInsertionPoint(last);
  Value scale = scaleOrOnes(rewriter, loc, tail, first);
  int64_t rank = cast<RankedTensorType>(tail.x.getType()).getRank();
  return {last, scale, first - rank};
}

/// A pattern rooted at the Div or Mul of a normalization core: `fuse`
/// rewrites the matched core.
struct NormCorePattern : RewritePattern {
  NormCorePattern(MLIRContext *ctx, PatternBenefit benefit,
                  NormalizationCounts &counts)
      : RewritePattern(MatchAnyOpTypeTag(), benefit, ctx), counts(counts) {}

  LogicalResult matchAndRewrite(Operation *root,
                                PatternRewriter &rewriter) const override {
    if (!isa<DivOp, MulOp>(root))
      return failure();
    std::optional<NormCore> core = matchNormCore(root);
    if (!core)
      return rewriter.notifyMatchFailure(root, "no normalization core");
    return fuse(root, *core, rewriter);
  }
  virtual LogicalResult fuse(Operation *root, const NormCore &core,
                             PatternRewriter &rewriter) const = 0;

  NormalizationCounts &counts;
};

/// LayerNorm: the core over `x - ReduceMean(x)`, then weight and bias.
struct FuseLayerNorm : NormCorePattern {
  FuseLayerNorm(MLIRContext *ctx, NormalizationCounts &counts)
      : NormCorePattern(ctx, /*benefit=*/2, counts) {}

  LogicalResult fuse(Operation *root, const NormCore &core,
                     PatternRewriter &rewriter) const override {
    auto sub = core.num.getDefiningOp<SubOp>();
    auto mean = sub ? getSingleUseDef<ReduceMeanOp>(sub.getB()) : nullptr;
    if (!mean || mean.getData() != sub.getA() ||
        getTrailingMeanStart(mean) != core.firstAxis)
      return rewriter.notifyMatchFailure(root, "not centred on the mean");
    // x - mean feeds the square and the division only.
    for (Operation *user : core.num.getUsers())
      if (user != core.square && user != root)
        return rewriter.notifyMatchFailure(root, "x - mean has other users");
    Value x = sub.getA();
    if (x.getType() != core.num.getType())
      return rewriter.notifyMatchFailure(root, "the Sub broadcasts");
    std::optional<NormTail> tail =
        matchTail(x, root->getResult(0), core.firstAxis, /*withBias=*/true);
    if (!tail)
      return failure();
    auto [last, scale, axis] =
        prepareFused(rewriter, root->getLoc(), *tail, core.firstAxis);
    Value bias =
        tail->bias ? tail->bias : NoneOp::create(rewriter, root->getLoc());
    auto ln = LayerNormalizationOp::create(
        rewriter, last->getLoc(), tail->x, scale, bias, axis,
        APFloat(float(core.epsilon)), tail->stashType);
    rewriter.replaceOp(last, ln.getY());
    ++counts.layerNorms;
    return success();
  }
};

/// RMSNorm: the core over x, then a weight.
struct FuseRMSNorm : NormCorePattern {
  FuseRMSNorm(MLIRContext *ctx, NormalizationCounts &counts)
      : NormCorePattern(ctx, /*benefit=*/1, counts) {}

  LogicalResult fuse(Operation *root, const NormCore &core,
                     PatternRewriter &rewriter) const override {
    std::optional<NormTail> tail =
        matchTail(core.num, root->getResult(0), core.firstAxis,
                  /*withBias=*/false);
    if (!tail)
      return failure();
    auto [last, scale, axis] =
        prepareFused(rewriter, root->getLoc(), *tail, core.firstAxis);
    auto rms =
        RMSNormOp::create(rewriter, last->getLoc(), tail->x, scale, axis,
                          APFloat(float(core.epsilon)), tail->stashType);
    rewriter.replaceOp(last, rms.getY());
    ++counts.rmsNorms;
    return success();
  }
};

struct FuseNormalizationPass
    : kiln::impl::KilnFuseNormalizationBase<FuseNormalizationPass> {
  using Base::Base;

  kiln::Statistic numLayerNorms{this, "layer-norms-fused", "kiln.layer_normalization ops created"};
  kiln::Statistic numRMSNorms{this, "rms-norms-fused", "kiln.rms_norm ops created"};

  void runOnOperation() override {
    NormalizationCounts counts;
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLayerNorm, FuseRMSNorm>(&getContext(), counts);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("kiln-fuse-normalization did not converge");
      return signalPassFailure();
    }
    numLayerNorms += counts.layerNorms;
    numRMSNorms += counts.rmsNorms;
  }
};

} // namespace
