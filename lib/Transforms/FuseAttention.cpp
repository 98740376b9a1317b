//===- FuseAttention.cpp - Fuse softmax attention into kiln.attention -----===//
//
// kiln-fuse-attention: MatMul(Q, Kᵀ) · scale (+ mask) → Softmax → MatMul(·, V)
// in the form PyTorch exports it becomes one kiln.attention. The pattern is
// rooted at the last MatMul and walks up:
//
//   probs  = Softmax(masked, axis = -1)           one user: the root
//   masked = Where(keep, scaled, c)               c <= -1e4 or -inf, or
//          | Where(drop, c, scaled)                (masked_fill), or
//          | Add(scaled, mask) | Add(mask, scaled) | scaled
//   scaled = Div(s, c) | Mul(s, c) | Mul(c, s) ... (scalar constants) | s
//   s      = MatMul(Q', Kt)                        Q' = Q scaled, Kt = Kᵀ
//                                                  (Transpose, maybe scaled)
//
// Every value between the first MatMul and the root has one user, so the
// fused op replaces all of it. K and V repeated for grouped-query attention
// (AttentionMatchers.h) are read before the repetition. A constant mask
// that is exactly the causal pattern becomes causal = true.
//
// Then the head transposes are absorbed: a bhsd attention whose Q, K and V
// are each Transpose(x, [0, 2, 1, 3]) of a [B, S, H, D] tensor (maybe
// through a kiln.rotary_embedding, whose tables are permuted to match) and
// whose result is only transposed back by [0, 2, 1, 3] becomes a bshd
// attention on the untransposed tensors.
//
//===----------------------------------------------------------------------===//

#include "AttentionMatchers.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEATTENTION
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using namespace kiln::attention;

