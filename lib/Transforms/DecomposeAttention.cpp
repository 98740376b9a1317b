//===- DecomposeAttention.cpp - kiln.attention family to plain ops --------===//
//
// Rewrites kiln.attention and kiln.linear_attention into the ONNX-level kiln
// ops whose semantics their descriptions give (kiln-decompose-fused):
//
//   attention:  layout = "bshd": Transpose(0, 2, 1, 3) of Q, K and V, a
//               bhsd attention, Transpose(0, 2, 1, 3) of its result (the
//               bhsd attention is decomposed in turn); then, for bhsd:
//               K, V repeated to num_heads (Unsqueeze/Expand/Reshape, as
//               repeat_kv), S = MatMul(Q, Transpose(K)) * scale, the mask
//               (Add, or Where to the type's lowest value), the causal mask
//               (a Where with a constant i1 [Sq, Skv] when the lengths are
//               static, else built with Range/LessOrEqual), Softmax(-1),
//               MatMul(P, V).
//   linear:     φ on Q and on K (before the repetition), kv = MatMul(φKᵀ, V),
//               num = MatMul(φQ, kv), den = MatMul(φQ, ReduceSum(φK, seq)ᵀ),
//               num / (den + eps): the form kiln-fuse-linear-attention
//               matches, so the two passes round-trip.
//
//===----------------------------------------------------------------------===//

#include "AttentionMatchers.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"

using namespace mlir;
using namespace kiln;

