//===- ConstantFold.cpp - Evaluate ops on constants -----------------------===//
//
// kiln-constant-fold: a greedy rewrite with the kiln ops' folders and two
// kinds of patterns:
//  - EvaluateOnConstants: an op whose operands are all constant (or `none`)
//    and whose result type is static is replaced by the constant it
//    computes, through the evaluators of FoldElementwise.cpp,
//    FoldDataMovement.cpp, FoldLinearAlgebra.cpp and FoldReduction.cpp.
//    Results above size-limit bytes (beyond the single-use constants they
//    replace) are left computed (statistic skipped-by-size), except those
//    only used as weights (up to weight-size-limit bytes): see
//    feedsOnlyWeights.
//  - FoldBatchNormInto{Conv,Gemm}: an inference BatchNormalization whose
//    input is a single-use Conv or Gemm with constant weights becomes that
//    Conv/Gemm with scaled weights and a new bias.
// The ops' folders (kiln.shape of a static tensor, identities, ...) run as
// part of the greedy driver, so exported shape arithmetic (Shape -> Gather
// -> Unsqueeze -> Concat -> Reshape's shape) folds completely in one run.
//
//===----------------------------------------------------------------------===//

#include "FoldUtils.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_KILNCONSTANTFOLD
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using namespace kiln::fold;

namespace {

/// The constant attribute behind `v`, or null.
ElementsAttr getConstantAttr(Value v) {
  ElementsAttr attr;
  if (v && matchPattern(v, m_Constant(&attr)))
    return attr;
  return {};
}

/// The bytes of constant data `attr` holds (a splat holds one element).
int64_t getAttrBytes(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return 0;
  int64_t bytes = getElementBytes(type.getElementType());
  if (auto dense = dyn_cast<DenseElementsAttr>(attr); dense && dense.isSplat())
    return bytes;
  return bytes * type.getNumElements();
}

/// A resource key for a constant computed from `op`: its ONNX node name
/// when it has one, with the characters MLIR cannot print bare replaced.
std::string getResourceName(Operation *op, StringRef suffix) {
  std::string key = "folded";
  if (auto name = op->getLoc()->findInstanceOf<NameLoc>())
    key = name.getName().str();
  key += suffix;
  for (char &c : key)
    if (!llvm::isAlnum(c) && c != '_' && c != '.')
      c = '_';
  if (llvm::isDigit(key.front()) || key.front() == '.')
    key.insert(key.begin(), '_');
  return key;
}

/// State shared by the patterns of one pass run.
struct FoldState {
  int64_t sizeLimit;
  int64_t weightSizeLimit;
  /// Live ops whose fold was refused by the size limit, not tried again.
  llvm::DenseSet<Operation *> skippedBySize;
  /// Live ops on constants that no evaluator folds (an op without one, an
  /// undefined result), not read again until modified: the driver revisits
  /// ops, and reading large constants each time would cost.
  llvm::DenseSet<Operation *> notEvaluable;
  int64_t numSkippedBySize = 0;
  int64_t batchNormsFolded = 0;
};

/// Counts the driver's rewrites for the statistics: ops replaced by
/// constants (by the patterns or the ops' folders) and constant bytes made.
struct StatisticsListener : RewriterBase::Listener {
  explicit StatisticsListener(FoldState &state) : state(state) {}
  FoldState &state;
  int64_t folded = 0, bytesCreated = 0;

  void notifyOperationErased(Operation *op) override {
    // Its address may be reused by a new op, which must be tried.
    state.skippedBySize.erase(op);
    state.notEvaluable.erase(op);
  }
  void notifyOperationModified(Operation *op) override {
    state.notEvaluable.erase(op);
  }

  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (auto constant = dyn_cast<ConstantOp>(op))
      bytesCreated += getAttrBytes(constant.getValue());
  }
  void notifyOperationReplaced(Operation *op, ValueRange values) override {
    if (op->hasTrait<OpTrait::ConstantLike>() || values.empty())
      return;
    if (llvm::all_of(values, [](Value v) {
          Operation *def = v.getDefiningOp();
          return def && def->hasTrait<OpTrait::ConstantLike>();
        }))
      ++folded;
  }
};

//===----------------------------------------------------------------------===//
// Evaluation of ops on constants
//===----------------------------------------------------------------------===//

/// How many ops deep feedsOnlyWeights and isComputedFromConstants look.
constexpr int kWeightChainDepth = 6;

