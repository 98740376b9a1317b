//===- FuseEpilogues.cpp - Fuse matmul/conv epilogues ---------------------===//
//
// kiln-fuse-epilogues: the elementwise ops after a MatMul, Gemm, Conv or
// channels-last kiln.conv_nhwc are folded into kiln.fused_matmul /
// kiln.fused_conv / kiln.fused_conv_nhwc, in the order they follow the
// product:
//
//   1. a bias Add: a tensor broadcast over the last dim ([N], [1, N], ...)
//      after MatMul/Gemm, over the channels after a conv without B (dim 1,
//      [C, 1, 1] or [1, C, 1, 1], for Conv; the last dim, [C] or
//      [1, 1, 1, C], for conv_nhwc);
//   2. a residual Add of a tensor of the result's type, when an activation
//      follows it (ResNet: relu(conv + bn + shortcut));
//   3. an activation: Relu, kiln.gelu (either form), kiln.silu, Sigmoid,
//      Tanh, HardSwish, a float Clip to constant bounds [0, 6] (ReLU6);
//   4. a residual Add after the activation (or with no activation: the
//      transformer's x + MatMul(...)).
//
// Each value along the chain must have exactly one user, the next op, so
// that nothing else reads an intermediate the fused op no longer produces.
// A MatMul whose B is Transpose(W) swapping the last two dims reads W with
// trans_b (and the MatMul is rewritten for that alone when the Transpose
// has no other user: it disappears). A Gemm folds in when transA = 0 and its C (if any) is a bias with
// beta = 1; alpha and transB carry over. MatMul and Conv are only rewritten
// when at least one op follows them into the epilogue.
//
//===----------------------------------------------------------------------===//

#include "FusionMatchers.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEEPILOGUES
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using namespace kiln::fusion;

namespace {

/// What follows a product: the ops folded in, in order.
struct Epilogue {
  Value bias;     ///< A bias-shaped tensor, still to be reshaped to 1-D.
  Value residual; ///< A tensor of the product's type.
  StringRef activation = "none";
  bool residualBeforeActivation = false;
  Operation *last = nullptr; ///< The op whose result the fused op replaces.
  int64_t numOps = 0;        ///< Ops folded in.
  /// The locations of the product and the ops folded in: the fused op
  /// covers all their ONNX nodes (the kernel profiler lists them).
  SmallVector<Location> locs;
};

/// The single user of `v` when it is an op of type OpT with `v`'s type.
template <typename OpT> OpT getSoleUser(Value v) {
  if (!v.hasOneUse())
    return nullptr;
  auto user = dyn_cast<OpT>(*v.getUsers().begin());
  if (!user || user->getNumResults() != 1 ||
      user->getResult(0).getType() != v.getType())
    return nullptr;
  return user;
}

/// The epilogue activation name of `op`, if it is one.
std::optional<StringRef> getActivationName(Operation *op) {
  if (isa<ReluOp>(op))
    return StringRef("relu");
  if (auto gelu = dyn_cast<GeluOp>(op))
    return StringRef(gelu.getApproximate() == "tanh" ? "gelu_tanh" : "gelu");
  if (isa<SiLUOp>(op))
    return StringRef("silu");
  if (isa<SigmoidOp>(op))
    return StringRef("sigmoid");
  if (isa<TanhOp>(op))
    return StringRef("tanh");
  if (isa<HardSwishOp>(op))
    return StringRef("hard_swish");
  if (auto clip = dyn_cast<ClipOp>(op)) {
    auto type = dyn_cast<RankedTensorType>(clip.getType());
    std::optional<double> lo = getScalarConstant(clip.getMin());
    std::optional<double> hi = getScalarConstant(clip.getMax());
    if (type && isa<FloatType>(type.getElementType()) && lo && hi &&
        *lo == 0.0 && *hi == 6.0)
      return StringRef("relu6");
  }
  return std::nullopt;
}

/// True when `v` is a bias along dim `dim` of `resultType`: aligned to the
/// end of the result's shape (numpy broadcasting), it reaches back to `dim`,
/// has the static size of that dim there and 1 everywhere else.
bool isBiasFor(Value v, RankedTensorType resultType, int64_t dim) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getElementType() != resultType.getElementType())
    return false;
  int64_t rank = resultType.getRank(), vRank = type.getRank();
  if (vRank > rank || vRank < rank - dim || resultType.isDynamicDim(dim))
    return false;
  for (int64_t i = 0; i < vRank; ++i) {
    int64_t resultDim = rank - vRank + i;
    int64_t d = type.getDimSize(i);
    if (d != (resultDim == dim ? resultType.getDimSize(dim) : 1))
      return false;
  }
  return true;
}