namespace {

/// A constant i64 vector.
Value i64Vector(PatternRewriter &rewriter, Location loc,
                ArrayRef<int64_t> values) {
  auto type =
      RankedTensorType::get({int64_t(values.size())}, rewriter.getI64Type());
  return ConstantOp::create(rewriter, loc,
                            DenseElementsAttr::get(type, values));
}

/// A constant i64 scalar.
Value i64Scalar(PatternRewriter &rewriter, Location loc, int64_t value) {
  auto type = RankedTensorType::get({}, rewriter.getI64Type());
  return ConstantOp::create(rewriter, loc,
                            DenseElementsAttr::get(type, ArrayRef(value)));
}

/// A scalar constant of the float type `type`, rounded from `value`.
Value floatScalar(PatternRewriter &rewriter, Location loc, FloatType type,
                  APFloat value) {
  bool lost;
  value.convert(type.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  auto tensorType = RankedTensorType::get({}, type);
  return ConstantOp::create(rewriter, loc,
                            DenseElementsAttr::get(tensorType, value));
}

Value transposeLastTwo(PatternRewriter &rewriter, Location loc, Value x) {
  return TransposeOp::create(rewriter, loc, x,
                             rewriter.getDenseI64ArrayAttr({0, 1, 3, 2}));
}

/// [B, KV, S, D] → [B, KV*rep, S, D] with head h reading KV head h / rep:
/// Unsqueeze(axis 2), Expand to rep, Reshape merging the two head dims.
Value repeatHeads(PatternRewriter &rewriter, Location loc, Value x,
                  int64_t rep) {
  if (rep == 1)
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  int64_t heads = type.getDimSize(1) * rep;
  Value u = UnsqueezeOp::create(rewriter, loc, x, i64Vector(rewriter, loc, {2}),
                                /*axes=*/nullptr);
  Value e = ExpandOp::create(rewriter, loc, u,
                             i64Vector(rewriter, loc, {1, 1, rep, 1, 1}));
  // 0 copies the batch dim; at most one -1 may stand for an unknown dim.
  Value target;
  int64_t seq = type.getDimSize(2), dim = type.getDimSize(3);
  if (!ShapedType::isDynamic(dim)) {
    target = i64Vector(rewriter, loc, {0, heads, -1, dim});
  } else if (!ShapedType::isDynamic(seq)) {
    target = i64Vector(rewriter, loc, {0, heads, seq, -1});
  } else {
    Value batch =
        ShapeOp::create(rewriter, loc, x, rewriter.getI64IntegerAttr(0),
                        rewriter.getI64IntegerAttr(1));
    Value rest =
        ShapeOp::create(rewriter, loc, x, rewriter.getI64IntegerAttr(2),
                        /*end=*/nullptr);
    target = ConcatOp::create(
        rewriter, loc,
        ValueRange{batch, i64Vector(rewriter, loc, {heads}), rest},
        rewriter.getI64IntegerAttr(0));
  }
  return ReshapeOp::create(rewriter, loc, e, target,
                           rewriter.getI64IntegerAttr(0));
}

/// The i1 [Sq, Skv] mask keeping key j for query i when j <= i + (Skv - Sq):
/// a constant when both lengths are static (and the mask not huge), else
/// computed from the shapes of Q and K.
Value causalKeepMask(PatternRewriter &rewriter, Location loc, Value q,
                     Value k) {
  int64_t sq = cast<RankedTensorType>(q.getType()).getDimSize(2);
  int64_t skv = cast<RankedTensorType>(k.getType()).getDimSize(2);
  if (!ShapedType::isDynamic(sq) && !ShapedType::isDynamic(skv) &&
      sq * skv <= attention::kMaxConstElements) {
    SmallVector<bool> keep;
    keep.reserve(sq * skv);
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < skv; ++j)
        keep.push_back(j <= i + (skv - sq));
    auto type = RankedTensorType::get({sq, skv}, rewriter.getI1Type());
    return ConstantOp::create(rewriter, loc,
                              DenseElementsAttr::get(type, keep));
  }
  auto scalarDim = [&](Value x) -> Value {
    Value dim = ShapeOp::create(rewriter, loc, x, rewriter.getI64IntegerAttr(2),
                                rewriter.getI64IntegerAttr(3));
    return ReshapeOp::create(rewriter, loc, dim, i64Vector(rewriter, loc, {}),
                             rewriter.getI64IntegerAttr(0));
  };
  Value sqLen = scalarDim(q), skvLen = scalarDim(k);
  Value zero = i64Scalar(rewriter, loc, 0), one = i64Scalar(rewriter, loc, 1);
  Value rows = RangeOp::create(rewriter, loc, zero, sqLen, one);
  Value cols = RangeOp::create(rewriter, loc, zero, skvLen, one);
  Value offset = SubOp::create(rewriter, loc, skvLen, sqLen);
  Value last = AddOp::create(rewriter, loc, rows, offset);
  Value lastColumn = UnsqueezeOp::create(
      rewriter, loc, last, i64Vector(rewriter, loc, {1}), /*axes=*/nullptr);
  return LessOrEqualOp::create(rewriter, loc, cols, lastColumn);
}

/// Swaps dims 1 and 2 (heads and sequence) of a rank-4 tensor.
Value swapHeadsAndSeq(PatternRewriter &rewriter, Location loc, Value x) {
  return TransposeOp::create(rewriter, loc, x,
                             rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}));
}

/// A bshd attention as the bhsd one between head transposes; the greedy
/// driver then decomposes the bhsd op (DecomposeAttention).
struct DecomposeBSHDAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getLayout() != "bshd")
      return rewriter.notifyMatchFailure(op, "not bshd");
    Location loc = op.getLoc();
    auto bhsd = AttentionOp::create(
        rewriter, loc, swapHeadsAndSeq(rewriter, loc, op.getQ()),
        swapHeadsAndSeq(rewriter, loc, op.getK()),
        swapHeadsAndSeq(rewriter, loc, op.getV()), op.getMask(),
        op.getNumHeadsAttr(), op.getNumKvHeadsAttr(), op.getScaleAttr(),
        op.getCausalAttr(), rewriter.getStringAttr("bhsd"));
    // The declared type may be more static than the inferred one.
    rewriter.replaceOpWithNewOp<TransposeOp>(
        op, op.getType(), bhsd.getResult(),
        rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}));
    return success();
  }
};