/// Whether `use` is the weight operand of a contraction: B of MatMul, Gemm
/// and fused_matmul, W of Conv and fused_conv.
bool isWeightOperand(OpOperand &use) {
  return use.getOperandNumber() == 1 &&
         isa<MatMulOp, GemmOp, FusedMatMulOp, ConvOp, FusedConvOp>(
             use.getOwner());
}

/// Whether `value` is a constant, or computed by kiln ops from constants
/// only (looking `depth` ops up).
bool isComputedFromConstants(Value value, int depth) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (def->hasTrait<OpTrait::ConstantLike>() || isa<NoneOp>(def))
    return true;
  if (depth == 0 || !isa<KilnDialect>(def->getDialect()) ||
      def->getNumRegions() != 0)
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return isComputedFromConstants(operand, depth - 1);
  });
}

/// Whether every use of `value` is a weight operand, directly or through
/// ops computed from constants only (Tile -> Mul -> Gemm's B): then folding
/// it is the way to not compute the weight in every run, whatever its size
/// (the chain's later ops fold in turn).
bool feedsOnlyWeights(Value value, int depth) {
  if (value.use_empty())
    return false;
  for (OpOperand &use : value.getUses()) {
    if (isWeightOperand(use))
      continue;
    Operation *user = use.getOwner();
    if (depth == 0 || !isa<KilnDialect>(user->getDialect()) ||
        user->getNumResults() != 1 || user->getNumRegions() != 0 ||
        !llvm::all_of(user->getOperands(),
                      [&](Value operand) {
                        return isComputedFromConstants(operand,
                                                       kWeightChainDepth);
                      }) ||
        !feedsOnlyWeights(user->getResult(0), depth - 1))
      return false;
  }
  return true;
}

struct EvaluateOnConstants : RewritePattern {
  EvaluateOnConstants(MLIRContext *context, FoldState &state)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context),
        state(state) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<KilnDialect>(op->getDialect()) ||
        op->hasTrait<OpTrait::ConstantLike>() || op->getNumResults() == 0 ||
        op->getNumOperands() == 0 || state.skippedBySize.contains(op) ||
        state.notEvaluable.contains(op))
      return failure();
    if (llvm::any_of(op->getResultTypes(), [](Type t) {
          auto type = dyn_cast<RankedTensorType>(t);
          return !type || !type.hasStaticShape();
        }))
      return rewriter.notifyMatchFailure(op, "result type is not static");
    // Every operand constant (or none) before reading any.
    SmallVector<ElementsAttr> attrs;
    for (Value operand : op->getOperands()) {
      if (isNone(operand)) {
        attrs.push_back({});
        continue;
      }
      ElementsAttr attr = getConstantAttr(operand);
      if (!attr)
        return rewriter.notifyMatchFailure(op, "operand is not constant");
      attrs.push_back(attr);
    }
    SmallVector<std::optional<ConstTensor>> values;
    values.reserve(attrs.size());
    SmallVector<const ConstTensor *> operands;
    for (ElementsAttr attr : attrs) {
      if (!attr) {
        values.emplace_back();
        continue;
      }
      values.push_back(ConstTensor::read(attr));
      if (!values.back()) {
        state.notEvaluable.insert(op);
        return rewriter.notifyMatchFailure(op, "operand cannot be read");
      }
    }
    for (std::optional<ConstTensor> &value : values)
      operands.push_back(value ? &*value : nullptr);

    // The limit keeps folding from growing the artifact: constants that die
    // with the op (used by it alone) free their bytes, so a Transpose,
    // Reshape or Cast of a single-use weight is folded whatever its size.
    int64_t limit = std::max(state.sizeLimit, getBytesFreedBy(op));
    if (state.weightSizeLimit > limit && op->getNumResults() == 1 &&
        !keepsLargeConstantAlive(op, state.sizeLimit) &&
        feedsOnlyWeights(op->getResult(0), kWeightChainDepth))
      limit = state.weightSizeLimit;
    EvalContext ctx{limit};
    std::optional<SmallVector<ConstTensor>> results = evaluate(op, operands, ctx);
    if (!results) {
      if (!ctx.tooLarge)
        state.notEvaluable.insert(op);
      else if (state.skippedBySize.insert(op).second)
        ++state.numSkippedBySize;
      return rewriter.notifyMatchFailure(op, "not evaluated");
    }
    int64_t bytes = 0;
    for (auto [result, type] : llvm::zip(*results, op->getResultTypes())) {
      if (result.getType() != type)
        return rewriter.notifyMatchFailure(op, "evaluated to another type");
      bytes += result.getStoredBytes();
    }
    if (bytes > limit) {
      if (state.skippedBySize.insert(op).second)
        ++state.numSkippedBySize;
      return rewriter.notifyMatchFailure(op, "result exceeds size-limit");
    }
    SmallVector<Value> constants;
    for (const ConstTensor &result : *results) {
      ElementsAttr value = result.toAttr(getResourceName(op, ".folded"));
      constants.push_back(
          ConstantOp::create(rewriter, op->getLoc(), result.getType(), value));
    }
    rewriter.replaceOp(op, constants);
    return success();
  }

  /// Whether an operand of `op` is a constant above `sizeLimit` bytes that
  /// other ops use too: folding `op` would store it twice (a Transpose of a
  /// tied embedding, which the Gather reads as it is).
  static bool keepsLargeConstantAlive(Operation *op, int64_t sizeLimit) {
    for (Value operand : op->getOperands()) {
      auto constant = operand.getDefiningOp<ConstantOp>();
      if (constant && getAttrBytes(constant.getValue()) > sizeLimit &&
          llvm::any_of(constant->getUsers(),
                       [&](Operation *user) { return user != op; }))
        return true;
    }
    return false;
  }

  /// The bytes of the distinct constants among `op`'s operands whose only
  /// user is `op`: they are erased when `op` is folded.
  static int64_t getBytesFreedBy(Operation *op) {
    int64_t freed = 0;
    llvm::SmallPtrSet<Operation *, 4> seen;
    for (Value operand : op->getOperands()) {
      auto constant = operand.getDefiningOp<ConstantOp>();
      if (!constant || !seen.insert(constant).second ||
          !llvm::all_of(constant->getUsers(),
                        [&](Operation *user) { return user == op; }))
        continue;
      freed += getAttrBytes(constant.getValue());
    }
    return freed;
  }

  /// The results of `op` on constant `operands`, or std::nullopt.
  static std::optional<SmallVector<ConstTensor>>
  evaluate(Operation *op, ConstOperands operands, EvalContext &ctx) {
    if (isa<SplitOp>(op))
      return operands[0] ? evaluateSplit(op, *operands[0], ctx) : std::nullopt;
    if (op->getNumResults() != 1)
      return std::nullopt;
    std::optional<ConstTensor> result = evaluateElementwise(op, operands, ctx);
    if (!result && !ctx.tooLarge)
      result = evaluateDataMovement(op, operands, ctx);
    if (!result && !ctx.tooLarge)
      result = evaluateLinearAlgebra(op, operands, ctx);
    if (!result && !ctx.tooLarge)
      result = evaluateReduction(op, operands, ctx);
    if (!result)
      return std::nullopt;
    SmallVector<ConstTensor> results;
    results.push_back(std::move(*result));
    return results;
  }

  FoldState &state;
};