namespace {

/// Counts of what the patterns did, copied into the pass statistics.
struct FuseAttentionCounts {
  int64_t fused = 0, gqa = 0, causal = 0, absorbed = 0;
};

/// A masked score is "very negative" when its softmax weight is 0 in any
/// float type: -inf, the lowest finite value, or at most -1e4.
constexpr double kVeryNegative = -1e4;

/// Reads a scalar float constant usable as a scale: one element, rank <= 4
/// (so it never enlarges the scores), finite and nonzero.
static std::optional<double> getScaleConstant(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() > 4 || !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  auto c = getScalarConstant(v);
  if (!c || !std::isfinite(*c) || *c == 0.0)
    return std::nullopt;
  return c;
}

/// If `v` is `x * c`, `c * x` or `x / c` with a scalar constant `c` and the
/// type of `x`, returns x and multiplies `scale` by c (or 1/c).
static std::optional<Value> peelScale(Value v, double &scale) {
  Operation *op = v.getDefiningOp();
  if (!op || op->getNumOperands() != 2)
    return std::nullopt;
  auto sameType = [&](Value x) { return x.getType() == v.getType(); };
  if (auto mul = dyn_cast<MulOp>(op)) {
    for (auto [x, c] :
         {std::pair(mul.getA(), mul.getB()), std::pair(mul.getB(), mul.getA())})
      if (sameType(x))
        if (auto factor = getScaleConstant(c)) {
          scale *= *factor;
          return x;
        }
  } else if (auto div = dyn_cast<DivOp>(op)) {
    if (sameType(div.getA()))
      if (auto divisor = getScaleConstant(div.getB())) {
        scale /= *divisor;
        return div.getA();
      }
  }
  return std::nullopt;
}

/// Follows single-use scale ops down from `v`, accumulating into `scale`.
static Value peelScales(Value v, double &scale, bool requireOneUse) {
  while (true) {
    if (requireOneUse && !v.hasOneUse())
      return v;
    double s = scale;
    auto inner = peelScale(v, s);
    if (!inner)
      return v;
    scale = s;
    v = *inner;
  }
}

/// The matched scores: Q, the value holding K (transposed by `kPerm` into
/// [B, H, S, D]) and the product of every scale on the way.
struct Scores {
  Value q;
  Value kSource;
  SmallVector<int64_t, 4> kPerm;
  double scale = 1.0;
};

/// Matches `scaled` = (scales of) MatMul(Q', Kt) with one user at each step.
static std::optional<Scores> matchScores(DimEquality &dims, Value scaled) {
  Scores m;
  if (!scaled.hasOneUse())
    return std::nullopt;
  Value s = peelScales(scaled, m.scale, /*requireOneUse=*/true);
  auto qk = s.getDefiningOp<MatMulOp>();
  if (!qk || !s.hasOneUse())
    return std::nullopt;
  auto qType = dyn_cast<RankedTensorType>(qk.getA().getType());
  auto ktType = dyn_cast<RankedTensorType>(qk.getB().getType());
  if (!qType || !ktType || qType.getRank() != 4 || ktType.getRank() != 4 ||
      !isa<FloatType>(qType.getElementType()))
    return std::nullopt;
  // No broadcasting of the batch and head dims between Q and Kᵀ.
  if (!dims.same(qk.getA(), 0, qk.getB(), 0) ||
      !dims.same(qk.getA(), 1, qk.getB(), 1))
    return std::nullopt;

  // Q: scales on Q alone are part of the attention when Q' is not shared.
  m.q = peelScales(qk.getA(), m.scale, /*requireOneUse=*/true);

  // Kᵀ: K = transpose(cur, perm), starting from the swap of the last two
  // dims, composed with each single-use Transpose and scale on the way.
  Value cur = qk.getB();
  m.kPerm = {0, 1, 3, 2};
  while (cur.hasOneUse()) {
    double s2 = m.scale;
    if (auto inner = peelScale(cur, s2)) {
      m.scale = s2;
      cur = *inner;
      continue;
    }
    auto transpose = cur.getDefiningOp<TransposeOp>();
    if (!transpose)
      break;
    SmallVector<int64_t, 4> p;
    if (auto perm = transpose.getPermAttr())
      p.assign(perm.asArrayRef().begin(), perm.asArrayRef().end());
    else
      p = {3, 2, 1, 0};
    SmallVector<int64_t, 4> composed;
    for (int64_t i : m.kPerm)
      composed.push_back(p[i]);
    m.kPerm = composed;
    cur = transpose.getData();
  }
  m.kSource = cur;
  return m;
}

/// True when element (i, j) of the last two dims of `c` (shape [..., Sq,
/// Skv] with leading 1s) is "kept" exactly when j <= i + (Skv - Sq).
/// `kept(value)` says whether an element keeps its score; `masked(value)`
/// whether it masks it; every element must be one or the other.
template <typename KeptFn, typename MaskedFn>
static bool isCausalPattern(const ConstTensor &c, int64_t sq, int64_t skv,
                            KeptFn kept, MaskedFn masked) {
  size_t rank = c.shape.size();
  if (rank < 2 || rank > 4 || c.shape[rank - 2] != sq ||
      c.shape[rank - 1] != skv)
    return false;
  for (size_t i = 0; i + 2 < rank; ++i)
    if (c.shape[i] != 1)
      return false;
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < skv; ++j) {
      double v = c.values[i * skv + j];
      bool keep = j <= i + (skv - sq);
      if (keep ? !kept(v) : !masked(v))
        return false;
    }
  return true;
}

/// A mask cut at run time from a constant one: `Slice`s from 0, step 1,
/// along the last two axes of a constant [1.., M, M] (nanoGPT's
/// `bias[:, :, :T, :T]` under a dynamic sequence length), optionally
/// compared by `Equal(window, z)` (masked_fill(bias == 0, -inf)).
struct MaskWindow {
  ConstTensor full;               ///< the constant before the slices
  std::optional<double> equalTo;  ///< z of the Equal, if any
};

static std::optional<MaskWindow> matchMaskWindow(Value mask) {
  MaskWindow w;
  Value v = mask;
  if (auto eq = v.getDefiningOp<EqualOp>()) {
    auto z = getScalarConstant(eq.getB());
    if (!z)
      return std::nullopt;
    w.equalTo = *z;
    v = eq.getA();
  }
  auto type = cast<RankedTensorType>(v.getType());
  int64_t rank = type.getRank();
  bool sliced = false;
  while (auto slice = v.getDefiningOp<SliceOp>()) {
    auto starts = getKnownIntValues(slice.getStarts());
    auto axes = isNone(slice.getAxes())
                    ? std::optional<SmallVector<int64_t>>()
                    : getKnownIntValues(slice.getAxes());
    if (!starts || !axes || starts->size() != axes->size() ||
        llvm::any_of(*starts, [](int64_t x) { return x != 0; }))
      return std::nullopt;
    if (!isNone(slice.getSteps())) {
      auto steps = getKnownIntValues(slice.getSteps());
      if (!steps || llvm::any_of(*steps, [](int64_t x) { return x != 1; }))
        return std::nullopt;
    }
    for (int64_t a : *axes)
      if (a != rank - 2 && a != rank - 1 && a != -2 && a != -1)
        return std::nullopt;
    v = slice.getData();
    sliced = true;
  }
  if (!sliced)
    return std::nullopt;
  auto c = evaluateConstant(v);
  if (!c || c->shape.size() != size_t(rank) ||
      c->shape[rank - 2] != c->shape[rank - 1])
    return std::nullopt;
  w.full = std::move(*c);
  return w;
}

