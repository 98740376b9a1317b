//===- FoldRepeatKV.cpp - Grouped-query attention without repeated K/V ----===//
//
// kiln-fold-repeat-kv. Hugging Face's repeat_kv gives every query head its
// own copy of its group's K and V head,
//
//   r = Reshape(Expand(Unsqueeze(x [B, KV, T, D], 2) → [B, KV, rep, T, D])
//               → [B, KV·rep, T, D])
//
// so that attention's two matmuls see H = KV·rep heads on both sides: query
// head h reads KV head h / rep, and the heads of one group are adjacent. A
// group's rep·S query rows can therefore share the one KV head, which is a
// reshape of the queries instead of a copy of the cache:
//
//   MatMul(q [B, H, S, D], Transpose(r))            (scores, [B, H, S, T])
//     → Reshape(MatMul(Reshape(q) [B, KV, rep·S, D], Transpose(x))
//               [B, KV, rep·S, T], [B, H, S, T])
//   MatMul(p [B, H, S, T], r)                        (output, [B, H, S, D])
//     → Reshape(MatMul(Reshape(p) [B, KV, rep·S, T], x), [B, H, S, D])
//
// The transpose may come before the repetition (x is then Kᵀ) or after it,
// and the matmul may be a kiln.fused_matmul without a residual (trans_b,
// alpha, bias and activation act on the last dim or elementwise, which the
// grouping leaves alone). The new shapes are constants: static dims, 0 for
// a dynamic dim copied from the same index, -1 for the dynamic row dim, so
// they hold for symbolic B, S and T. Whether the Expand and the Reshape
// really give h → h / rep is checked dim by dim, on the symbolic dims of
// kiln/Analysis/SymbolicShapes.h where a dim is dynamic.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/SymbolicShapes.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/ShapeInference.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace kiln {
#define GEN_PASS_DEF_KILNFOLDREPEATKV
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Equality of two tensors' dims: of their sizes when both are static, else
/// of their symbolic dims (the analysis is built on first use, on the
/// function as it was before any rewrite).
class DimEquality {
public:
  explicit DimEquality(func::FuncOp fn) : fn(fn) {}

  bool same(Value a, int64_t da, Value b, int64_t db) {
    int64_t sa = cast<RankedTensorType>(a.getType()).getDimSize(da);
    int64_t sb = cast<RankedTensorType>(b.getType()).getDimSize(db);
    if (!ShapedType::isDynamic(sa) && !ShapedType::isDynamic(sb))
      return sa == sb;
    if (!shapes)
      shapes.emplace(fn);
    std::optional<SymbolicDims> xa = shapes->shapeOf(a);
    std::optional<SymbolicDims> xb = shapes->shapeOf(b);
    return xa && xb && (*xa)[da] == (*xb)[db];
  }

private:
  func::FuncOp fn;
  std::optional<SymbolicShapes> shapes;
};

/// `repeated` [B, KV·rep, X, Y] is `source` [B, KV, X, Y] with head h
/// reading source head h / rep.
struct RepeatedHeads {
  Value repeated, source;
  int64_t kvHeads = 0, rep = 0;
};

bool isRankedOfRank(Value v, int64_t rank) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() == rank;
}