struct DecomposeAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getLayout() != "bhsd")
      return rewriter.notifyMatchFailure(op, "not bhsd");
    Location loc = op.getLoc();
    auto element = cast<FloatType>(op.getQ().getType().getElementType());
    int64_t rep = int64_t(op.getNumHeads()) / int64_t(op.getNumKvHeads());
    Value k = repeatHeads(rewriter, loc, op.getK(), rep);
    Value v = repeatHeads(rewriter, loc, op.getV(), rep);

    Value scores = MatMulOp::create(rewriter, loc, op.getQ(),
                                    transposeLastTwo(rewriter, loc, k));
    if (op.getScale().convertToDouble() != 1.0)
      scores =
          MulOp::create(rewriter, loc, scores,
                        floatScalar(rewriter, loc, element, op.getScale()));
    Value lowest;
    auto getLowest = [&] {
      if (!lowest)
        lowest = floatScalar(rewriter, loc, element,
                             APFloat::getLargest(element.getFloatSemantics(),
                                                 /*Negative=*/true));
      return lowest;
    };
    Value mask = op.getMask();
    if (!isNone(mask)) {
      if (cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1))
        scores = WhereOp::create(rewriter, loc, mask, scores, getLowest());
      else
        scores = AddOp::create(rewriter, loc, scores, mask);
    }
    if (op.getCausal())
      scores = WhereOp::create(rewriter, loc,
                               causalKeepMask(rewriter, loc, op.getQ(), k),
                               scores, getLowest());
    Value probs = SoftmaxOp::create(rewriter, loc, scores,
                                    rewriter.getI64IntegerAttr(-1));
    // The declared type may be more static than the inferred one.
    rewriter.replaceOpWithNewOp<MatMulOp>(op, op.getType(), probs, v);
    return success();
  }
};

/// φ(x) for a linear_attention feature map.
Value featureMap(PatternRewriter &rewriter, Location loc, StringRef map,
                 Value x) {
  if (map == "relu")
    return ReluOp::create(rewriter, loc, x);
  if (map == "exp")
    return ExpOp::create(rewriter, loc, x);
  auto element = cast<FloatType>(getElementTypeOrSelf(x.getType()));
  Value elu = EluOp::create(rewriter, loc, x, rewriter.getF32FloatAttr(1.0f));
  return AddOp::create(rewriter, loc, elu,
                       floatScalar(rewriter, loc, element, APFloat(1.0)));
}

struct DecomposeLinearAttention : OpRewritePattern<LinearAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto element = cast<FloatType>(op.getQ().getType().getElementType());
    StringRef map = op.getFeatureMap();
    if (map != "elu1" && map != "relu" && map != "exp")
      return rewriter.notifyMatchFailure(op, "unknown feature map");
    int64_t rep = int64_t(op.getNumHeads()) / int64_t(op.getNumKvHeads());

    Value q = featureMap(rewriter, loc, map, op.getQ());
    // φ is elementwise, so it commutes with the repetition: apply it to the
    // fewer KV heads.
    Value k = repeatHeads(rewriter, loc,
                          featureMap(rewriter, loc, map, op.getK()), rep);
    Value v = repeatHeads(rewriter, loc, op.getV(), rep);

    Value kv =
        MatMulOp::create(rewriter, loc, transposeLastTwo(rewriter, loc, k), v);
    Value num = MatMulOp::create(rewriter, loc, q, kv);
    Value ksum = ReduceSumOp::create(
        rewriter, loc, k, i64Vector(rewriter, loc, {2}),
        rewriter.getI64IntegerAttr(1), rewriter.getI64IntegerAttr(0),
        /*axes=*/nullptr);
    Value den = MatMulOp::create(rewriter, loc, q,
                                 transposeLastTwo(rewriter, loc, ksum));
    den = AddOp::create(rewriter, loc, den,
                        floatScalar(rewriter, loc, element, op.getEps()));
    rewriter.replaceOpWithNewOp<DivOp>(op, op.getType(), num, den);
    return success();
  }
};

} // namespace

void kiln::populateDecomposeAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeAttention, DecomposeBSHDAttention,
               DecomposeLinearAttention>(
      patterns.getContext());
}