/// True when `mask` is a run-time window of a constant causal mask whose
/// top-left [S, S] is causal for every S, over square scores ([.., S, S]:
/// Sq = Skv, so the window's top-left alignment is the bottom-right one
/// that `causal` means). `keepOf(maskValue)` says whether a mask element
/// (after the window's Equal, if any) keeps its score.
template <typename KeepFn>
static bool isCausalWindow(DimEquality &dims, Value mask, Value scores,
                           KeepFn keepOf) {
  auto mt = cast<RankedTensorType>(mask.getType());
  int64_t r = mt.getRank();
  if (r < 2 || !dims.same(scores, 2, scores, 3) ||
      !dims.same(mask, r - 2, scores, 2) || !dims.same(mask, r - 1, scores, 3))
    return false;
  std::optional<MaskWindow> w = matchMaskWindow(mask);
  if (!w)
    return false;
  int64_t m = w->full.shape.back();
  auto element = [&](double v) {
    return w->equalTo ? double(v == *w->equalTo) : v;
  };
  return isCausalPattern(
      w->full, m, m, [&](double v) { return keepOf(element(v)); },
      [&](double v) { return !keepOf(element(v)); });
}

/// The mask level of the pattern.
struct Mask {
  Value scores;  ///< the scaled scores under the mask
  Value operand; ///< kept as the op's mask operand; null if none
  bool causal = false;
  bool inverted = false; ///< `operand` is true where keys are dropped
};

/// Recognises `masked` (the softmax input) as a masked or plain score.
/// Tries each reading in turn (Where, either form; Add, either operand as
/// the mask; no mask) until the scores below it match.
static std::optional<std::pair<Mask, Scores>>
matchMaskAndScores(DimEquality &dims, Value masked) {
  auto scoresType = cast<RankedTensorType>(masked.getType());
  int64_t sq = scoresType.getDimSize(2), skv = scoresType.getDimSize(3);
  bool staticSeq = !ShapedType::isDynamic(sq) && !ShapedType::isDynamic(skv);

  if (auto where = masked.getDefiningOp<WhereOp>()) {
    if (!masked.hasOneUse() || !broadcastsInto(dims, where.getCondition(), masked))
      return std::nullopt;
    // Where(keep, scores, fill) as torch.where emits it, or
    // Where(drop, fill, scores) as masked_fill(drop, fill) does.
    for (bool inverted : {false, true}) {
      Value x = inverted ? where.getY() : where.getX();
      Value fillValue = inverted ? where.getX() : where.getY();
      auto fill = getScalarConstant(fillValue);
      if (x.getType() != masked.getType() || !fill || *fill > kVeryNegative ||
          cast<RankedTensorType>(fillValue.getType()).getRank() > 4)
        continue;
      auto scores = matchScores(dims, x);
      if (!scores)
        continue;
      Mask mask{x, where.getCondition(), false, inverted};
      auto keeps = [&](double v) { return (v != 0.0) != inverted; };
      if (staticSeq) {
        if (auto c = evaluateConstant(where.getCondition()))
          if (isCausalPattern(*c, sq, skv, keeps,
                              [&](double v) { return !keeps(v); }))
            mask = Mask{x, Value(), true, false};
      } else if (isCausalWindow(dims, where.getCondition(), x, keeps)) {
        mask = Mask{x, Value(), true, false};
      }
      return std::pair(mask, *scores);
    }
    return std::nullopt;
  }

  if (auto add = masked.getDefiningOp<AddOp>()) {
    if (!masked.hasOneUse())
      return std::nullopt;
    for (auto [x, m] : {std::pair(add.getA(), add.getB()),
                        std::pair(add.getB(), add.getA())}) {
      if (x.getType() != masked.getType() || !broadcastsInto(dims, m, x))
        continue;
      auto scores = matchScores(dims, x);
      if (!scores)
        continue;
      Mask mask{x, m, false, false};
      if (staticSeq) {
        if (auto c = evaluateConstant(m))
          if (isCausalPattern(
                  *c, sq, skv, [](double v) { return v == 0.0; },
                  [](double v) { return v <= kVeryNegative; }))
            mask = Mask{x, Value(), true, false};
      } else if (std::optional<MaskWindow> w = matchMaskWindow(m);
                 w && !w->equalTo &&
                 isCausalWindow(dims, m, x,
                                [](double v) { return v == 0.0; })) {
        // An additive window: 0 keeps, a very negative value masks (and
        // nothing else: isCausalPattern checks every element).
        if (llvm::all_of(w->full.values, [](double v) {
              return v == 0.0 || v <= kVeryNegative;
            }))
          mask = Mask{x, Value(), true, false};
      }
      return std::pair(mask, *scores);
    }
    return std::nullopt;
  }

  auto scores = matchScores(dims, masked);
  if (!scores)
    return std::nullopt;
  return std::pair(Mask{masked, Value(), false, false}, *scores);
}

