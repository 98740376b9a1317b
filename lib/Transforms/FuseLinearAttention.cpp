//===- FuseLinearAttention.cpp - Fuse linear attention --------------------===//
//
// kiln-fuse-linear-attention: non-causal linear attention ("Transformers are
// RNNs", Katharopoulos et al. 2020) as a PyTorch module exports it becomes
// one kiln.linear_attention. The pattern is rooted at the final Div:
//
//   fq   = φ(Q)                     φ: Add(Elu(x, alpha=1), 1) | Relu | Exp
//   fk   = φ(K) | repeat(φ(K))      (repeat: the GQA forms of
//   AttentionMatchers.h) kv   = MatMul(Transpose(fk, 0,1,3,2), V) num  =
//   MatMul(fq, kv) ksum = ReduceSum(fk, axes=[-2], keepdims=1) z    =
//   MatMul(fq, Transpose(ksum, 0,1,3,2))
//        | ReduceSum(Mul(fq, ksum), axes=[-1], keepdims=1)
//   out  = Div(num, Add(z, eps))    eps a scalar constant (either Add order)
//        | Mul(num, Reciprocal(Add(z, eps))) | Mul(num, Div(1, Add(z, eps)))
//
// Every intermediate has no user outside the pattern (fq and fk exactly
// the two above), so the fused op replaces all of it.
//
//===----------------------------------------------------------------------===//

#include "AttentionMatchers.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSELINEARATTENTION
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using namespace kiln::attention;

namespace {

/// A value with a feature map applied: φ's name and its input.
struct Featured {
  StringRef map;
  Value input;
};

/// Recognises `v` as φ(x) for the feature maps kiln.linear_attention has.
static std::optional<Featured> matchFeatureMap(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto relu = dyn_cast<ReluOp>(op))
    return Featured{"relu", relu->getOperand(0)};
  if (auto exp = dyn_cast<ExpOp>(op))
    return Featured{"exp", exp->getOperand(0)};
  auto add = dyn_cast<AddOp>(op);
  if (!add)
    return std::nullopt;
  for (auto [x, c] :
       {std::pair(add.getA(), add.getB()), std::pair(add.getB(), add.getA())}) {
    auto elu = x.getDefiningOp<EluOp>();
    auto one = getScalarConstant(c);
    if (!elu || !x.hasOneUse() || !one || *one != 1.0 ||
        x.getType() != v.getType() ||
        cast<RankedTensorType>(c.getType()).getRank() > 4 ||
        elu.getAlpha().convertToDouble() != 1.0)
      continue;
    return Featured{"elu1", elu.getX()};
  }
  return std::nullopt;
}

/// True when `v`'s users are exactly the operations in `users` (one use each).
static bool usedOnlyBy(Value v, ArrayRef<Operation *> users) {
  size_t uses = 0;
  for (OpOperand &use : v.getUses()) {
    if (!llvm::is_contained(users, use.getOwner()))
      return false;
    ++uses;
  }
  return uses == users.size();
}

/// The axes of a ReduceSum when they are one constant axis.
static std::optional<int64_t> singleReduceAxis(ReduceSumOp op) {
  SmallVector<int64_t> axes;
  if (auto attr = op.getAxesAttr()) {
    axes.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
  } else if (!isNone(op.getAxesInput())) {
    auto known = getKnownIntValues(op.getAxesInput());
    if (!known)
      return std::nullopt;
    axes = *known;
  }
  if (axes.size() != 1 || ShapedType::isDynamic(axes[0]))
    return std::nullopt;
  int64_t rank = op.getData().getType().getRank();
  return axes[0] < 0 ? axes[0] + rank : axes[0];
}

static bool isSwapLastTwo(TransposeOp t) {
  auto perm = t.getPermAttr();
  return t.getData().getType().getRank() == 4 && perm &&
         perm.asArrayRef() == ArrayRef<int64_t>({0, 1, 3, 2});
}

/// The parts of the normaliser: z and the ops that make it.
struct Normaliser {
  Value ksumInput;                 ///< φK under the ReduceSum
  Operation *ksum;                 ///< the ReduceSum over the sequence
  SmallVector<Operation *> fqUses; ///< the ops reading φQ
};