//===----------------------------------------------------------------------===//
// BatchNormalization into the Conv or Gemm before it
//===----------------------------------------------------------------------===//

/// The per-channel affine map y = x * scale + shift that an inference
/// BatchNormalization with `channels` channels computes: scale = gamma /
/// sqrt(var + epsilon), shift = beta - mean * scale. Folding it into weights
/// is not an ONNX op with a reference result: the new weights and biases
/// are computed in double and rounded once to the element type, the most
/// accurate form (the folded Conv then differs from Conv + BN by the
/// reassociation of the convolution's sums only).
struct ChannelAffine {
  SmallVector<double> scale, mean, beta;
  Type elementType;

  static std::optional<ChannelAffine> get(BatchNormalizationOp bn,
                                          int64_t channels) {
    if (bn.getTrainingMode() != 0)
      return std::nullopt;
    std::optional<ConstTensor> gamma, b, mean, var;
    for (auto [value, out] : {std::pair(bn.getScale(), &gamma),
                              std::pair(bn.getB(), &b),
                              std::pair(bn.getInputMean(), &mean),
                              std::pair(bn.getInputVar(), &var)}) {
      ElementsAttr attr = getConstantAttr(value);
      if (!attr)
        return std::nullopt;
      *out = ConstTensor::read(attr);
      if (!*out || (*out)->getNumElements() != channels || !(*out)->isFloat())
        return std::nullopt;
    }
    ChannelAffine affine;
    affine.elementType = gamma->getElementType();
    double epsilon = bn.getEpsilon().convertToDouble();
    for (int64_t c = 0; c < channels; ++c) {
      affine.scale.push_back(gamma->getFloat(c) /
                             std::sqrt(var->getFloat(c) + epsilon));
      affine.mean.push_back(mean->getFloat(c));
      affine.beta.push_back(b->getFloat(c));
    }
    return affine;
  }

