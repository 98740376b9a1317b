//===- DecomposeFusedOps.cpp - Norms, activations, epilogues to plain ops -===//
//
// The decompositions of the fused ops of KilnFusedOps.td back into the
// ONNX-level kiln ops they stand for, computing the same values:
//   kiln.rms_norm      -> [Cast] Mul ReduceMean Add Sqrt Div [Cast] Mul
//   kiln.silu          -> Mul(x, Sigmoid(x))
//   kiln.swiglu        -> Mul(Mul(g, Sigmoid(g)), up)
//   kiln.fused_matmul  -> Gemm (2-D) or [Transpose] MatMul [Mul alpha] [Add
//                         bias], then the epilogue
//   kiln.fused_conv    -> Conv, then the epilogue
//   kiln.fused_conv_nhwc -> kiln.conv_nhwc, then the epilogue (the layout
//                         decomposition turns the conv into Transpose, Conv,
//                         Transpose)
// where the epilogue is [Add residual] act [Add residual] as
// residual_before_activation says. Used by kiln-decompose-fused, which keeps
// the patterns whose root op it is asked for.
//
//===----------------------------------------------------------------------===//

#include "FusionMatchers.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::fusion;

/// x * sigmoid(x).
static Value buildSiLU(OpBuilder &b, Location loc, Value x) {
  Value sig = SigmoidOp::create(b, loc, x);
  return MulOp::create(b, loc, x, sig);
}

/// The activation `activation` (an epilogue's attribute value) of `x`.
static Value buildActivation(OpBuilder &b, Location loc, StringRef activation,
                             Value x) {
  if (activation == "relu")
    return ReluOp::create(b, loc, x);
  if (activation == "gelu")
    return GeluOp::create(b, loc, x, b.getStringAttr("none"));
  if (activation == "gelu_tanh")
    return GeluOp::create(b, loc, x, b.getStringAttr("tanh"));
  if (activation == "silu")
    return buildSiLU(b, loc, x);
  if (activation == "sigmoid")
    return SigmoidOp::create(b, loc, x);
  if (activation == "tanh")
    return TanhOp::create(b, loc, x);
  if (activation == "hard_swish")
    return HardSwishOp::create(b, loc, x);
  if (activation == "relu6") {
    auto scalar = RankedTensorType::get(
        {}, cast<RankedTensorType>(x.getType()).getElementType());
    auto bound = [&](double v) -> Value {
      return ConstantOp::create(
          b, loc, DenseElementsAttr::get(scalar, b.getFloatAttr(
                                                     scalar.getElementType(), v)));
    };
    return ClipOp::create(b, loc, x.getType(), x, bound(0.0), bound(6.0));
  }
  assert(activation == "none" && "the verifier admits no other activation");
  return x;
}

/// The epilogue after the product `p`: residual added before or after the
/// activation.
static Value buildEpilogue(OpBuilder &b, Location loc, Value p,
                           StringRef activation, Value residual,
                           bool residualBeforeActivation) {
  bool hasResidual = !isNone(residual);
  if (hasResidual && residualBeforeActivation)
    p = AddOp::create(b, loc, p, residual);
  p = buildActivation(b, loc, activation, p);
  if (hasResidual && !residualBeforeActivation)
    p = AddOp::create(b, loc, p, residual);
  return p;
}

namespace {

struct DecomposeRMSNorm : OpRewritePattern<RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getX();
    auto type = cast<RankedTensorType>(x.getType());
    Type stash = getFloatTypeOfOnnxCode(getContext(), op.getStashType());
    if (!stash)
      return rewriter.notifyMatchFailure(op, "stash_type is not a float");
    bool cast = stash != type.getElementType();
    if (cast)
      x = CastOp::create(rewriter, loc, x, TypeAttr::get(stash));
    int64_t rank = type.getRank();
    // I64Attr getters return uint64_t: read the axis as signed.
    int64_t axis = int64_t(op.getAxis());
    if (axis < 0)
      axis += rank;
    SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(axis, rank));
    Value none = NoneOp::create(rewriter, loc);
    Value square = MulOp::create(rewriter, loc, x, x);
    Value mean = ReduceMeanOp::create(
        rewriter, loc, square, none, /*keepdims=*/1, /*noop_with_empty_axes=*/0,
        rewriter.getDenseI64ArrayAttr(axes));
    Value eps =
        createScalar(rewriter, loc, stash, op.getEpsilon().convertToDouble());
    Value sum = AddOp::create(rewriter, loc, mean, eps);
    Value root = SqrtOp::create(rewriter, loc, sum);
    Value normalized = DivOp::create(rewriter, loc, x, root);
    if (cast)
      normalized = CastOp::create(rewriter, loc, normalized,
                                  TypeAttr::get(type.getElementType()));
    rewriter.replaceOpWithNewOp<MulOp>(op, normalized, op.getScale());
    return success();
  }
};