struct FuseAttentionPattern : OpRewritePattern<MatMulOp> {
  FuseAttentionPattern(MLIRContext *ctx, FuseAttentionCounts &counts)
      : OpRewritePattern<MatMulOp>(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(MatMulOp pv,
                                PatternRewriter &rewriter) const override {
    auto softmax = pv.getA().getDefiningOp<SoftmaxOp>();
    if (!softmax || !pv.getA().hasOneUse())
      return rewriter.notifyMatchFailure(pv, "A is not a single-use Softmax");
    auto probsType = softmax.getType();
    auto vType = cast<RankedTensorType>(pv.getB().getType());
    if (probsType.getRank() != 4 || vType.getRank() != 4)
      return rewriter.notifyMatchFailure(pv, "not rank 4");
    int64_t axis = softmax.getAxis();
    if (axis != -1 && axis != 3)
      return rewriter.notifyMatchFailure(pv, "softmax is not over the keys");
    DimEquality dims(pv);
    if (!dims.same(pv.getA(), 0, pv.getB(), 0) ||
        !dims.same(pv.getA(), 1, pv.getB(), 1))
      return rewriter.notifyMatchFailure(pv, "probs and V broadcast");

    auto matched = matchMaskAndScores(dims, softmax.getInput());
    if (!matched)
      return rewriter.notifyMatchFailure(pv, "no attention scores");
    auto &[mask, scores] = *matched;

    auto qType = cast<RankedTensorType>(scores.q.getType());
    int64_t heads = qType.getDimSize(1);
    if (ShapedType::isDynamic(heads))
      return rewriter.notifyMatchFailure(pv, "dynamic number of heads");

    // K and V before a grouped-query repetition, when both are repeated
    // alike; otherwise the repeated tensors themselves (kv-heads = heads).
    bool kIdentity = scores.kPerm == ArrayRef<int64_t>({0, 1, 2, 3});
    Value k = scores.kSource, v = pv.getB();
    int64_t kvHeads = heads;
    if (kIdentity) {
      auto rk = matchRepeatedKV(dims, k), rv = matchRepeatedKV(dims, v);
      if (rk && rv && rk->repeats == rv->repeats && heads % rk->repeats == 0 &&
          cast<RankedTensorType>(rk->source.getType()).getDimSize(1) ==
              heads / rk->repeats &&
          cast<RankedTensorType>(rv->source.getType()).getDimSize(1) ==
              heads / rk->repeats) {
        k = rk->source;
        v = rv->source;
        kvHeads = heads / rk->repeats;
      }
    }

    Location loc = rewriter.getFusedLoc(
        {scores.q.getLoc(), softmax.getLoc(), pv.getLoc()});
    if (!kIdentity) {
      auto permuted = TransposeOp::create(
          rewriter, loc, k, rewriter.getDenseI64ArrayAttr(scores.kPerm));
      k = permuted.getResult();
    }
    Value maskOperand = mask.operand;
    if (!maskOperand)
      maskOperand = NoneOp::create(rewriter, loc);
    else if (mask.inverted)
      maskOperand = NotOp::create(rewriter, loc, maskOperand);
    auto fused = AttentionOp::create(
        rewriter, loc, pv.getType(), scores.q, k, v, maskOperand,
        rewriter.getI64IntegerAttr(heads), rewriter.getI64IntegerAttr(kvHeads),
        rewriter.getF32FloatAttr(float(scores.scale)),
        rewriter.getBoolAttr(mask.causal), rewriter.getStringAttr("bhsd"));
    rewriter.replaceOp(pv, fused.getResult());
    ++counts.fused;
    counts.gqa += kvHeads < heads;
    counts.causal += mask.causal;
    return success();
  }

  FuseAttentionCounts &counts;
};

/// The permutation between the [B, H, S, D] and [B, S, H, D] layouts (its
/// own inverse).
constexpr int64_t kHeadSwap[4] = {0, 2, 1, 3};

/// True when `t` is a Transpose by exactly kHeadSwap.
static bool isHeadSwap(TransposeOp t) {
  auto perm = t.getPermAttr();
  return perm && perm.asArrayRef() == ArrayRef<int64_t>(kHeadSwap);
}

/// One bhsd input of an attention that can be read in bshd instead:
/// `operand = [rope](Transpose(source, kHeadSwap))`.
struct HeadInput {
  Value source;                ///< the [B, S, H, D] tensor
  RotaryEmbeddingOp rope;      ///< null when there is none
};

/// Matches a single-use Transpose(x, kHeadSwap) as `operand`, or a
/// single-use kiln.rotary_embedding of a single-use such Transpose.
static std::optional<HeadInput> matchHeadInput(Value operand) {
  if (!operand.hasOneUse())
    return std::nullopt;
  HeadInput in;
  Value x = operand;
  if (auto rope = x.getDefiningOp<RotaryEmbeddingOp>()) {
    in.rope = rope;
    x = rope.getX();
    // The rope must not enlarge or reshape its input (its verifier says so;
    // checked again since the rewrite relies on it).
    if (x.getType() != operand.getType() || !x.hasOneUse())
      return std::nullopt;
  }
  auto transpose = x.getDefiningOp<TransposeOp>();
  if (!transpose || !isHeadSwap(transpose))
    return std::nullopt;
  in.source = transpose.getData();
  return in;
}

/// `table` (a rotary cos/sin table broadcasting to [B, H, S, D]) rewritten
/// to broadcast the same way to [B, S, H, D]: conceptually padded to rank 4
/// with leading 1s and transposed by kHeadSwap. When one of the swapped dims
/// is 1 the transpose moves no data, so a Reshape does it (e.g. [S, D] →
/// [S, 1, D]); otherwise Unsqueeze to rank 4, then Transpose. Constant
/// tables fold (kiln-constant-fold).
static Value permuteTable(PatternRewriter &rewriter, Location loc,
                          Value table) {
  auto type = cast<RankedTensorType>(table.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t, 4> padded(4 - rank, 1);
  llvm::append_range(padded, type.getShape());
  if (type.hasStaticShape() && (padded[1] == 1 || padded[2] == 1)) {
    SmallVector<int64_t, 4> target = {padded[0], padded[2], padded[1],
                                      padded[3]};
    // Leading 1s do not change a broadcast to a rank-4 tensor; drop them.
    size_t lead = 0;
    while (lead + 1 < target.size() && target[lead] == 1)
      ++lead;
    ArrayRef<int64_t> shape = ArrayRef(target).drop_front(lead);
    if (shape == type.getShape())
      return table;
    auto shapeType =
        RankedTensorType::get({int64_t(shape.size())}, rewriter.getI64Type());
    Value shapeConst = ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(shapeType, shape));
    // allowzero: a 0 in the target is a real (empty) dim, not "copy".
    return ReshapeOp::create(rewriter, loc, table, shapeConst,
                             rewriter.getI64IntegerAttr(1));
  }
  Value x = table;
  if (rank < 4) {
    SmallVector<int64_t, 4> axes;
    for (int64_t i = 0; i < 4 - rank; ++i)
      axes.push_back(i);
    auto axesType =
        RankedTensorType::get({int64_t(axes.size())}, rewriter.getI64Type());
    Value axesConst =
        ConstantOp::create(rewriter, loc, DenseElementsAttr::get(axesType,
                                                                 ArrayRef(axes)));
    x = UnsqueezeOp::create(rewriter, loc, x, axesConst, /*axes=*/nullptr);
  }
  return TransposeOp::create(rewriter, loc, x,
                             rewriter.getDenseI64ArrayAttr(kHeadSwap));
}

/// bhsd attention(Transpose(q), Transpose(k), Transpose(v)) followed by
/// Transpose(·, [0, 2, 1, 3]) → bshd attention(q, k, v). A rotary embedding
/// between an input transpose and the attention is moved above the
/// transpose with its tables permuted. All three inputs must match, and
/// every user of the result must be the transpose back.
struct AbsorbHeadTransposes : OpRewritePattern<AttentionOp> {
  AbsorbHeadTransposes(MLIRContext *ctx, FuseAttentionCounts &counts)
      : OpRewritePattern<AttentionOp>(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getLayout() != "bhsd")
      return rewriter.notifyMatchFailure(op, "not bhsd");
    Value y = op.getY();
    if (y.use_empty())
      return rewriter.notifyMatchFailure(op, "result unused");
    Type outType;
    for (Operation *user : y.getUsers()) {
      auto t = dyn_cast<TransposeOp>(user);
      if (!t || !isHeadSwap(t) || (outType && t.getType() != outType))
        return rewriter.notifyMatchFailure(
            op, "a user is not the transpose back to [B, S, H, D]");
      outType = t.getType();
    }
    std::optional<HeadInput> inputs[3] = {matchHeadInput(op.getQ()),
                                          matchHeadInput(op.getK()),
                                          matchHeadInput(op.getV())};
    for (auto &in : inputs)
      if (!in)
        return rewriter.notifyMatchFailure(
            op, "Q, K or V is not a single-use head transpose");