  /// x * scale[c], rounded to the element type.
  double scaled(double x, int64_t c) const {
    return roundToType(elementType, x * scale[c]);
  }
  /// (bias - mean[c]) * scale[c] + beta[c], rounded to the element type.
  double shifted(double bias, int64_t c) const {
    return roundToType(elementType, (bias - mean[c]) * scale[c] + beta[c]);
  }
};

/// BN(Conv(x, W, B)) -> Conv(x, W * s, (B - mean) * s + beta).
struct FoldBatchNormIntoConv : OpRewritePattern<BatchNormalizationOp> {
  FoldBatchNormIntoConv(MLIRContext *context, FoldState &state)
      : OpRewritePattern(context), state(state) {}

  LogicalResult matchAndRewrite(BatchNormalizationOp bn,
                                PatternRewriter &rewriter) const override {
    auto conv = bn.getX().getDefiningOp<ConvOp>();
    if (!conv || !conv->hasOneUse() || conv.getType() != bn.getType())
      return rewriter.notifyMatchFailure(bn, "input is not a single-use Conv");
    ElementsAttr weightAttr = getConstantAttr(conv.getW());
    ElementsAttr biasAttr = isNone(conv.getB()) ? ElementsAttr()
                                                : getConstantAttr(conv.getB());
    if (!weightAttr || (!isNone(conv.getB()) && !biasAttr))
      return rewriter.notifyMatchFailure(bn, "Conv weights are not constant");
    auto weightType = cast<RankedTensorType>(conv.getW().getType());
    if (!weightType.hasStaticShape() || weightType.getRank() < 1 ||
        weightType.getElementType() != bn.getType().getElementType())
      return failure();
    int64_t channels = weightType.getDimSize(0);
    std::optional<ChannelAffine> affine = ChannelAffine::get(bn, channels);
    std::optional<ConstTensor> weight = ConstTensor::read(weightAttr);
    std::optional<ConstTensor> bias;
    if (biasAttr)
      bias = ConstTensor::read(biasAttr);
    if (!affine || !weight || (biasAttr && !bias) ||
        affine->elementType != weightType.getElementType() ||
        (bias && bias->getNumElements() != channels))
      return rewriter.notifyMatchFailure(bn, "BatchNormalization parameters");

    ConstTensor newWeight = ConstTensor::getDense(weightType);
    int64_t perChannel = weightType.getNumElements() / std::max<int64_t>(channels, 1);
    for (int64_t i = 0, e = weightType.getNumElements(); i < e; ++i)
      newWeight.setFloat(i, affine->scaled(weight->getFloat(i), i / perChannel));
    auto biasType = RankedTensorType::get({channels}, weightType.getElementType());
    ConstTensor newBias = ConstTensor::getDense(biasType);
    for (int64_t c = 0; c < channels; ++c)
      newBias.setFloat(c, affine->shifted(bias ? bias->getFloat(c) : 0.0, c));

    rewriter.setInsertionPoint(conv);
    Value w = ConstantOp::create(rewriter, conv.getW().getLoc(), weightType,
                                 newWeight.toAttr(getResourceName(conv, ".weight")));
    Value b = ConstantOp::create(rewriter, bn.getLoc(), biasType,
                                 newBias.toAttr(getResourceName(conv, ".bias")));
    rewriter.modifyOpInPlace(conv, [&] {
      conv.getWMutable().assign(w);
      conv.getBMutable().assign(b);
      conv->setLoc(rewriter.getFusedLoc({conv.getLoc(), bn.getLoc()}));
    });
    rewriter.replaceOp(bn, conv.getResult());
    ++state.batchNormsFolded;
    return success();
  }

  FoldState &state;
};

/// BN(Gemm(A, B, C)) over the Gemm's N columns -> Gemm(A, B * s, C') with
/// C' = (beta_gemm * C - mean) * s + beta and beta_gemm = 1.
struct FoldBatchNormIntoGemm : OpRewritePattern<BatchNormalizationOp> {
  FoldBatchNormIntoGemm(MLIRContext *context, FoldState &state)
      : OpRewritePattern(context), state(state) {}

