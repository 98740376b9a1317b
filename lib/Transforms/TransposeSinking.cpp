//===- TransposeSinking.cpp - Move transposes down and cancel them --------===//
//
// populateTransposeSinkingPatterns: each pattern moves a kiln.transpose from
// an operand of an op to its result (elementwise ops, reductions, axis ops,
// Concat, BatchNormalization), where it meets the next transpose and
// composes with it (cancelling when the composition is the identity), or
// reaches a constant and folds into it. Transposes only ever move towards
// the results, so the rewriting terminates.
//
// A sink puts one transpose after an op and must take away at least one
// before it, so the number of transposes never grows: a transpose shared with
// other ops is not copied below one of them.
//
//===----------------------------------------------------------------------===//

#include "LayoutUtils.h"

#include "kiln/Transforms/Passes.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace kiln;
using namespace kiln::layout;

namespace {

/// `v`'s defining transpose when its result type is exactly its input's
/// type permuted. A transpose whose declared type is more static than its
/// input (a refinement) is left in place: moving it would change the types
/// seen by the ops it passes.
TransposeOp getPlainTranspose(Value v) {
  auto op = v.getDefiningOp<TransposeOp>();
  if (!op)
    return nullptr;
  RankedTensorType in = op.getData().getType();
  if (op.getType() != in.clone(permuteShape(in.getShape(), getPermutation(op))))
    return nullptr;
  return op;
}

/// True when `v` has a static shape of 1s (broadcasts the same in any layout).
bool isUnitShaped(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && llvm::all_of(type.getShape(), [](int64_t d) { return d == 1; });
}

/// The readable constant data behind `v`, or null.
ElementsAttr getReadableConstant(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant || !canReadElements(constant.getValue()))
    return nullptr;
  return constant.getValue();
}

RankedTensorType rankedType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// `type` with its shape permuted by `perm`.
RankedTensorType permuteType(RankedTensorType type, ArrayRef<int64_t> perm) {
  return type.clone(permuteShape(type.getShape(), perm));
}

/// A 1-D i64 constant holding `values`.
Value createI64Vector(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({int64_t(values.size())}, b.getI64Type());
  return ConstantOp::create(b, loc, type, DenseIntElementsAttr::get(type, values));
}

/// The result of a sink: the new op's value and the permutation that maps
/// it back to the replaced value (none when the identity).
struct Sunk {
  Value value;
  SmallVector<int64_t> perm;
};

/// Replaces `op`'s results by the sunk values, each transposed back, and
/// counts the transposes this creates against those that die.
void replaceWithSunk(PatternRewriter &rewriter, Operation *op,
                     ArrayRef<Sunk> sunk, LayoutCounters *counters) {
  llvm::SmallSetVector<Operation *, 4> feeding;
  for (Value operand : op->getOperands())
    if (auto t = operand.getDefiningOp<TransposeOp>())
      feeding.insert(t);
  int64_t created = 0;
  SmallVector<Value> replacements;
  for (auto [result, s] : llvm::zip(op->getResults(), sunk)) {
    if (!s.value) { // An unused result the sink does not produce.
      replacements.push_back(nullptr);
      continue;
    }
    if (isIdentityPermutation(s.perm)) {
      replacements.push_back(s.value);
      continue;
    }
    ++created;
    replacements.push_back(TransposeOp::create(
        rewriter, op->getLoc(), result.getType(), s.value,
        rewriter.getDenseI64ArrayAttr(s.perm)));
  }
  for (auto [result, replacement] : llvm::zip(op->getResults(), replacements))
    if (replacement)
      rewriter.replaceAllUsesWith(result, replacement);
  rewriter.eraseOp(op);
  int64_t died = 0;
  for (Operation *t : feeding)
    if (t->use_empty()) {
      rewriter.eraseOp(t);
      ++died;
    }
  if (!counters)
    return;
  if (died > created)
    counters->transposesRemoved += died - created;
  else
    counters->transposesInserted += created - died;
}