/// Matches z = φQ · (ΣφK)ᵀ in either form; `fq` must be φQ.
static std::optional<Normaliser> matchNormaliser(Value z, Value fq) {
  if (!z.hasOneUse())
    return std::nullopt;
  auto sumOverSeq = [](Value ksum) -> ReduceSumOp {
    auto reduce = ksum.getDefiningOp<ReduceSumOp>();
    if (!reduce || !ksum.hasOneUse() || reduce.getKeepdims() != 1 ||
        reduce.getData().getType().getRank() != 4 ||
        singleReduceAxis(reduce) != 2)
      return nullptr;
    return reduce;
  };
  // MatMul(φQ, Transpose(ksum)).
  if (auto mm = z.getDefiningOp<MatMulOp>()) {
    auto t = mm.getB().getDefiningOp<TransposeOp>();
    if (mm.getA() != fq || !t || !isSwapLastTwo(t) || !mm.getB().hasOneUse())
      return std::nullopt;
    ReduceSumOp ksum = sumOverSeq(t.getData());
    if (!ksum)
      return std::nullopt;
    return Normaliser{ksum.getData(), ksum, {mm}};
  }
  // ReduceSum(Mul(φQ, ksum), axes = [-1], keepdims = 1).
  if (auto reduce = z.getDefiningOp<ReduceSumOp>()) {
    auto mul = reduce.getData().getDefiningOp<MulOp>();
    if (!mul || !reduce.getData().hasOneUse() || reduce.getKeepdims() != 1 ||
        reduce.getData().getType().getRank() != 4 ||
        singleReduceAxis(reduce) != 3 || mul.getType() != fq.getType())
      return std::nullopt;
    Value other;
    if (mul.getA() == fq)
      other = mul.getB();
    else if (mul.getB() == fq)
      other = mul.getA();
    else
      return std::nullopt;
    ReduceSumOp ksum = sumOverSeq(other);
    if (!ksum)
      return std::nullopt;
    return Normaliser{ksum.getData(), ksum, {mul}};
  }
  return std::nullopt;
}

/// Replaces `root` = numValue / denValue (a Div, or a Mul by the
/// reciprocal) by kiln.linear_attention when the rest of the pattern
/// matches.
static LogicalResult fuseLinearAttention(Operation *root, Value numValue,
                                         Value denValue,
                                         PatternRewriter &rewriter,
                                         int64_t &fused) {
  auto resultType = cast<RankedTensorType>(root->getResult(0).getType());
  auto num = numValue.getDefiningOp<MatMulOp>();
  auto den = denValue.getDefiningOp<AddOp>();
  if (!num || !den || !numValue.hasOneUse() || !denValue.hasOneUse() ||
      resultType != numValue.getType() || resultType.getRank() != 4)
    return rewriter.notifyMatchFailure(root, "not num / (z + eps)");
  Value z;
  std::optional<double> eps;
  for (auto [x, c] :
       {std::pair(den.getA(), den.getB()), std::pair(den.getB(), den.getA())}) {
    auto value = getScalarConstant(c);
    if (value && std::isfinite(*value) && *value >= 0 &&
        x.getType() == denValue.getType() &&
        cast<RankedTensorType>(c.getType()).getRank() <= 4) {
      z = x;
      eps = value;
      break;
    }
  }
  if (!z)
    return rewriter.notifyMatchFailure(root, "no constant eps");

  // num = MatMul(φQ, MatMul(Transpose(φK), V))
  Value fq = num.getA();
  Value kvValue = num.getB();
  auto kv = kvValue.getDefiningOp<MatMulOp>();
  if (!kv || !kvValue.hasOneUse())
    return rewriter.notifyMatchFailure(root, "no kv product");
  auto kt = kv.getA().getDefiningOp<TransposeOp>();
  if (!kt || !isSwapLastTwo(kt) || !kv.getA().hasOneUse())
    return rewriter.notifyMatchFailure(root, "no φKᵀ");
  Value fk = kt.getData();
  Value vRep = kv.getB();

  auto norm = matchNormaliser(z, fq);
  if (!norm || norm->ksumInput != fk)
    return rewriter.notifyMatchFailure(root, "no matching normaliser");
  SmallVector<Operation *> fqUsers = {num};
  fqUsers.append(norm->fqUses);
  if (!usedOnlyBy(fq, fqUsers))
    return rewriter.notifyMatchFailure(root, "φQ has other users");
  if (!usedOnlyBy(fk, {kt, norm->ksum}))
    return rewriter.notifyMatchFailure(root, "φK has other users");

  // Shapes: [B, H, Sq, D] · [B, H, D, Skv] · [B, H, Skv, Dv], no batch
  // broadcasting between the three.
  for (Value x : {fq, fk, vRep})
    if (cast<RankedTensorType>(x.getType()).getRank() != 4)
      return rewriter.notifyMatchFailure(root, "not rank 4");
  DimEquality dims(root);
  for (int64_t d : {0, 1})
    if (!dims.same(fq, d, fk, d) || !dims.same(fk, d, vRep, d))
      return rewriter.notifyMatchFailure(root, "batch dims broadcast");
  int64_t heads = cast<RankedTensorType>(fq.getType()).getDimSize(1);
  if (ShapedType::isDynamic(heads))
    return rewriter.notifyMatchFailure(root, "dynamic number of heads");

  // The feature maps, and K/V before a grouped-query repetition.
  auto phiQ = matchFeatureMap(fq);
  if (!phiQ)
    return rewriter.notifyMatchFailure(root, "Q has no feature map");
  Value k, v = vRep;
  int64_t kvHeads = heads;
  auto rv = matchRepeatedKV(dims, vRep);
  auto groups = [&](const RepeatedKV &r) {
    return heads % r.repeats == 0 &&
           cast<RankedTensorType>(r.source.getType()).getDimSize(1) ==
               heads / r.repeats;
  };
  if (auto phiK = matchFeatureMap(fk)) {
    // φ after the repetition, if any.
    if (phiK->map != phiQ->map)
      return rewriter.notifyMatchFailure(root, "different feature maps");
    k = phiK->input;
    auto rk = matchRepeatedKV(dims, k);
    if (rk && rv && rk->repeats == rv->repeats && groups(*rk) && groups(*rv)) {
      k = rk->source;
      v = rv->source;
      kvHeads = heads / rk->repeats;
    }
  } else if (auto rk = matchRepeatedKV(dims, fk)) {
    // φ before the repetition: V must be repeated alike.
    auto phiK = matchFeatureMap(rk->source);
    if (!phiK || phiK->map != phiQ->map || !rv || rv->repeats != rk->repeats ||
        !groups(*rk) || !groups(*rv))
      return rewriter.notifyMatchFailure(root, "φ(K) repeated unlike V");
    k = phiK->input;
    v = rv->source;
    kvHeads = heads / rk->repeats;
  } else {
    return rewriter.notifyMatchFailure(root, "K has no feature map");
  }
  Location loc =
      rewriter.getFusedLoc({num.getLoc(), den.getLoc(), root->getLoc()});
  auto fusedOp = LinearAttentionOp::create(
      rewriter, loc, resultType, phiQ->input, k, v,
      rewriter.getStringAttr(phiQ->map), rewriter.getF32FloatAttr(float(*eps)),
      rewriter.getI64IntegerAttr(heads), rewriter.getI64IntegerAttr(kvHeads));
  rewriter.replaceOp(root, fusedOp.getResult());
  ++fused;
  return success();
}