    // Q and K usually share their tables: permute each table once, so the
    // folded constants are shared too.
    llvm::SmallDenseMap<Value, Value, 4> permuted;
    auto getPermuted = [&](Value table, Location loc) {
      Value &p = permuted[table];
      if (!p)
        p = permuteTable(rewriter, loc, table);
      return p;
    };
    SmallVector<Value, 3> operands;
    for (auto &in : inputs) {
      if (!in->rope) {
        operands.push_back(in->source);
        continue;
      }
      Location loc = in->rope.getLoc();
      Value cos = getPermuted(in->rope.getCos(), loc);
      Value sin = getPermuted(in->rope.getSin(), loc);
      operands.push_back(
          RotaryEmbeddingOp::create(rewriter, loc, in->source, cos, sin));
    }
    Location loc = rewriter.getFusedLoc(
        {op.getLoc(), (*y.getUsers().begin())->getLoc()});
    auto fused = AttentionOp::create(
        rewriter, loc, outType, operands[0], operands[1], operands[2],
        op.getMask(), op.getNumHeadsAttr(), op.getNumKvHeadsAttr(),
        op.getScaleAttr(), op.getCausalAttr(), rewriter.getStringAttr("bshd"));
    for (Operation *user : llvm::make_early_inc_range(y.getUsers()))
      rewriter.replaceOp(user, fused.getResult());
    rewriter.eraseOp(op);
    ++counts.absorbed;
    return success();
  }