/// A copy of `op` reading `operands`, its first result of type `type`.
Operation *cloneWith(PatternRewriter &rewriter, Operation *op,
                     ValueRange operands, ArrayRef<Type> types) {
  Operation *copy = rewriter.clone(*op);
  copy->setOperands(operands);
  for (auto [result, type] : llvm::zip(copy->getResults(), types))
    result.setType(type);
  return copy;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// The operands of `op` that take part in its elementwise (broadcast)
/// computation; empty when `op` is not such an op. Clip's bounds are scalars
/// and stay as they are.
SmallVector<unsigned> getElementwiseOperands(Operation *op) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0)
    return {};
  if (isa<CastOp, IsNaNOp, IsInfOp, ClipOp>(op) ||
      (op->hasTrait<OpTrait::Elementwise>() && op->getNumOperands() == 1))
    return {0};
  if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, ModOp, EqualOp, LessOp,
          LessOrEqualOp, GreaterOp, GreaterOrEqualOp, AndOp, OrOp, XorOp,
          BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, BitShiftOp, MaxOp, MinOp,
          SumOp, MeanOp, WhereOp, PReluOp>(op))
    return llvm::to_vector(llvm::seq<unsigned>(0, op->getNumOperands()));
  return {};
}

/// Elementwise op(T(x), c, T(y), ...) -> T(op(x, c', y, ...)): each operand is
/// a transpose by the same permutation, a constant of lower or equal rank
/// (broadcast to the full rank, then transposed back: c'), or a tensor of 1s.
LogicalResult sinkElementwise(Operation *op, PatternRewriter *rewriter,
                              LayoutCounters *counters) {
  SmallVector<unsigned> operands = getElementwiseOperands(op);
  if (operands.empty())
    return failure();
  auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType)
    return failure();
  int64_t rank = resultType.getRank();
  std::optional<SmallVector<int64_t>> perm;
  for (unsigned i : operands)
    if (auto t = getPlainTranspose(op->getOperand(i));
        t && t.getType().getRank() == rank) {
      perm = getPermutation(t);
      break;
    }
  if (!perm || isIdentityPermutation(*perm))
    return failure();

  enum class Kind { Transposed, Kept, Constant };
  SmallVector<Kind> kinds;
  for (unsigned i : operands) {
    Value v = op->getOperand(i);
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.getRank() > rank)
      return failure();
    if (auto t = getPlainTranspose(v); t && getPermutation(t) == *perm)
      kinds.push_back(Kind::Transposed);
    else if (isUnitShaped(v))
      kinds.push_back(Kind::Kept);
    else if (getReadableConstant(v) && type.hasStaticShape())
      kinds.push_back(Kind::Constant);
    else
      return failure();
  }
  if (!rewriter)
    return success();

  SmallVector<int64_t> inverse = invertPermutation(*perm);
  SmallVector<Value> newOperands(op->getOperands());
  for (auto [i, kind] : llvm::zip(operands, kinds)) {
    Value v = op->getOperand(i);
    if (kind == Kind::Transposed) {
      newOperands[i] = getPlainTranspose(v).getData();
    } else if (kind == Kind::Constant) {
      // Broadcast to the full rank (leading 1s), transpose back, then drop
      // the leading 1s again so the constant stays as small in rank as it
      // can: [C, 1, 1] against NCHW becomes [C] against NHWC.
      RankedTensorType type = rankedType(v);
      SmallVector<int64_t> full(rank - type.getRank(), 1);
      llvm::append_range(full, type.getShape());
      ElementsAttr data = getReadableConstant(v);
      ElementsAttr expanded = reshapeElements(data, type.clone(full));
      ElementsAttr moved =
          expanded ? transposeElements(expanded, inverse) : nullptr;
      if (!moved)
        return failure(); // canReadElements said yes: not expected.
      ArrayRef<int64_t> shape = cast<ShapedType>(moved.getType()).getShape();
      while (!shape.empty() && shape.front() == 1)
        shape = shape.drop_front();
      ElementsAttr trimmed = reshapeElements(moved, type.clone(shape));
      newOperands[i] =
          ConstantOp::create(*rewriter, v.getLoc(), trimmed.getType(), trimmed);
    }
  }
  Operation *sunk = cloneWith(*rewriter, op, newOperands,
                              {permuteType(resultType, inverse)});
  replaceWithSunk(*rewriter, op, {{sunk->getResult(0), *perm}}, counters);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// The axes `axes` of T(x) (sorted) as axes of x, and the permutation that
