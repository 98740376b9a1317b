//===- Canonicalize.cpp - Kiln canonicalizations --------------------------===//
//
// kiln-canonicalize: the kiln ops' folders (Identity, Cast to the same type,
// Expand/Reshape to the same type, Concat of one operand, full Slices, ...)
// plus the patterns of populateKilnCanonicalizationPatterns, applied by the
// greedy driver, which also erases dead pure ops.
//
// Every pattern keeps the IR's types: an op is only replaced by a value of
// its own result type, so broadcasting (x * 1 where 1 is larger than x) is
// never lost.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCANONICALIZE
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The splat value of a constant `v`, or null.
Attribute getSplatConstant(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return {};
  return attr.getSplatValue<Attribute>();
}

/// True when `v` is a constant whose every element is the integer or float
/// `value`; for a float 0, `negativeZero` selects which zero (their sums
/// differ: -0 + 0 = +0).
bool isSplatOf(Value v, int64_t value, bool negativeZero = false) {
  Attribute splat = getSplatConstant(v);
  if (auto i = dyn_cast_or_null<IntegerAttr>(splat))
    return i.getValue().getSExtValue() == value;
  auto f = dyn_cast_or_null<FloatAttr>(splat);
  if (!f)
    return false;
  APFloat x = f.getValue();
  if (value == 0)
    return x.isZero() && x.isNegative() == negativeZero;
  return x.compare(APFloat(x.getSemantics(), value)) == APFloat::cmpEqual;
}

bool isFloatTensor(Value v) {
  return isa<FloatType>(cast<ShapedType>(v.getType()).getElementType());
}

/// A 1-D i64 constant holding `values`.
Value createI64Constant(PatternRewriter &rewriter, Location loc,
                        ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    rewriter.getI64Type());
  return ConstantOp::create(rewriter, loc, type,
                            DenseElementsAttr::get(type, values));
}

//===----------------------------------------------------------------------===//
// Identities of the arithmetic ops
//===----------------------------------------------------------------------===//

/// x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x when the result has x's
/// type. For floats, x + (+0) is kept: it turns -0 into +0 (IEEE 754), so
/// only x + (-0) and x - (+0) are removed, as LLVM and MLIR's arith do.
template <typename OpTy>
struct RemoveNeutralOperand : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value a = op.getA(), b = op.getB();
    constexpr bool isAdd = std::is_same_v<OpTy, AddOp>;
    constexpr bool isSub = std::is_same_v<OpTy, SubOp>;
    constexpr bool isCommutative = isAdd || std::is_same_v<OpTy, MulOp>;
    constexpr int64_t neutral = isAdd || isSub ? 0 : 1;
    auto isNeutral = [&](Value v) {
      if (neutral == 1 || !isFloatTensor(v))
        return isSplatOf(v, neutral);
      // Floats: x + (-0) == x and x - (+0) == x for every x, -0 included.
      return isSplatOf(v, 0, /*negativeZero=*/isAdd);
    };
    Type type = op.getType();
    if (a.getType() == type && isNeutral(b)) {
      rewriter.replaceOp(op, a);
      return success();
    }
    if (isCommutative && b.getType() == type && isNeutral(a)) {
      rewriter.replaceOp(op, b);
      return success();
    }
    return failure();
  }
};

//===----------------------------------------------------------------------===//
// Inference-only ops
//===----------------------------------------------------------------------===//

/// Dropout in inference is the identity; its mask is all true.
struct RemoveInferenceDropout : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    // training_mode absent or a constant false (a true one is rejected by
    // the verifier); an unknown value could turn training on at run time.
    if (!isNone(op.getTrainingMode())) {
      Attribute mode = getSplatConstant(op.getTrainingMode());
      auto flag = dyn_cast_or_null<BoolAttr>(mode);
      auto asInt = dyn_cast_or_null<IntegerAttr>(mode);
      if (!(flag && !flag.getValue()) && !(asInt && asInt.getValue().isZero()))
        return rewriter.notifyMatchFailure(op, "training_mode not known false");
    }
    if (op.getOutput().getType() != op.getData().getType())
      return failure();
    if (!op.getMask().use_empty()) {
      auto maskType = cast<RankedTensorType>(op.getMask().getType());
      if (!maskType.hasStaticShape())
        return rewriter.notifyMatchFailure(op, "used mask of dynamic shape");
      Value mask = ConstantOp::create(rewriter, op.getLoc(), maskType,
                                      DenseElementsAttr::get(maskType, true));
      rewriter.replaceAllUsesWith(op.getMask(), mask);
    }
    rewriter.replaceAllUsesWith(op.getOutput(), op.getData());
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reshapes
//===----------------------------------------------------------------------===//

/// The data input of a Reshape, Flatten, Squeeze or Unsqueeze, or null.
Value getReshapeInput(Operation *op) {
  if (!op)
    return {};
  if (auto r = dyn_cast<ReshapeOp>(op))
    return r.getData();
  if (auto f = dyn_cast<FlattenOp>(op))
    return f.getInput();
  if (auto s = dyn_cast<SqueezeOp>(op))
    return s.getData();
  if (auto u = dyn_cast<UnsqueezeOp>(op))
    return u.getData();
  return {};
}