  FuseAttentionCounts &counts;
};

struct FuseAttentionPass
    : kiln::impl::KilnFuseAttentionBase<FuseAttentionPass> {
  using Base::Base;

  kiln::Statistic numFused{this, "attentions-fused",
                           "kiln.attention ops created"};
  kiln::Statistic numGQA{this, "gqa-recognised",
                         "Fused attentions with kv-heads < heads"};
  kiln::Statistic numCausal{this, "causal-masks", "Masks recognised as causal"};
  kiln::Statistic numAbsorbed{
      this, "head-transposes-absorbed",
      "Attentions that absorbed their head transposes (now bshd)"};

  void runOnOperation() override {
    FuseAttentionCounts counts;
    // Fusion first, so the absorption sees every attention complete
    // (including the K transpose the fusion may create).
    RewritePatternSet fusion(&getContext());
    fusion.add<FuseAttentionPattern>(&getContext(), counts);
    RewritePatternSet absorption(&getContext());
    absorption.add<AbsorbHeadTransposes>(&getContext(), counts);
    if (failed(applyPatternsGreedily(getOperation(), std::move(fusion))) ||
        failed(applyPatternsGreedily(getOperation(), std::move(absorption)))) {
      getOperation().emitError("kiln-fuse-attention did not converge");
      return signalPassFailure();
    }
    numFused += counts.fused;
    numGQA += counts.gqa;
    numCausal += counts.causal;
    numAbsorbed += counts.absorbed;
  }
};

} // namespace