/// maps the reduction of x back to the reduction of T(x).
struct ReducedAxes {
  SmallVector<int64_t> axes;
  SmallVector<int64_t> perm;
};

ReducedAxes remapReducedAxes(ArrayRef<int64_t> perm, ArrayRef<int64_t> axes,
                             bool keepdims) {
  int64_t rank = perm.size();
  ReducedAxes r;
  for (int64_t a : axes)
    r.axes.push_back(perm[a]);
  llvm::sort(r.axes);
  if (keepdims) {
    r.perm.assign(perm.begin(), perm.end());
    return r;
  }
  // Dims of x that survive, in x's order, and where each dim of the
  // reduction of T(x) finds its dim there.
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(r.axes, d))
      kept.push_back(d);
  for (int64_t i = 0; i < rank; ++i)
    if (!llvm::is_contained(axes, i))
      r.perm.push_back(llvm::find(kept, perm[i]) - kept.begin());
  return r;
}

/// The result type of the sunk op: `original` = transpose(result, perm).
RankedTensorType unpermutedType(RankedTensorType original,
                                ArrayRef<int64_t> perm) {
  return permuteType(original, invertPermutation(perm));
}

/// The normalized, sorted, distinct axes `values` of a rank-`rank` tensor.
std::optional<SmallVector<int64_t>> normalizeAxes(ArrayRef<int64_t> values,
                                                  int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t a : values) {
    if (ShapedType::isDynamic(a) || a < -rank || a >= rank)
      return std::nullopt;
    axes.push_back(a < 0 ? a + rank : a);
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return std::nullopt;
  return axes;
}

/// ReduceX(T(x), axes) -> T'(ReduceX(x, perm[axes])), keepdims either way
/// (T' is T, or with keepdims = 0 the order of the surviving dims, often the
/// identity, in which case the transpose disappears).
template <typename ReduceOpTy>
LogicalResult sinkReduce(ReduceOpTy op, PatternRewriter *rewriter,
                         LayoutCounters *counters) {
  TransposeOp t = getPlainTranspose(op.getData());
  if (!t)
    return failure();
  SmallVector<int64_t> perm = getPermutation(t);
  int64_t rank = perm.size();
  std::optional<SmallVector<int64_t>> values;
  bool fromOperand = !isNone(op.getAxesInput());
  if (fromOperand)
    values = getKnownIntValues(op.getAxesInput());
  else if (std::optional<ArrayRef<int64_t>> attr = op.getAxes())
    values = SmallVector<int64_t>(*attr);
  else
    values = SmallVector<int64_t>();
  if (!values)
    return failure();
  std::optional<SmallVector<int64_t>> axes = normalizeAxes(*values, rank);
  if (!axes)
    return failure();
  bool noop = axes->empty() && op.getNoopWithEmptyAxes() != 0;
  if (axes->empty() && !noop)
    *axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  bool keepdims = op.getKeepdims() != 0 || noop;
  ReducedAxes r = remapReducedAxes(perm, noop ? ArrayRef<int64_t>() : *axes,
                                   keepdims);
  if (!rewriter)
    return success();

  auto originalType = cast<RankedTensorType>(op.getType());
  SmallVector<Value> operands{t.getData(), op.getAxesInput()};
  bool allAxes = int64_t(r.axes.size()) == rank && values->empty();
  if (fromOperand && !noop && !allAxes)
    operands[1] = createI64Vector(*rewriter, op.getLoc(), r.axes);
  Operation *sunk = cloneWith(*rewriter, op, operands,
                              {unpermutedType(originalType, r.perm)});
  if (!fromOperand && op.getAxes() && !noop)
    sunk->setAttr("axes", rewriter->getDenseI64ArrayAttr(r.axes));
  replaceWithSunk(*rewriter, op, {{sunk->getResult(0), r.perm}}, counters);
  return success();
}