struct DecomposeSiLU : OpRewritePattern<SiLUOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SiLUOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildSiLU(rewriter, op.getLoc(), op.getX()));
    return success();
  }
};

struct DecomposeSwiGLU : OpRewritePattern<SwiGLUOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SwiGLUOp op,
                                PatternRewriter &rewriter) const override {
    Value silu = buildSiLU(rewriter, op.getLoc(), op.getGate());
    rewriter.replaceOpWithNewOp<MulOp>(op, silu, op.getUp());
    return success();
  }
};

struct DecomposeFusedMatMul : OpRewritePattern<FusedMatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedMatMulOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value a = op.getA(), b = op.getB(), bias = op.getBias();
    auto aType = cast<RankedTensorType>(a.getType());
    auto bType = cast<RankedTensorType>(b.getType());
    float alpha = op.getAlpha().convertToFloat();
    Value p;
    if (aType.getRank() == 2 && bType.getRank() == 2) {
      // Gemm is the 2-D form every backend has, bias and transB included.
      p = GemmOp::create(
          rewriter, loc, a, b, bias, rewriter.getF32FloatAttr(alpha),
          rewriter.getF32FloatAttr(1.0f), rewriter.getI64IntegerAttr(0),
          rewriter.getI64IntegerAttr(op.getTransB() ? 1 : 0));
    } else {
      if (op.getTransB()) {
        SmallVector<int64_t> perm =
            llvm::to_vector(llvm::seq<int64_t>(0, bType.getRank()));
        std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
        b = TransposeOp::create(rewriter, loc, b,
                                rewriter.getDenseI64ArrayAttr(perm));
      }
      p = MatMulOp::create(rewriter, loc, a, b);
      if (alpha != 1.0f)
        p = MulOp::create(
            rewriter, loc, p,
            createScalar(rewriter, loc, aType.getElementType(), alpha));
      if (!isNone(bias))
        p = AddOp::create(rewriter, loc, p, bias);
    }
    rewriter.replaceOp(op, buildEpilogue(rewriter, loc, p, op.getActivation(),
                                         op.getResidual(),
                                         op.getResidualBeforeActivation()));
    return success();
  }
};

/// kiln.fused_conv -> kiln.conv and kiln.fused_conv_nhwc -> kiln.conv_nhwc,
/// each followed by the epilogue (the residual has the conv result's layout).
template <typename FusedT, typename ConvT>
struct DecomposeFusedConv : OpRewritePattern<FusedT> {
  using OpRewritePattern<FusedT>::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedT op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value conv = ConvT::create(rewriter, loc, op.getX(), op.getW(), op.getB(),
                               op.getAutoPadAttr(), op.getDilationsAttr(),
                               op.getGroupAttr(), op.getKernelShapeAttr(),
                               op.getPadsAttr(), op.getStridesAttr());
    rewriter.replaceOp(op, buildEpilogue(rewriter, loc, conv,
                                         op.getActivation(), op.getResidual(),
                                         op.getResidualBeforeActivation()));
    return success();
  }
};

} // namespace

void kiln::populateDecomposeFusedOpPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeRMSNorm, DecomposeSiLU, DecomposeSwiGLU,
               DecomposeFusedMatMul, DecomposeFusedConv<FusedConvOp, ConvOp>,
               DecomposeFusedConv<FusedConvNhwcOp, ConvNhwcOp>>(
      patterns.getContext());
}
