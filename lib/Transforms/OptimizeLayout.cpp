//===- OptimizeLayout.cpp - kiln-optimize-layout --------------------------===//
//
// The pass runs in four steps:
//  1. prefer-nhwc: Conv, MaxPool (indices unused), AveragePool and
//     GlobalAveragePool become their channels-last ops between a transpose
//     NCHW->NHWC and one back; constant filters are transposed to OHWI at
//     compile time.
//  2. Transpose sinking (TransposeSinking.cpp) until nothing moves: the
//     transposes between consecutive channels-last ops meet and cancel, and
//     those left sit at the graph's edges or before ops they cannot pass.
//  3. A transpose that only moves dims of size 1 is a reshape and becomes
//     one (GlobalAveragePool's N x 1 x 1 x C going back to NCHW before a
//     Flatten).
//  4. matmul-weight-layout=nk: constant MatMul/Gemm weights are stored N x K
//     and read with Gemm transB = 1.
//
//===----------------------------------------------------------------------===//

#include "LayoutUtils.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"


namespace kiln {
#define GEN_PASS_DEF_KILNOPTIMIZELAYOUT
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using namespace kiln::layout;

namespace {

/// The permutation that moves dim 1 (channels) of a rank-`rank` tensor last.
SmallVector<int64_t> channelsLastPermutation(int64_t rank) {
  SmallVector<int64_t> perm{0};
  for (int64_t i = 2; i < rank; ++i)
    perm.push_back(i);
  perm.push_back(1);
  return perm;
}

/// Rewrites the channels-first ops of a function into channels-last ones.
class ChannelsLastConverter {
public:
  ChannelsLastConverter(MLIRContext *ctx, LayoutCounters &counters)
      : rewriter(ctx), counters(counters) {}

  /// Converts every convertible op of `func`; returns how many.
  int64_t run(func::FuncOp func) {
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<ConvOp, MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp>(op))
        ops.push_back(op);
    });
    int64_t converted = 0;
    for (Operation *op : ops)
      converted += succeeded(convert(op));
    for (Operation *constant : oldFilters)
      if (constant->use_empty())
        rewriter.eraseOp(constant);
    return converted;
  }

private:
  LogicalResult convert(Operation *op) {
    auto x = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (!x || x.getRank() < 3)
      return failure();
    if (auto pool = dyn_cast<MaxPoolOp>(op); pool && !pool.getIndices().use_empty())
      return failure(); // The NHWC op has no indices.
    int64_t rank = x.getRank();
    SmallVector<int64_t> toLast = channelsLastPermutation(rank);
    SmallVector<int64_t> toFirst = invertPermutation(toLast);

    rewriter.setInsertionPoint(op);
    Location loc = op->getLoc();
    SmallVector<Value> operands(op->getOperands());
    operands[0] = getChannelsLastInput(operands[0], toLast);
    rewriter.setInsertionPoint(op);
    SmallVector<NamedAttribute> attrs;
    for (NamedAttribute attr : op->getAttrs())
      if (attr.getName() != "storage_order")
        attrs.push_back(attr);
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Type newType = resultType.clone(permuteShape(resultType.getShape(), toLast));
    TypeRange newTypes(newType);

    Operation *nhwc = nullptr;
    if (auto conv = dyn_cast<ConvOp>(op)) {
      if (conv.getW().getType().getRank() != rank)
        return failure();
      // OIHW -> OHWI is the same move of dim 1 to the end.
      operands[1] = getChannelsLastFilter(conv.getW(), toLast, loc);
      rewriter.setInsertionPoint(op);
      nhwc = ConvNhwcOp::create(rewriter, loc, newTypes, operands, attrs);
    } else if (isa<MaxPoolOp>(op)) {
      nhwc = MaxPoolNhwcOp::create(rewriter, loc, newTypes, operands[0], attrs);
    } else if (isa<AveragePoolOp>(op)) {
      nhwc =
          AveragePoolNhwcOp::create(rewriter, loc, newTypes, operands[0], attrs);
    } else {
      nhwc = GlobalAveragePoolNhwcOp::create(rewriter, loc, newTypes,
                                             operands[0], attrs);
    }
    Value back =
        TransposeOp::create(rewriter, loc, resultType, nhwc->getResult(0),
                            rewriter.getDenseI64ArrayAttr(toFirst));
    ++counters.transposesInserted;
    rewriter.replaceAllUsesWith(op->getResult(0), back);
    rewriter.eraseOp(op);
    return success();
  }

  /// `x` transposed channels-last, once for all the ops that read it (placed
  /// right after its definition, so it dominates them all).
  Value getChannelsLastInput(Value x, ArrayRef<int64_t> perm) {
    auto [it, inserted] = inputs.try_emplace(x, nullptr);
    if (!inserted)
      return it->second;
    OpBuilder::InsertionGuard guard(rewriter);
    if (Operation *def = x.getDefiningOp())
      rewriter.setInsertionPointAfter(def);
    else
      rewriter.setInsertionPointToStart(cast<BlockArgument>(x).getOwner());
    it->second = createTransposeOrFold(rewriter, x.getLoc(), x, perm, &counters);
    return it->second;
  }

  /// The filter `w` in OHWI: a constant transposed once (however many convs
  /// share it, placed after the original so it dominates them all), else a
  /// transpose.
  Value getChannelsLastFilter(Value w, ArrayRef<int64_t> perm, Location loc) {
    auto constant = w.getDefiningOp<ConstantOp>();
    if (!constant)
      return createTransposeOrFold(rewriter, loc, w, perm, &counters);
    auto [it, inserted] = filters.try_emplace(w, nullptr);
    if (!inserted)
      return it->second;
    rewriter.setInsertionPointAfter(constant);
    it->second = createTransposeOrFold(rewriter, constant.getLoc(), w, perm,
                                       &counters);
    oldFilters.push_back(constant);
    return it->second;
  }

  IRRewriter rewriter;
  LayoutCounters &counters;
  llvm::DenseMap<Value, Value> inputs, filters;
  SmallVector<Operation *> oldFilters;
};