/// out = num / (z + eps)
struct FuseLinearAttentionDiv : OpRewritePattern<DivOp> {
  FuseLinearAttentionDiv(MLIRContext *ctx, int64_t &fused)
      : OpRewritePattern<DivOp>(ctx), fused(fused) {}

  LogicalResult matchAndRewrite(DivOp div,
                                PatternRewriter &rewriter) const override {
    return fuseLinearAttention(div, div.getA(), div.getB(), rewriter, fused);
  }

  int64_t &fused;
};

/// out = num * Reciprocal(z + eps) or num * (1 / (z + eps)), either order
/// (the paper's code computes Z = 1 / (...) and multiplies).
struct FuseLinearAttentionMul : OpRewritePattern<MulOp> {
  FuseLinearAttentionMul(MLIRContext *ctx, int64_t &fused)
      : OpRewritePattern<MulOp>(ctx), fused(fused) {}

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    for (auto [num, r] : {std::pair(mul.getA(), mul.getB()),
                          std::pair(mul.getB(), mul.getA())}) {
      if (!r.hasOneUse() || !num.getDefiningOp<MatMulOp>())
        continue;
      Value den;
      if (auto reciprocal = r.getDefiningOp<ReciprocalOp>()) {
        den = reciprocal->getOperand(0);
      } else if (auto div = r.getDefiningOp<DivOp>()) {
        auto one = getScalarConstant(div.getA());
        if (one && *one == 1.0 && div.getType() == div.getB().getType())
          den = div.getB();
      }
      if (den && den.getType() == r.getType())
        return fuseLinearAttention(mul, num, den, rewriter, fused);
    }
    return rewriter.notifyMatchFailure(mul, "not num * (1 / den)");
  }

  int64_t &fused;
};

struct FuseLinearAttentionPass
    : kiln::impl::KilnFuseLinearAttentionBase<FuseLinearAttentionPass> {
  using Base::Base;

  kiln::Statistic numFused{this, "linear-attentions-fused",
                           "kiln.linear_attention ops created"};

  void runOnOperation() override {
    int64_t fused = 0;
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLinearAttentionDiv, FuseLinearAttentionMul>(&getContext(),
                                                                 fused);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("kiln-fuse-linear-attention did not converge");
      return signalPassFailure();
    }
    numFused += fused;
  }
};

} // namespace