/// A chain of Reshape/Flatten/Squeeze/Unsqueeze ending in `op` with a
/// static result becomes one Reshape of the chain's input to that shape
/// (row-major order is kept by each of them, so only the final shape counts).
/// With a dynamic result, a final Reshape by a constant shape that copies no
/// input dim reads the chain's input instead.
template <typename OpTy>
struct CollapseReshapeChain : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value input = getReshapeInput(op);
    Value source = getReshapeInput(input.getDefiningOp());
    if (!source)
      return failure();
    // Walk to the start of the chain.
    while (Value earlier = getReshapeInput(source.getDefiningOp()))
      source = earlier;
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    // A 0 in the shape would copy a dim under ONNX's allowzero = 0 rule.
    if (type.hasStaticShape() && !llvm::is_contained(type.getShape(), 0)) {
      Value shape = createI64Constant(rewriter, op.getLoc(), type.getShape());
      rewriter.replaceOpWithNewOp<ReshapeOp>(op, type, source, shape,
                                             rewriter.getI64IntegerAttr(0));
      return success();
    }
    // Dynamic result: a Reshape whose constant shape copies no dim (no 0, or
    // allowzero = 1) depends only on the element count, which the chain
    // keeps, so it can read the chain's input directly.
    if constexpr (std::is_same_v<OpTy, ReshapeOp>) {
      DenseIntElementsAttr shape;
      if (matchPattern(op.getShape(), m_Constant(&shape)) &&
          (op.getAllowzero() != 0 ||
           llvm::none_of(shape.getValues<APInt>(),
                         [](const APInt &d) { return d.isZero(); }))) {
        rewriter.modifyOpInPlace(op, [&] { op.getDataMutable().assign(source); });
        return success();
      }
    }
    return rewriter.notifyMatchFailure(op, "result shape is not static");
  }
};

/// A Reshape with a static result whose shape operand is computed (not a
/// constant) reshapes to the constant result shape instead.
struct ConstantReshapeShape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    if (matchPattern(op.getShape(), m_Constant()))
      return failure();
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape() || llvm::is_contained(type.getShape(), 0))
      return rewriter.notifyMatchFailure(op, "result shape is not static");
    Value shape = createI64Constant(rewriter, op.getLoc(), type.getShape());
    rewriter.modifyOpInPlace(op, [&] {
      op.getShapeMutable().assign(shape);
      op.setAllowzero(0);
    });
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Transposes
//===----------------------------------------------------------------------===//

SmallVector<int64_t> getPermutation(TransposeOp op) {
  int64_t rank = cast<RankedTensorType>(op.getData().getType()).getRank();
  if (std::optional<ArrayRef<int64_t>> perm = op.getPerm())
    return SmallVector<int64_t>(perm->begin(), perm->end());
  SmallVector<int64_t> reversed;
  for (int64_t d = rank - 1; d >= 0; --d)
    reversed.push_back(d);
  return reversed;
}

/// Transpose(Transpose(x, p1), p2) -> Transpose(x, p1 ∘ p2), or x when the
/// composition is the identity.
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getData().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    SmallVector<int64_t> first = getPermutation(inner), second = getPermutation(op);
    if (first.size() != second.size())
      return failure();
    // Result dim j is inner's dim second[j], which is x's dim first[second[j]].
    SmallVector<int64_t> composed;
    for (int64_t d : second)
      composed.push_back(first[d]);
    Value x = inner.getData();
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())) &&
        x.getType() == op.getType()) {
      rewriter.replaceOp(op, x);
      return success();
    }
    rewriter.replaceOpWithNewOp<TransposeOp>(
        op, op.getType(), x, rewriter.getDenseI64ArrayAttr(composed));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

/// Pad by zeros on every side is its input, whatever the mode.
struct RemoveZeroPad : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getType() != op.getData().getType())
      return failure();
    std::optional<SmallVector<int64_t>> pads = getKnownIntValues(op.getPads());
    if (!pads || llvm::any_of(*pads, [](int64_t p) { return p != 0; }))
      return failure();
    rewriter.replaceOp(op, op.getData());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

int64_t countOps(Operation *root) {
  int64_t count = 0;
  root->walk([&](Operation *) { ++count; });
  return count;
}

struct CanonicalizePass : kiln::impl::KilnCanonicalizeBase<CanonicalizePass> {
  using Base::Base;

  kiln::Statistic numOpsRemoved{this, "ops-removed",
                                "Net number of ops removed"};

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateKilnCanonicalizationPatterns(patterns);
    FrozenRewritePatternSet frozen(std::move(patterns));
    int64_t before = countOps(getOperation());
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    // Not converging within the iteration limit leaves valid IR.
    (void)applyPatternsGreedily(getOperation(), frozen, config);
    numOpsRemoved += std::max<int64_t>(before - countOps(getOperation()), 0);
  }
};

} // namespace

void kiln::populateKilnCanonicalizationPatterns(RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<RemoveNeutralOperand<AddOp>, RemoveNeutralOperand<SubOp>,
               RemoveNeutralOperand<MulOp>, RemoveNeutralOperand<DivOp>,
               RemoveInferenceDropout, ConstantReshapeShape, ComposeTransposes,
               RemoveZeroPad>(context);
  patterns.add<CollapseReshapeChain<ReshapeOp>, CollapseReshapeChain<FlattenOp>,
               CollapseReshapeChain<SqueezeOp>, CollapseReshapeChain<UnsqueezeOp>>(
      context);
}