/// Replaces transposes that only move dims of size 1 by reshapes (at most
/// one dynamic dim, which the shape gives as -1), or by their input when the
/// type does not change. Returns how many.
int64_t replaceReshapeLikeTransposes(func::FuncOp func) {
  SmallVector<TransposeOp> transposes;
  func.walk([&](TransposeOp op) { transposes.push_back(op); });
  IRRewriter rewriter(func.getContext());
  int64_t replaced = 0;
  for (TransposeOp op : transposes) {
    RankedTensorType in = op.getData().getType();
    if (!isTransposeAReshape(in.getShape(), getPermutation(op)))
      continue;
    if (in == op.getType()) { // Only 1s move: nothing does.
      rewriter.replaceOp(op, op.getData());
      ++replaced;
      continue;
    }
    ArrayRef<int64_t> shape = op.getType().getShape();
    if (llvm::count_if(shape, ShapedType::isDynamic) > 1 ||
        llvm::is_contained(shape, 0))
      continue;
    SmallVector<int64_t> values;
    for (int64_t d : shape)
      values.push_back(ShapedType::isDynamic(d) ? -1 : d);
    rewriter.setInsertionPoint(op);
    auto shapeType = RankedTensorType::get({int64_t(values.size())},
                                           rewriter.getI64Type());
    Value shapeValue = ConstantOp::create(
        rewriter, op.getLoc(), shapeType,
        DenseIntElementsAttr::get(shapeType, values));
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getData(),
                                           shapeValue,
                                           rewriter.getI64IntegerAttr(0));
    ++replaced;
  }
  return replaced;
}

/// Stores constant MatMul/Gemm weights N x K (read with Gemm transB = 1).
class MatMulWeightRelayout {
public:
  explicit MatMulWeightRelayout(MLIRContext *ctx) : rewriter(ctx) {}

  /// Returns the number of weights relaid.
  int64_t run(func::FuncOp func) {
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<MatMulOp, GemmOp>(op))
        ops.push_back(op);
    });
    int64_t relaid = 0;
    for (Operation *op : ops) {
      if (auto gemm = dyn_cast<GemmOp>(op))
        relaid += succeeded(relayout(gemm));
      else
        relaid += succeeded(relayout(cast<MatMulOp>(op)));
    }
    for (Operation *constant : oldWeights)
      if (constant->use_empty())
        rewriter.eraseOp(constant);
    return relaid;
  }