/// Matches Reshape(Expand(Unsqueeze(x, [2]))) that repeats x's heads as
/// repeat_kv does (and nothing else: the tiling Unsqueeze(x, [1]), where
/// head h reads head h % KV, is left alone).
std::optional<RepeatedHeads> matchRepeatKV(Value r, DimEquality &dims) {
  auto reshape = r.getDefiningOp<ReshapeOp>();
  if (!reshape || !isRankedOfRank(r, 4))
    return std::nullopt;
  auto expand = reshape.getData().getDefiningOp<ExpandOp>();
  if (!expand || !isRankedOfRank(expand.getResult(), 5))
    return std::nullopt;
  auto unsqueeze = expand.getInput().getDefiningOp<UnsqueezeOp>();
  if (!unsqueeze)
    return std::nullopt;
  Value x = unsqueeze.getData();
  if (!isRankedOfRank(x, 4))
    return std::nullopt;
  std::optional<SmallVector<int64_t>> axes;
  if (auto attr = unsqueeze.getAxesAttr())
    axes = SmallVector<int64_t>(attr.asArrayRef());
  else if (!isNone(unsqueeze.getAxesInput()))
    axes = getKnownIntValues(unsqueeze.getAxesInput());
  if (!axes || axes->size() != 1 || ((*axes)[0] != 2 && (*axes)[0] != -3))
    return std::nullopt;

  Value e = expand.getResult();
  auto xType = cast<RankedTensorType>(x.getType());
  auto eType = cast<RankedTensorType>(e.getType());
  auto rType = cast<RankedTensorType>(r.getType());
  int64_t kv = xType.getDimSize(1), rep = eType.getDimSize(2);
  int64_t heads = rType.getDimSize(1);
  if (ShapedType::isDynamic(kv) || ShapedType::isDynamic(rep) ||
      ShapedType::isDynamic(heads) || rep < 2 || heads != kv * rep)
    return std::nullopt;
  // The Expand broadcasts only the new dim: e[b, g, j, t, d] = x[b, g, t, d].
  if (eType.getDimSize(1) != kv || !dims.same(e, 0, x, 0) ||
      !dims.same(e, 3, x, 2) || !dims.same(e, 4, x, 3))
    return std::nullopt;
  // The Reshape keeps B, T, D and merges (KV, rep) in row-major order:
  // r[b, g·rep + j, t, d] = e[b, g, j, t, d].
  if (!dims.same(r, 0, x, 0) || !dims.same(r, 2, x, 2) ||
      !dims.same(r, 3, x, 3))
    return std::nullopt;
  return RepeatedHeads{r, x, kv, rep};
}

bool isSwapLastTwo(TransposeOp transpose) {
  auto perm = transpose.getPerm();
  return perm && perm->size() == 4 &&
         llvm::equal(*perm, ArrayRef<int64_t>{0, 1, 3, 2});
}

/// A matmul whose B operand is repeat_kv(x) or its transpose.
struct Match {
  Operation *op;
  RepeatedHeads heads;
  TransposeOp transpose; ///< Transpose(repeat_kv(x)), or null
};

std::optional<Match> matchMatmul(Operation *op, DimEquality &dims) {
  if (auto fused = dyn_cast<FusedMatMulOp>(op)) {
    // A residual has the [B, H, S, N] shape the grouping changes.
    if (!isNone(fused.getResidual()))
      return std::nullopt;
  } else if (!isa<MatMulOp>(op)) {
    return std::nullopt;
  }
  Value a = op->getOperand(0), b = op->getOperand(1);
  Value y = op->getResult(0);
  if (!isRankedOfRank(a, 4) || !isRankedOfRank(b, 4) || !isRankedOfRank(y, 4))
    return std::nullopt;
  TransposeOp transpose = b.getDefiningOp<TransposeOp>();
  if (transpose && !isSwapLastTwo(transpose))
    transpose = nullptr;
  std::optional<RepeatedHeads> heads =
      matchRepeatKV(transpose ? transpose.getData() : b, dims);
  if (!heads)
    return std::nullopt;
  // Query head h (A's dim 1) meets head h of the repetition: no broadcast.
  int64_t h = heads->kvHeads * heads->rep;
  if (cast<RankedTensorType>(a.getType()).getDimSize(1) != h ||
      cast<RankedTensorType>(y.getType()).getDimSize(1) != h ||
      !dims.same(a, 0, heads->repeated, 0) || !dims.same(y, 0, a, 0) ||
      !dims.same(y, 2, a, 2))
    return std::nullopt;
  return Match{op, *heads, transpose};
}

Value i64Vector(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({int64_t(values.size())}, b.getI64Type());
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, values));
}