/// ArgMax/ArgMin(T(x), axis) -> T'(ArgMax/ArgMin(x, perm[axis])).
template <typename ArgOpTy>
LogicalResult sinkArgReduce(ArgOpTy op, PatternRewriter *rewriter,
                            LayoutCounters *counters) {
  TransposeOp t = getPlainTranspose(op.getData());
  if (!t)
    return failure();
  SmallVector<int64_t> perm = getPermutation(t);
  std::optional<SmallVector<int64_t>> axes =
      normalizeAxes({int64_t(op.getAxis())}, perm.size());
  if (!axes)
    return failure();
  ReducedAxes r = remapReducedAxes(perm, *axes, op.getKeepdims() != 0);
  if (!rewriter)
    return success();
  Operation *sunk =
      cloneWith(*rewriter, op, {t.getData()},
                {unpermutedType(cast<RankedTensorType>(op.getType()), r.perm)});
  sunk->setAttr("axis", rewriter->getI64IntegerAttr(r.axes[0]));
  replaceWithSunk(*rewriter, op, {{sunk->getResult(0), r.perm}}, counters);
  return success();
}

//===----------------------------------------------------------------------===//
// Axis ops: Softmax, LogSoftmax, Hardmax, LpNormalization,
// MeanVarianceNormalization, LayerNormalization
//===----------------------------------------------------------------------===//

/// op(T(x), axis) -> T(op(x, perm[axis])) for ops computing along one axis.
LogicalResult sinkSingleAxisOp(Operation *op, int64_t axis,
                               PatternRewriter *rewriter,
                               LayoutCounters *counters) {
  TransposeOp t = getPlainTranspose(op->getOperand(0));
  if (!t)
    return failure();
  SmallVector<int64_t> perm = getPermutation(t);
  std::optional<SmallVector<int64_t>> axes = normalizeAxes({axis}, perm.size());
  if (!axes)
    return failure();
  if (!rewriter)
    return success();
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  Operation *sunk =
      cloneWith(*rewriter, op, {t.getData()}, {unpermutedType(type, perm)});
  sunk->setAttr("axis", rewriter->getI64IntegerAttr(perm[(*axes)[0]]));
  replaceWithSunk(*rewriter, op, {{sunk->getResult(0), perm}}, counters);
  return success();
}

/// Concat(T(x1), ..., T(xn), axis) -> T(Concat(x1, ..., xn, perm[axis]))
/// when every input is transposed the same way: a SqueezeNet Fire module's
/// or a DenseNet block's concatenation of channels-last convolutions stays
/// channels-last (the inputs were transposed back to NCHW, concatenated
/// and transposed again for the next convolution).
LogicalResult sinkConcat(ConcatOp op, PatternRewriter *rewriter,
                         LayoutCounters *counters) {
  if (op.getInputs().empty())
    return failure();
  TransposeOp first = getPlainTranspose(op.getInputs()[0]);
  if (!first)
    return failure();
  SmallVector<int64_t> perm = getPermutation(first);
  if (isIdentityPermutation(perm))
    return failure();
  SmallVector<Value> inputs;
  for (Value v : op.getInputs()) {
    TransposeOp t = getPlainTranspose(v);
    if (!t || getPermutation(t) != perm)
      return failure();
    inputs.push_back(t.getData());
  }
  std::optional<SmallVector<int64_t>> axes =
      normalizeAxes({op.getAxis()}, perm.size());
  if (!axes)
    return failure();
  if (!rewriter)
    return success();
  Operation *sunk = cloneWith(*rewriter, op, inputs,
                              {unpermutedType(op.getType(), perm)});
  sunk->setAttr("axis", rewriter->getI64IntegerAttr(perm[(*axes)[0]]));
  replaceWithSunk(*rewriter, op, {{sunk->getResult(0), perm}}, counters);
  return success();
}

/// MeanVarianceNormalization(T(x), axes) -> T(MVN(x, perm[axes])).
LogicalResult sinkMeanVarianceNormalization(MeanVarianceNormalizationOp op,
                                            PatternRewriter *rewriter,
                                            LayoutCounters *counters) {
  TransposeOp t = getPlainTranspose(op.getX());
  if (!t)
    return failure();
  SmallVector<int64_t> perm = getPermutation(t);
  std::optional<SmallVector<int64_t>> axes =
      normalizeAxes(op.getAxes(), perm.size());
  if (!axes)
    return failure();
  if (!rewriter)
    return success();
  ReducedAxes r = remapReducedAxes(perm, *axes, /*keepdims=*/true);
  Operation *sunk = cloneWith(*rewriter, op, {t.getData()},
                              {unpermutedType(op.getType(), perm)});
  sunk->setAttr("axes", rewriter->getDenseI64ArrayAttr(r.axes));
  replaceWithSunk(*rewriter, op, {{sunk->getResult(0), perm}}, counters);
  return success();
}