  LogicalResult matchAndRewrite(BatchNormalizationOp bn,
                                PatternRewriter &rewriter) const override {
    auto gemm = bn.getX().getDefiningOp<GemmOp>();
    if (!gemm || !gemm->hasOneUse() || gemm.getType() != bn.getType())
      return rewriter.notifyMatchFailure(bn, "input is not a single-use Gemm");
    auto resultType = cast<RankedTensorType>(gemm.getType());
    auto weightType = cast<RankedTensorType>(gemm.getB().getType());
    Type elementType = resultType.getElementType();
    if (!isa<FloatType>(elementType) || !weightType.hasStaticShape() ||
        weightType.getRank() != 2)
      return failure();
    bool transB = gemm.getTransB() != 0;
    int64_t channels = weightType.getDimSize(transB ? 0 : 1);
    ElementsAttr weightAttr = getConstantAttr(gemm.getB());
    bool hasC = !isNone(gemm.getC());
    ElementsAttr cAttr = hasC ? getConstantAttr(gemm.getC()) : ElementsAttr();
    if (!weightAttr || (hasC && !cAttr))
      return rewriter.notifyMatchFailure(bn, "Gemm B or C is not constant");
    std::optional<ChannelAffine> affine = ChannelAffine::get(bn, channels);
    std::optional<ConstTensor> weight = ConstTensor::read(weightAttr);
    std::optional<ConstTensor> c;
    if (hasC) {
      // C must broadcast along the rows: a scalar, [N], [1, N] or [1, 1].
      auto cType = cast<RankedTensorType>(gemm.getC().getType());
      if (!cType.hasStaticShape() || cType.getRank() > 2 ||
          (cType.getRank() == 2 && cType.getDimSize(0) != 1))
        return rewriter.notifyMatchFailure(bn, "Gemm C varies along the rows");
      c = ConstTensor::read(cAttr);
      if (!c || (c->getNumElements() != 1 && c->getNumElements() != channels))
        return failure();
    }
    if (!affine || !weight || affine->elementType != elementType ||
        weight->getElementType() != elementType)
      return rewriter.notifyMatchFailure(bn, "BatchNormalization parameters");

    ConstTensor newWeight = ConstTensor::getDense(weightType);
    int64_t cols = weightType.getDimSize(1);
    for (int64_t i = 0, e = weightType.getNumElements(); i < e; ++i) {
      int64_t channel = transB ? i / cols : i % cols;
      newWeight.setFloat(i, affine->scaled(weight->getFloat(i), channel));
    }
    auto biasType = RankedTensorType::get({channels}, elementType);
    ConstTensor newBias = ConstTensor::getDense(biasType);
    double beta = gemm.getBeta().convertToDouble();
    for (int64_t j = 0; j < channels; ++j) {
      double bias = 0;
      if (c) {
        bias = beta * c->getFloat(c->getNumElements() == 1 ? 0 : j);
      }
      newBias.setFloat(j, affine->shifted(bias, j));
    }

    rewriter.setInsertionPoint(gemm);
    Value w = ConstantOp::create(rewriter, gemm.getB().getLoc(), weightType,
                                 newWeight.toAttr(getResourceName(gemm, ".weight")));
    Value b = ConstantOp::create(rewriter, bn.getLoc(), biasType,
                                 newBias.toAttr(getResourceName(gemm, ".bias")));
    rewriter.modifyOpInPlace(gemm, [&] {
      gemm.getBMutable().assign(w);
      gemm.getCMutable().assign(b);
      gemm.setBetaAttr(rewriter.getF32FloatAttr(1.0f));
      gemm->setLoc(rewriter.getFusedLoc({gemm.getLoc(), bn.getLoc()}));
    });
    rewriter.replaceOp(bn, gemm.getResult());
    ++state.batchNormsFolded;
    return success();
  }

  FoldState &state;
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConstantFoldPass : kiln::impl::KilnConstantFoldBase<ConstantFoldPass> {
  using Base::Base;

  kiln::Statistic numFolded{this, "ops-folded", "Ops replaced by constants"};
  kiln::Statistic numBatchNormsFolded{
      this, "batch-norms-folded",
      "BatchNormalizations folded into a Conv or Gemm"};
  kiln::Statistic bytesCreated{this, "constant-bytes-created",
                               "Bytes of constant data created by folding"};
  kiln::Statistic numSkippedBySize{
      this, "skipped-by-size",
      "Folds not done because the result exceeds size-limit"};

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    FoldState state{sizeLimit, weightSizeLimit};
    RewritePatternSet patterns(context);
    patterns.add<EvaluateOnConstants>(context, state);
    if (foldBatchNorm)
      patterns.add<FoldBatchNormIntoConv, FoldBatchNormIntoGemm>(context, state);

    StatisticsListener listener(state);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true).setListener(&listener);
    // Not converging within the iteration limit only means some folds were
    // left for a later run; the IR is valid either way.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);

    numFolded += listener.folded;
    bytesCreated += listener.bytesCreated;
    numBatchNormsFolded += state.batchNormsFolded;
    numSkippedBySize += state.numSkippedBySize;
  }
};

} // namespace