/// Walks the epilogue after `product`. `biasDim` is the dim a bias
/// broadcasts over (the last for matmuls and channels-last convolutions, 1
/// for NCHW convolutions), or -1 when
/// the product already has a bias.
Epilogue matchEpilogue(Value product, int64_t biasDim) {
  Epilogue e;
  e.last = product.getDefiningOp();
  e.locs.push_back(e.last->getLoc());
  auto type = cast<RankedTensorType>(product.getType());
  Value cur = product;
  auto residualOf = [&](AddOp add) -> Value {
    Value other = getOtherOperand(add, cur);
    return other && other != cur && other.getType() == type ? other : Value();
  };

  if (auto add = getSoleUser<AddOp>(cur); add && biasDim >= 0) {
    Value other = getOtherOperand(add, cur);
    if (other != cur && isBiasFor(other, type, biasDim)) {
      e.bias = other;
      cur = add.getResult();
      e.last = add;
      e.locs.push_back(e.last->getLoc());
      ++e.numOps;
    }
  }
  // A residual Add directly followed by an activation belongs before it.
  if (auto add = getSoleUser<AddOp>(cur)) {
    Value r = residualOf(add);
    Value sum = add.getResult();
    if (r && sum.hasOneUse() && getActivationName(*sum.getUsers().begin()) &&
        (*sum.getUsers().begin())->getResult(0).getType() == type) {
      e.residual = r;
      e.residualBeforeActivation = true;
      cur = sum;
      e.last = add;
      e.locs.push_back(e.last->getLoc());
      ++e.numOps;
    }
  }
  if (cur.hasOneUse()) {
    Operation *user = *cur.getUsers().begin();
    std::optional<StringRef> act = getActivationName(user);
    if (act && user->getResult(0).getType() == type) {
      e.activation = *act;
      cur = user->getResult(0);
      e.last = user;
      e.locs.push_back(e.last->getLoc());
      ++e.numOps;
    }
  }
  if (!e.residual)
    if (auto add = getSoleUser<AddOp>(cur))
      if (Value r = residualOf(add)) {
        e.residual = r;
        e.last = add;
        e.locs.push_back(e.last->getLoc());
        ++e.numOps;
      }
  return e;
}

/// `bias` as a 1-D tensor of `n` elements: constants are re-typed (their
/// data, dense or a dense_resource blob, is shared), other values reshaped.
Value reshapeBias(PatternRewriter &rewriter, Location loc, Value bias,
                  int64_t n) {
  auto type = cast<RankedTensorType>(bias.getType());
  if (type.getRank() == 1)
    return bias;
  auto vectorType = RankedTensorType::get({n}, type.getElementType());
  ElementsAttr attr;
  if (matchPattern(bias, m_Constant(&attr))) {
    if (auto dense = dyn_cast<DenseElementsAttr>(attr))
      return ConstantOp::create(rewriter, loc, dense.reshape(vectorType));
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
      return ConstantOp::create(
          rewriter, loc,
          DenseResourceElementsAttr::get(vectorType, resource.getRawHandle()));
  }
  return ReshapeOp::create(rewriter, loc, bias,
                           createI64Vector(rewriter, loc, {n}));
}