/// LayerNormalization(T(x), axis) -> T(LayerNormalization(x, axis)) when T
/// keeps the normalized dims (axis..rank-1) in place, so that Scale and B
/// still line up; only when Mean and InvStdDev are unused.
LogicalResult sinkLayerNormalization(LayerNormalizationOp op,
                                     PatternRewriter *rewriter,
                                     LayoutCounters *counters) {
  TransposeOp t = getPlainTranspose(op.getX());
  if (!t || !op.getMean().use_empty() || !op.getInvStdDev().use_empty())
    return failure();
  SmallVector<int64_t> perm = getPermutation(t);
  int64_t rank = perm.size();
  std::optional<SmallVector<int64_t>> axes =
      normalizeAxes({int64_t(op.getAxis())}, rank);
  if (!axes)
    return failure();
  for (int64_t i = (*axes)[0]; i < rank; ++i)
    if (perm[i] != i)
      return failure();
  if (!rewriter)
    return success();
  SmallVector<Value> operands(op->getOperands());
  operands[0] = t.getData();
  SmallVector<Type> types;
  for (Value result : op->getResults())
    types.push_back(unpermutedType(rankedType(result), perm));
  Operation *sunk = cloneWith(*rewriter, op, operands, types);
  replaceWithSunk(*rewriter, op,
                  {{sunk->getResult(0), perm}, {}, {}}, counters);
  return success();
}

//===----------------------------------------------------------------------===//
// BatchNormalization
//===----------------------------------------------------------------------===//

/// The elements of a float constant as doubles.
std::optional<SmallVector<double>> readFloats(Value v) {
  ElementsAttr attr = getReadableConstant(v);
  if (!attr || !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  auto type = cast<RankedTensorType>(attr.getType());
  // getValues<APFloat> reads DenseElementsAttr; a blob's bytes are viewed
  // through one (getReadableConstant checked their size).
  auto denseAttr = dyn_cast<DenseElementsAttr>(attr);
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
    denseAttr = DenseElementsAttr::getFromRawBuffer(
        type, resource.getRawHandle().getBlob()->getData());
  if (!denseAttr)
    return std::nullopt;
  SmallVector<double> values;
  for (APFloat f : denseAttr.getValues<APFloat>()) {
    bool lost;
    f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    values.push_back(f.convertToDouble()); // Exact: every kiln float fits.
  }
  return values;
}

/// A constant of `type` (a float element type) holding `values`.
Value createFloatConstant(OpBuilder &b, Location loc, RankedTensorType type,
                          ArrayRef<double> values) {
  auto semantics = &cast<FloatType>(type.getElementType()).getFloatSemantics();
  SmallVector<APFloat> elements;
  for (double v : values) {
    APFloat f(v);
    bool lost;
    f.convert(*semantics, APFloat::rmNearestTiesToEven, &lost);
    elements.push_back(f);
  }
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, elements));
}

