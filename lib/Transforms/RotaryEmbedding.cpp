//===- RotaryEmbedding.cpp - Fuse and decompose kiln.rotary_embedding -----===//
//
// kiln-fuse-rotary-embedding matches the rotate-half RoPE that PyTorch
// exports for Llama-style models,
//
//   x1 = Slice(x, 0, D/2, axis -1)        x2 = Slice(x, D/2, end, axis -1)
//   r  = Concat(Neg(x2), x1, axis -1)
//   y  = Add(Mul(x, cos), Mul(r, sin))
//
// and its decomposition (populateDecomposeRotaryEmbeddingPatterns) writes
// exactly that form back, so the pair round-trips.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEROTARYEMBEDDING
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

/// True when `v` is `Slice(x, [start], [end], [axis of the last dim],
/// [1 or none])` with `end` clamped to the dim size.
static bool isLastDimSlice(Value v, Value x, int64_t start, int64_t end) {
  auto slice = v.getDefiningOp<SliceOp>();
  if (!slice || slice.getData() != x)
    return false;
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  int64_t size = cast<RankedTensorType>(x.getType()).getDimSize(rank - 1);
  auto starts = getKnownIntValues(slice.getStarts());
  auto ends = getKnownIntValues(slice.getEnds());
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1)
    return false;
  if (isNone(slice.getAxes())) {
    if (rank != 1)
      return false;
  } else {
    auto axes = getKnownIntValues(slice.getAxes());
    if (!axes || axes->size() != 1 ||
        ((*axes)[0] != -1 && (*axes)[0] != rank - 1))
      return false;
  }
  if (!isNone(slice.getSteps())) {
    auto steps = getKnownIntValues(slice.getSteps());
    if (!steps || steps->size() != 1 || (*steps)[0] != 1)
      return false;
  }
  auto clamp = [&](int64_t i) {
    if (ShapedType::isDynamic(i))
      return std::numeric_limits<int64_t>::min();
    if (i < 0)
      i += size;
    return std::clamp<int64_t>(i, 0, size);
  };
  return clamp((*starts)[0]) == start && clamp((*ends)[0]) == end;
}

/// Matches `r = Concat(Neg(x[D/2:]), x[:D/2])` along the last dim; returns x.
static Value matchRotateHalf(Value r) {
  auto concat = r.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInputs().size() != 2 || !concat->hasOneUse())
    return {};
  auto type = cast<RankedTensorType>(r.getType());
  int64_t rank = type.getRank();
  int64_t concatAxis = int64_t(concat.getAxis());
  if (concatAxis != -1 && concatAxis != rank - 1)
    return {};
  auto neg = concat.getInputs()[0].getDefiningOp<NegOp>();
  if (!neg || !neg->hasOneUse())
    return {};
  auto upper = neg.getX().getDefiningOp<SliceOp>();
  if (!upper)
    return {};
  Value x = upper.getData();
  auto xType = cast<RankedTensorType>(x.getType());
  int64_t d = xType.getDimSize(rank - 1);
  if (xType != type || ShapedType::isDynamic(d) || d % 2 != 0)
    return {};
  if (!isLastDimSlice(neg.getX(), x, d / 2, d) ||
      !isLastDimSlice(concat.getInputs()[1], x, 0, d / 2))
    return {};
  return x;
}

namespace {
struct FuseRotaryEmbedding : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (auto [first, second] : {std::pair(add.getA(), add.getB()),
                                 std::pair(add.getB(), add.getA())}) {
      auto cosMul = first.getDefiningOp<MulOp>();
      auto sinMul = second.getDefiningOp<MulOp>();
      if (!cosMul || !sinMul || !cosMul->hasOneUse() || !sinMul->hasOneUse())
        continue;
      for (auto [rotated, sin] : {std::pair(sinMul.getA(), sinMul.getB()),
                                  std::pair(sinMul.getB(), sinMul.getA())}) {
        Value x = matchRotateHalf(rotated);
        if (!x)
          continue;
        Value cos;
        if (cosMul.getA() == x)
          cos = cosMul.getB();
        else if (cosMul.getB() == x)
          cos = cosMul.getA();
        else
          continue;
        // No broadcasting beyond x: the fused op's result is x's type.
        if (add.getType() != x.getType() || cosMul.getType() != x.getType() ||
            sinMul.getType() != x.getType())
          continue;
        SmallVector<Type> inferred;
        if (failed(RotaryEmbeddingOp::inferReturnTypes(
                getContext(), std::nullopt, ValueRange{x, cos, sin},
                add->getAttrDictionary(), add->getPropertiesStorage(), {},
                inferred)))
          continue;
        auto fused = RotaryEmbeddingOp::create(rewriter, add.getLoc(),
                                               x.getType(), x, cos, sin);
        rewriter.replaceOp(add, fused.getResult());
        return success();
      }
    }
    return rewriter.notifyMatchFailure(add, "not a rotate-half RoPE");
  }
};

/// Writes the op back as Slice/Neg/Concat/Mul/Add, the exported form.
struct DecomposeRotaryEmbedding : OpRewritePattern<RotaryEmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RotaryEmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getX();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    int64_t d = type.getDimSize(rank - 1);
    if (ShapedType::isDynamic(d))
      return rewriter.notifyMatchFailure(op, "the rotated dim is dynamic");
    auto vec = [&](int64_t value) {
      auto t = RankedTensorType::get({1}, rewriter.getI64Type());
      return ConstantOp::create(rewriter, loc, t,
                                DenseElementsAttr::get(t, value))
          .getResult();
    };
    SmallVector<int64_t> halfShape(type.getShape());
    halfShape.back() = d / 2;
    auto halfType = RankedTensorType::get(halfShape, type.getElementType());
    Value axis = vec(-1), step = vec(1);
    Value lower = SliceOp::create(rewriter, loc, halfType, x, vec(0),
                                  vec(d / 2), axis, step);
    Value upper = SliceOp::create(rewriter, loc, halfType, x, vec(d / 2),
                                  vec(std::numeric_limits<int64_t>::max()),
                                  axis, step);
    Value negated = NegOp::create(rewriter, loc, upper);
    Value rotated = ConcatOp::create(rewriter, loc, type,
                                     ValueRange{negated, lower},
                                     rewriter.getI64IntegerAttr(-1));
    Value withCos = MulOp::create(rewriter, loc, type, x, op.getCos());
    Value withSin = MulOp::create(rewriter, loc, type, rotated, op.getSin());
    rewriter.replaceOpWithNewOp<AddOp>(op, type, withCos, withSin);
    return success();
  }
};

struct FuseRotaryEmbeddingPass
    : kiln::impl::KilnFuseRotaryEmbeddingBase<FuseRotaryEmbeddingPass> {
  using Base::Base;

  kiln::Statistic numFused{this, "rotary-embeddings-fused",
                           "kiln.rotary_embedding ops created"};

  void runOnOperation() override {
    auto count = [&] {
      int64_t n = 0;
      getOperation().walk([&](RotaryEmbeddingOp) { ++n; });
      return n;
    };
    int64_t before = count();
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRotaryEmbedding>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    numFused += count() - before;
  }
};
} // namespace

void kiln::populateDecomposeRotaryEmbeddingPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeRotaryEmbedding>(patterns.getContext());
}