private:
  /// `b` (a readable 2-D float constant) transposed, or null.
  Value getTransposedWeight(Value b) {
    auto constant = b.getDefiningOp<ConstantOp>();
    auto type = dyn_cast<RankedTensorType>(b.getType());
    if (!constant || !type || type.getRank() != 2 ||
        !isa<FloatType>(type.getElementType()) ||
        !canReadElements(constant.getValue()))
      return nullptr;
    auto [it, inserted] = weights.try_emplace(b, nullptr);
    if (!inserted)
      return it->second;
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointAfter(constant);
    ElementsAttr data = transposeElements(constant.getValue(), {1, 0});
    if (!data)
      return nullptr;
    it->second = ConstantOp::create(rewriter, constant.getLoc(), data.getType(),
                                    data);
    oldWeights.push_back(constant);
    return it->second;
  }

  /// Gemm(A, B) with a constant B and transB = 0 -> Gemm(A, Bᵀ, transB = 1).
  LogicalResult relayout(GemmOp op) {
    if (op.getTransB() != 0)
      return failure();
    Value transposed = getTransposedWeight(op.getB());
    if (!transposed)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getBMutable().assign(transposed);
      op.setTransB(1);
    });
    return success();
  }

  /// MatMul(A, B) with a constant 2-D B -> Gemm(A, Bᵀ, transB = 1); an A of
  /// rank > 2 (static) is reshaped to 2-D around the Gemm.
  LogicalResult relayout(MatMulOp op) {
    auto a = op.getA().getType(), result = op.getType();
    if (a.getRank() < 2 || !isa<FloatType>(a.getElementType()) ||
        (a.getRank() > 2 && (!a.hasStaticShape() || !result.hasStaticShape())))
      return failure();
    Value transposed = getTransposedWeight(op.getB());
    if (!transposed)
      return failure();
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    int64_t k = a.getShape().back();
    int64_t n = result.getShape().back();
    Value lhs = op.getA();
    RankedTensorType gemmType = result;
    if (a.getRank() > 2) {
      int64_t m = a.getNumElements() / std::max<int64_t>(k, 1);
      if (k == 0)
        return failure();
      lhs = reshape(lhs, a.clone({m, k}), loc);
      gemmType = result.clone({m, n});
    }
    Value none = NoneOp::create(rewriter, loc);
    Value gemm = GemmOp::create(
        rewriter, loc, gemmType, lhs, transposed, none,
        rewriter.getF32FloatAttr(1.0f), rewriter.getF32FloatAttr(1.0f),
        rewriter.getI64IntegerAttr(0), rewriter.getI64IntegerAttr(1));
    if (a.getRank() > 2)
      gemm = reshape(gemm, result, loc);
    rewriter.replaceOp(op, gemm);
    return success();
  }

  /// `value` reshaped to the static `type`.
  Value reshape(Value value, RankedTensorType type, Location loc) {
    auto shapeType = RankedTensorType::get({type.getRank()},
                                           rewriter.getI64Type());
    Value shape = ConstantOp::create(
        rewriter, loc, shapeType,
        DenseIntElementsAttr::get(shapeType, type.getShape()));
    return ReshapeOp::create(rewriter, loc, type, value, shape,
                             rewriter.getI64IntegerAttr(0));
  }

  IRRewriter rewriter;
  llvm::DenseMap<Value, Value> weights;
  SmallVector<Operation *> oldWeights;
};

struct OptimizeLayoutPass
    : kiln::impl::KilnOptimizeLayoutBase<OptimizeLayoutPass> {
  using Base::Base;

  kiln::Statistic numTransposesRemoved{
      this, "transposes-removed", "Transposes cancelled, folded or made reshapes"};
  kiln::Statistic numTransposesInserted{
      this, "transposes-inserted",
      "Transposes created (around NHWC ops, or when one is copied)"};
  kiln::Statistic numOpsConvertedToNHWC{
      this, "ops-converted-to-nhwc",
      "Convolution and pooling ops rewritten to NHWC"};
  kiln::Statistic numWeightsRelaid{
      this, "weights-relaid",
      "Constant matmul weights stored in the requested layout"};

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    if (matmulWeightLayout != "kn" && matmulWeightLayout != "nk") {
      func.emitError("kiln-optimize-layout: matmul-weight-layout must be kn "
                     "or nk, got '")
          << matmulWeightLayout << "'";
      return signalPassFailure();
    }

    LayoutCounters counters;
    if (preferNHWC)
      numOpsConvertedToNHWC += ChannelsLastConverter(ctx, counters).run(func);

    RewritePatternSet patterns(ctx);
    layout::populateTransposeSinkingPatterns(patterns, &counters);
    // Each rewrite moves a transpose down or removes one, so this ends; the
    // limits are generous for deep graphs. Not converging would still leave
    // correct IR, so it is not an error.
    // Top-down, so that transposes meet and cancel before the ops after them
    // (BatchNormalization) are rewritten to let them through.
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    config.setMaxIterations(64);
    (void)applyPatternsGreedily(func, std::move(patterns), config);

    counters.transposesRemoved += replaceReshapeLikeTransposes(func);

    if (matmulWeightLayout == "nk")
      numWeightsRelaid += MatMulWeightRelayout(ctx).run(func);

    numTransposesRemoved += counters.transposesRemoved;
    numTransposesInserted += counters.transposesInserted;
  }
};

} // namespace