/// Reshape of `x` [B, H, S, N] to [B, heads, S·H/heads, N]: H/heads·S rows
/// per head (grouping) or back (ungrouping). The target is a constant: a
/// static dim, else 0 (the input's dim at that index) for B and N, -1 for
/// the rows.
Value regroupHeads(OpBuilder &b, Location loc, Value x, int64_t heads,
                   RankedTensorType resultType) {
  SmallVector<int64_t> target;
  for (int64_t d = 0; d < 4; ++d) {
    int64_t size = resultType.getDimSize(d);
    if (!ShapedType::isDynamic(size))
      target.push_back(size);
    else
      target.push_back(d == 2 ? -1 : 0);
  }
  return ReshapeOp::create(b, loc, resultType, x, i64Vector(b, loc, target),
                           b.getI64IntegerAttr(0));
}

/// [B, H, S, N] as [B, KV, rep·S, N].
RankedTensorType groupedType(RankedTensorType type, int64_t kv, int64_t rep) {
  int64_t rows = type.getDimSize(2);
  return RankedTensorType::get({type.getDimSize(0), kv,
                                ShapedType::isDynamic(rows) ? rows : rep * rows,
                                type.getDimSize(3)},
                               type.getElementType());
}

struct FoldRepeatKVPass : kiln::impl::KilnFoldRepeatKVBase<FoldRepeatKVPass> {
  using Base::Base;

  kiln::Statistic numFolded{this, "matmuls-grouped",
                            "matmuls that read the KV heads, not repeat_kv"};
  kiln::Statistic numRepeatsErased{
      this, "repeats-erased", "repeat_kv copies (Expand) left without users"};

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    DimEquality dims(fn);
    // Match everything first: the symbolic dims describe the function as it
    // was before the rewrites.
    SmallVector<Match> matches;
    fn.walk([&](Operation *op) {
      if (std::optional<Match> m = matchMatmul(op, dims))
        matches.push_back(*m);
    });

    IRRewriter rewriter(&getContext());
    for (Match &m : matches) {
      Operation *op = m.op;
      Location loc = op->getLoc();
      rewriter.setInsertionPoint(op);
      int64_t kv = m.heads.kvHeads, rep = m.heads.rep;
      auto aType = cast<RankedTensorType>(op->getOperand(0).getType());
      auto yType = cast<RankedTensorType>(op->getResult(0).getType());
      Value grouped = regroupHeads(rewriter, loc, op->getOperand(0), kv,
                                   groupedType(aType, kv, rep));
      Value b = m.heads.source;
      if (m.transpose)
        b = TransposeOp::create(rewriter, loc, b, m.transpose.getPermAttr());
      Operation *product = rewriter.clone(*op);
      product->setOperand(0, grouped);
      product->setOperand(1, b);
      product->getResult(0).setType(groupedType(yType, kv, rep));
      Value y = regroupHeads(rewriter, loc, product->getResult(0), kv * rep,
                             yType);
      rewriter.replaceOp(op, y);
      ++numFolded;
    }
    // The repetitions (and their transposes) that no other op reads; one
    // repetition may feed several matmuls, so each op is visited once.
    llvm::SetVector<Operation *> chain;
    for (Match &m : matches) {
      if (m.transpose)
        chain.insert(m.transpose);
      auto reshape = m.heads.repeated.getDefiningOp<ReshapeOp>();
      auto expand = reshape.getData().getDefiningOp<ExpandOp>();
      chain.insert(reshape);
      chain.insert(expand);
      chain.insert(expand.getInput().getDefiningOp());
    }
    for (bool erased = true; erased;) {
      erased = false;
      for (Operation *op : chain.takeVector()) {
        if (!op->use_empty()) {
          chain.insert(op);
          continue;
        }
        if (isa<ExpandOp>(op))
          ++numRepeatsErased;
        op->erase();
        erased = true;
      }
    }
  }
};

} // namespace