/// BatchNormalization(T(x)) (inference mode). When T keeps the channel dim
/// (perm[1] == 1) the op moves as it is. Otherwise, with constant scale, B,
/// mean and var, it becomes x * a + b along x's channel dim (a = scale /
/// sqrt(var + epsilon), b = B - mean * a), which is the
/// same per-channel affine map (and what ONNX Runtime computes).
LogicalResult sinkBatchNormalization(BatchNormalizationOp op,
                                     PatternRewriter *rewriter,
                                     LayoutCounters *counters) {
  TransposeOp t = getPlainTranspose(op.getX());
  if (!t || op.getTrainingMode() != 0)
    return failure();
  SmallVector<int64_t> perm = getPermutation(t);
  int64_t rank = perm.size();
  if (rank < 2)
    return failure();
  int64_t channel = perm[1];
  RankedTensorType xType = t.getData().getType();
  if (channel == 1) {
    if (!rewriter)
      return success();
    SmallVector<Value> operands(op->getOperands());
    operands[0] = t.getData();
    Operation *sunk = cloneWith(*rewriter, op, operands,
                                {unpermutedType(op.getType(), perm)});
    replaceWithSunk(*rewriter, op, {{sunk->getResult(0), perm}}, counters);
    return success();
  }
  std::optional<SmallVector<double>> scale = readFloats(op.getScale()),
                                     bias = readFloats(op.getB()),
                                     mean = readFloats(op.getInputMean()),
                                     var = readFloats(op.getInputVar());
  int64_t c = xType.getDimSize(channel);
  if (!scale || !bias || !mean || !var || ShapedType::isDynamic(c) ||
      int64_t(scale->size()) != c || int64_t(bias->size()) != c ||
      int64_t(mean->size()) != c || int64_t(var->size()) != c)
    return failure();
  if (!rewriter)
    return success();
  // The folded scale and shift, computed as ONNX Runtime's BatchNormalization
  // kernel does (inv_std = 1 / sqrt(var + epsilon), a = scale * inv_std,
  // b = B - mean * a), in float for f32 so the results match it bit for bit;
  // in double for the other float types.
  bool isF32 = xType.getElementType().isF32();
  double epsilon = op.getEpsilon().convertToDouble();
  SmallVector<double> a(c), b(c);
  for (int64_t i = 0; i < c; ++i) {
    if (isF32) {
      float invStd = 1.0f / std::sqrt(float((*var)[i]) + float(epsilon));
      float scaled = float((*scale)[i]) * invStd;
      a[i] = scaled;
      b[i] = float((*bias)[i]) - float((*mean)[i]) * scaled;
    } else {
      a[i] = (*scale)[i] / std::sqrt((*var)[i] + epsilon);
      b[i] = (*bias)[i] - (*mean)[i] * a[i];
    }
  }
  // [C, 1, ..., 1]: C along x's channel dim, broadcast over the dims after it.
  SmallVector<int64_t> shape(rank - channel, 1);
  shape[0] = c;
  auto vectorType = RankedTensorType::get(shape, xType.getElementType());
  Location loc = op.getLoc();
  Value aValue = createFloatConstant(*rewriter, loc, vectorType, a);
  Value bValue = createFloatConstant(*rewriter, loc, vectorType, b);
  RankedTensorType newType = unpermutedType(op.getType(), perm);
  Value scaled = MulOp::create(*rewriter, loc, newType, t.getData(), aValue);
  Value shifted = AddOp::create(*rewriter, loc, newType, scaled, bValue);
  replaceWithSunk(*rewriter, op, {{shifted, perm}}, counters);
  return success();
}

//===----------------------------------------------------------------------===//
// Dispatch and patterns
//===----------------------------------------------------------------------===//

/// Sinks the transposes feeding `op` below it; with a null `rewriter`, only
/// says whether it could.
LogicalResult sinkThrough(Operation *op, PatternRewriter *rewriter,
                          LayoutCounters *counters) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
            ReduceL1Op, ReduceL2Op, ReduceLogSumOp, ReduceLogSumExpOp,
            ReduceSumSquareOp>(
          [&](auto reduce) { return sinkReduce(reduce, rewriter, counters); })
      .Case<ArgMaxOp, ArgMinOp>(
          [&](auto arg) { return sinkArgReduce(arg, rewriter, counters); })
      .Case<SoftmaxOp, LogSoftmaxOp, HardmaxOp>([&](auto softmax) {
        return sinkSingleAxisOp(softmax, softmax.getAxis(), rewriter, counters);
      })
      .Case([&](LpNormalizationOp lp) {
        return sinkSingleAxisOp(lp, lp.getAxis(), rewriter, counters);
      })
      .Case([&](MeanVarianceNormalizationOp mvn) {
        return sinkMeanVarianceNormalization(mvn, rewriter, counters);
      })
      .Case([&](LayerNormalizationOp ln) {
        return sinkLayerNormalization(ln, rewriter, counters);
      })
      .Case([&](BatchNormalizationOp bn) {
        return sinkBatchNormalization(bn, rewriter, counters);
      })
      .Case([&](ConcatOp concat) {
        return sinkConcat(concat, rewriter, counters);
      })
      .Default([&](Operation *other) {
        return sinkElementwise(other, rewriter, counters);
      });
}