/// MatMul and Gemm -> kiln.fused_matmul.
struct FuseMatMulEpilogue : RewritePattern {
  FuseMatMulEpilogue(MLIRContext *ctx, int64_t &numFused)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        numFused(numFused) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<MatMulOp, GemmOp>(op))
      return failure();
    Value product = op->getResult(0);
    auto type = cast<RankedTensorType>(product.getType());
    if (!isa<FloatType>(type.getElementType()) || type.getRank() == 0)
      return rewriter.notifyMatchFailure(op, "not a float matrix product");
    Value a = op->getOperand(0), b = op->getOperand(1), bias;
    bool transB = false;
    // A single-use Transpose read through trans_b disappears with the fusion.
    bool absorbsTranspose = false;
    float alpha = 1.0f;
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      if (gemm.getTransA() != 0)
        return rewriter.notifyMatchFailure(op, "Gemm with transA");
      transB = gemm.getTransB() != 0;
      alpha = gemm.getAlpha().convertToFloat();
      if (!isNone(gemm.getC())) {
        if (gemm.getBeta().convertToFloat() != 1.0f ||
            !isBiasFor(gemm.getC(), type, type.getRank() - 1))
          return rewriter.notifyMatchFailure(op, "Gemm's C is not a bias");
        bias = gemm.getC();
      }
    } else if (auto transpose = b.getDefiningOp<TransposeOp>()) {
      // B = Transpose(W) over the last two dims: read W with trans_b.
      auto wType = cast<RankedTensorType>(transpose.getData().getType());
      int64_t rank = wType.getRank();
      std::optional<ArrayRef<int64_t>> perm = transpose.getPerm();
      SmallVector<int64_t> swapLast =
          llvm::to_vector(llvm::seq<int64_t>(0, rank));
      if (rank >= 2)
        std::swap(swapLast[rank - 1], swapLast[rank - 2]);
      if (rank >= 2 &&
          (perm ? *perm == ArrayRef<int64_t>(swapLast) : rank == 2)) {
        b = transpose.getData();
        transB = true;
        absorbsTranspose = transpose->hasOneUse();
      }
    }
    Epilogue e = matchEpilogue(product, bias ? -1 : type.getRank() - 1);
    if (e.numOps == 0 && !absorbsTranspose)
      return rewriter.notifyMatchFailure(op, "no epilogue");
    if (e.bias)
      bias = e.bias;

    rewriter.setInsertionPoint(e.last);
    Location loc = rewriter.getFusedLoc(e.locs);
    int64_t n = type.getShape().back();
    Value biasVector = bias ? reshapeBias(rewriter, loc, bias, n)
                            : Value(NoneOp::create(rewriter, loc));
    Value residual =
        e.residual ? e.residual : Value(NoneOp::create(rewriter, loc));
    auto fused = FusedMatMulOp::create(
        rewriter, loc, a, b, biasVector, residual,
        rewriter.getStringAttr(e.activation),
        rewriter.getBoolAttr(e.residualBeforeActivation),
        rewriter.getBoolAttr(transB), rewriter.getF32FloatAttr(alpha));
    rewriter.replaceOp(e.last, fused.getY());
    numFused += e.numOps + (absorbsTranspose ? 1 : 0);
    return success();
  }

  int64_t &numFused;
};

/// Conv (NCHW, channels at dim 1) -> kiln.fused_conv and kiln.conv_nhwc
/// (channels last) -> kiln.fused_conv_nhwc: the two differ only in the dim
/// that holds the channels, which a bias broadcasts over.
template <typename ConvT, typename FusedT>
struct FuseConvEpilogue : OpRewritePattern<ConvT> {
  FuseConvEpilogue(MLIRContext *ctx, int64_t &numFused)
      : OpRewritePattern<ConvT>(ctx), numFused(numFused) {}

  static constexpr bool channelsLast = std::is_same_v<ConvT, ConvNhwcOp>;

  LogicalResult matchAndRewrite(ConvT conv,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(conv.getType());
    if (type.getRank() < 3)
      return rewriter.notifyMatchFailure(conv, "not N, C and a spatial dim");
    int64_t channelDim = channelsLast ? type.getRank() - 1 : 1;
    bool hasBias = !isNone(conv.getB());
    Epilogue e = matchEpilogue(conv.getResult(), hasBias ? -1 : channelDim);
    if (e.numOps == 0)
      return rewriter.notifyMatchFailure(conv, "no epilogue");

    rewriter.setInsertionPoint(e.last);
    Location loc = rewriter.getFusedLoc(e.locs);
    Value bias = conv.getB();
    if (e.bias)
      bias = reshapeBias(rewriter, loc, e.bias, type.getDimSize(channelDim));
    Value residual =
        e.residual ? e.residual : Value(NoneOp::create(rewriter, loc));
    auto fused = FusedT::create(
        rewriter, loc, conv.getX(), conv.getW(), bias, residual,
        conv.getAutoPadAttr(), conv.getDilationsAttr(), conv.getGroupAttr(),
        conv.getKernelShapeAttr(), conv.getPadsAttr(), conv.getStridesAttr(),
        rewriter.getStringAttr(e.activation),
        rewriter.getBoolAttr(e.residualBeforeActivation));
    rewriter.replaceOp(e.last, fused.getY());
    numFused += e.numOps;
    return success();
  }

  int64_t &numFused;
};

struct FuseEpiloguesPass
    : kiln::impl::KilnFuseEpiloguesBase<FuseEpiloguesPass> {
  using Base::Base;

  kiln::Statistic numFused{this, "epilogues-fused", "Ops folded into an epilogue"};

  void runOnOperation() override {
    int64_t fused = 0;
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseMatMulEpilogue, FuseConvEpilogue<ConvOp, FusedConvOp>,
                 FuseConvEpilogue<ConvNhwcOp, FusedConvNhwcOp>>(&getContext(),
                                                                fused);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("kiln-fuse-epilogues did not converge");
      return signalPassFailure();
    }
    numFused += fused;
  }
};

} // namespace
