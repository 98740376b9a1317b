//===- LayoutDecompose.cpp - Channels-last ops back to NCHW ---------------===//
//
// populateDecomposeLayoutOpPatterns: each channels-last op becomes its ONNX
// (NCHW) op between transposes, for backends (and the ONNX exporter) that
// have no NHWC kernels: kiln.conv_nhwc(X, W, B) is
//   transpose(kiln.conv(transpose(X, [0, n+1, 1..n]),
//                       transpose(W, [0, n+1, 1..n]), B), [0, 2..n+1, 1]).
// A constant filter's transpose folds again in the clean-up after.
//
//===----------------------------------------------------------------------===//

#include "LayoutUtils.h"

#include "kiln/Transforms/Passes.h"

#include <type_traits>

using namespace mlir;
using namespace kiln;
using namespace kiln::layout;

namespace {

/// The permutation that moves the last dim of a rank-`rank` tensor to 1.
SmallVector<int64_t> channelsFirstPermutation(int64_t rank) {
  SmallVector<int64_t> perm{0, rank - 1};
  for (int64_t i = 1; i < rank - 1; ++i)
    perm.push_back(i);
  return perm;
}

/// NhwcOp(X, ...) -> T(NchwOp(T(X), ...)): the first operand (and for Conv
/// the filter) transposed channels-first, the attributes kept (MaxPool's
/// storage_order is the default: there are no indices).
template <typename NhwcOp, typename NchwOp>
struct DecomposeChannelsLast : OpRewritePattern<NhwcOp> {
  using OpRewritePattern<NhwcOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(NhwcOp op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t rank = resultType.getRank();
    SmallVector<int64_t> toFirst = channelsFirstPermutation(rank);
    SmallVector<int64_t> toLast = invertPermutation(toFirst);
    Location loc = op.getLoc();
    SmallVector<Value> operands(op->getOperands());
    auto perm = rewriter.getDenseI64ArrayAttr(toFirst);
    operands[0] = TransposeOp::create(rewriter, loc, operands[0], perm);
    if (isa<ConvNhwcOp>(op.getOperation()))
      operands[1] = TransposeOp::create(rewriter, loc, operands[1], perm);
    auto nchwType = resultType.clone(permuteShape(resultType.getShape(), toFirst));
    SmallVector<Type> types{nchwType};
    if (std::is_same_v<NchwOp, MaxPoolOp>)
      types.push_back(nchwType.clone(rewriter.getI64Type()));
    Operation *nchw = NchwOp::create(rewriter, loc, types, operands,
                                     op->getAttrs());
    rewriter.replaceOpWithNewOp<TransposeOp>(
        op, resultType, nchw->getResult(0),
        rewriter.getDenseI64ArrayAttr(toLast));
    return success();
  }
};

} // namespace

void kiln::populateDecomposeLayoutOpPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeChannelsLast<ConvNhwcOp, ConvOp>,
               DecomposeChannelsLast<MaxPoolNhwcOp, MaxPoolOp>,
               DecomposeChannelsLast<AveragePoolNhwcOp, AveragePoolOp>,
               DecomposeChannelsLast<GlobalAveragePoolNhwcOp,
                                     GlobalAveragePoolOp>>(
      patterns.getContext());
}