/// Moves the transposes feeding an op below it. The sink puts one transpose
/// after the op, so it must take away at least one before it: some
/// transposed operand must have the op as its only user. The number of
/// transposes never grows, and a transpose shared with ops it cannot pass
/// is not copied (merging two transposes into one is still done:
/// add(T(x), T(y)) with T(x) used elsewhere).
struct SinkTransposes : RewritePattern {
  SinkTransposes(MLIRContext *ctx, LayoutCounters *counters)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        counters(counters) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (isa<TransposeOp>(op) || op->getDialect() == nullptr ||
        !isa<KilnDialect>(op->getDialect()))
      return failure();
    if (failed(sinkThrough(op, nullptr, nullptr)))
      return failure();
    bool removesOne = llvm::any_of(op->getOperands(), [&](Value operand) {
      TransposeOp t = getPlainTranspose(operand);
      return t && !isUnitShaped(t) &&
             llvm::all_of(t->getUsers(), [&](Operation *u) { return u == op; });
    });
    if (!removesOne)
      return rewriter.notifyMatchFailure(
          op, "every transposed operand has other users: sinking would copy "
              "a transpose");
    return sinkThrough(op, &rewriter, counters);
  }

  LayoutCounters *counters;
};

/// T2(T1(x)) -> T(x) with the composed permutation, or x when that is the
/// identity.
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  ComposeTransposes(MLIRContext *ctx, LayoutCounters *counters)
      : OpRewritePattern(ctx, /*benefit=*/2), counters(counters) {}

  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getData().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    SmallVector<int64_t> outerPerm = getPermutation(op);
    SmallVector<int64_t> innerPerm = getPermutation(inner);
    SmallVector<int64_t> composed;
    for (int64_t p : outerPerm)
      composed.push_back(innerPerm[p]);
    bool innerDies = inner->hasOneUse();
    Value source = inner.getData();
    int64_t removed = 1 + (innerDies ? 1 : 0);
    if (isIdentityPermutation(composed)) {
      if (source.getType() != op.getType())
        return failure(); // A refined type: keep the transpose that says so.
      rewriter.replaceOp(op, source);
    } else {
      rewriter.replaceOpWithNewOp<TransposeOp>(
          op, op.getType(), source, rewriter.getDenseI64ArrayAttr(composed));
      --removed;
    }
    if (innerDies && inner->use_empty())
      rewriter.eraseOp(inner);
    if (counters)
      counters->transposesRemoved += removed;
    return success();
  }

  LayoutCounters *counters;
};

/// T(constant) -> constant': the data transposed at compile time. Only when
/// the transpose is the constant's one user or the data is small, so that
/// a large weight is not kept twice.
struct FoldTransposeOfConstant : OpRewritePattern<TransposeOp> {
  FoldTransposeOfConstant(MLIRContext *ctx, LayoutCounters *counters)
      : OpRewritePattern(ctx, /*benefit=*/2), counters(counters) {}

  static constexpr int64_t kMaxSharedElements = 256;

  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto constant = op.getData().getDefiningOp<ConstantOp>();
    if (!constant)
      return failure();
    ElementsAttr value = constant.getValue();
    if (!constant->hasOneUse() && value.getNumElements() > kMaxSharedElements)
      return failure();
    ElementsAttr folded = transposeElements(value, getPermutation(op));
    if (!folded || folded.getType() != op.getType())
      return failure();
    rewriter.replaceOpWithNewOp<ConstantOp>(op, folded.getType(), folded);
    if (constant->use_empty())
      rewriter.eraseOp(constant);
    if (counters)
      ++counters->transposesRemoved;
    return success();
  }

  LayoutCounters *counters;
};

} // namespace

void kiln::layout::populateTransposeSinkingPatterns(RewritePatternSet &patterns,
                                                    LayoutCounters *counters) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ComposeTransposes, FoldTransposeOfConstant>(ctx, counters);
  patterns.add<SinkTransposes>(ctx, counters);
}

void kiln::populateTransposeSinkingPatterns(RewritePatternSet &patterns) {
  layout::populateTransposeSinkingPatterns(patterns, nullptr);
}
