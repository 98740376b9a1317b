//===- NNOps.cpp - Linear algebra and NN ops: inference and verifiers -----===//
//
// Shape errors are reported by inferReturnTypes (at the op's location, so the
// importer and builders see them too); checks that do not affect the result
// types are in the verifiers.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/NNShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnNNOps.cpp.inc"

static bool isDyn(int64_t d) { return ShapedType::isDynamic(d); }

static RankedTensorType rankedType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Fails unless `value` (of the string attribute `name`) is one of `allowed`.
static LogicalResult checkOneOf(std::optional<Location> loc, StringRef name,
                                StringRef value, ArrayRef<StringRef> allowed) {
  if (llvm::is_contained(allowed, value))
    return success();
  return emitOptionalError(loc, name, " '", value, "' is not one of ",
                           llvm::join(allowed, ", "));
}

/// The element type of an ONNX `stash_type` dtype code.
static FailureOr<Type> getStashElementType(std::optional<Location> loc,
                                    MLIRContext *ctx, int64_t code) {
  Builder b(ctx);
  switch (code) {
  case 1:
    return Type(b.getF32Type());
  case 10:
    return Type(b.getF16Type());
  case 11:
    return Type(b.getF64Type());
  case 16:
    return Type(b.getBF16Type());
  default:
    return emitOptionalError(loc, "stash_type ", code,
                             " is not a float dtype code (1, 10, 11 or 16)");
  }
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (failed(verifySameElementType(loc, adaptor.getA(), "A", adaptor.getB(), "B")))
    return failure();
  auto shape = inferMatMulShape(loc, rankedType(adaptor.getA()).getShape(),
                                rankedType(adaptor.getB()).getShape());
  if (failed(shape))
    return failure();
  results.push_back(tensorOf(*shape, getElementTypeOrSelf(adaptor.getA())));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  auto a = rankedType(adaptor.getA()), b = rankedType(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "A and B must be 2-D, got ", a, " and ", b);
  if (failed(verifySameElementType(loc, adaptor.getA(), "A", adaptor.getB(), "B")))
    return failure();
  bool transA = adaptor.getTransA() != 0, transB = adaptor.getTransB() != 0;
  int64_t m = a.getDimSize(transA ? 1 : 0), ka = a.getDimSize(transA ? 0 : 1);
  int64_t kb = b.getDimSize(transB ? 1 : 0), n = b.getDimSize(transB ? 0 : 1);
  if (!isDyn(ka) && !isDyn(kb) && ka != kb)
    return emitOptionalError(loc, "op(A) has ", ka, " columns but op(B) has ",
                             kb, " rows");
  Value c = adaptor.getC();
  if (!isNone(c)) {
    if (failed(verifySameElementType(loc, adaptor.getA(), "A", c, "C")))
      return failure();
    auto cType = rankedType(c);
    if (cType.getRank() > 2)
      return emitOptionalError(loc, "C must have rank <= 2, got ", cType);
    int64_t mn[2] = {m, n};
    for (auto [i, d] : llvm::enumerate(llvm::reverse(cType.getShape()))) {
      int64_t want = mn[1 - i];
      if (d != 1 && !isDyn(d) && !isDyn(want) && d != want)
        return emitOptionalError(loc, "C of type ", cType,
                                 " is not unidirectionally broadcastable to ",
                                 m, "x", n);
    }
  }
  results.push_back(tensorOf({m, n}, a.getElementType()));
  return success();
}

/// One Einsum term: its letters, with the position of `...` (npos if none).
namespace {
struct EinsumTerm {
  std::string letters;
  size_t ellipsis = std::string::npos;
};
} // namespace

static FailureOr<EinsumTerm> parseEinsumTerm(std::optional<Location> loc,
                                             StringRef term) {
  EinsumTerm t;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.substr(i).starts_with("...") && t.ellipsis == std::string::npos) {
      t.ellipsis = t.letters.size();
      i += 2;
    } else if (llvm::isAlpha(term[i])) {
      t.letters.push_back(term[i]);
    } else {
      return emitOptionalError(loc, "equation term '", term,
                               "' has the unexpected character '",
                               term.substr(i, 1), "'");
    }
  }
  return t;
}

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  std::string equation;
  for (char c : adaptor.getEquation())
    if (!llvm::isSpace(c))
      equation.push_back(c);
  auto [lhs, rhs] = StringRef(equation).split("->");
  bool explicitOutput = StringRef(equation).contains("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  ValueRange inputs = adaptor.getInputs();
  if (terms.size() != inputs.size())
    return emitOptionalError(loc, "equation '", adaptor.getEquation(), "' has ",
                             terms.size(), " input terms but the op has ",
                             inputs.size(), " inputs");
  std::map<char, int64_t> dims;
  std::map<char, int> counts;
  SmallVector<SmallVector<int64_t>> ellipsisShapes;
  for (auto [term, input] : llvm::zip(terms, inputs)) {
    if (failed(verifySameElementType(loc, inputs[0], "input 0", input, "another input")))
      return failure();
    FailureOr<EinsumTerm> t = parseEinsumTerm(loc, term);
    if (failed(t))
      return failure();
    ArrayRef<int64_t> shape = rankedType(input).getShape();
    int64_t nEllipsis = int64_t(shape.size()) - int64_t(t->letters.size());
    if (nEllipsis < 0 || (nEllipsis > 0 && t->ellipsis == std::string::npos))
      return emitOptionalError(loc, "equation term '", term, "' does not match ",
                               "an input of rank ", shape.size());
    size_t offset = 0;
    for (auto [i, letter] : llvm::enumerate(t->letters)) {
      if (i == t->ellipsis) {
        ellipsisShapes.emplace_back(shape.slice(i, nEllipsis));
        offset = nEllipsis;
      }
      int64_t d = shape[i + offset];
      ++counts[letter];
      auto [it, inserted] = dims.try_emplace(letter, d);
      if (inserted || d == it->second || isDyn(d))
        continue;
      if (!isDyn(it->second))
        return emitOptionalError(loc, "equation label '", StringRef(&letter, 1),
                                 "' is ", it->second, " in one input and ", d,
                                 " in another");
      it->second = d;
    }
    if (t->ellipsis == t->letters.size())
      ellipsisShapes.emplace_back(shape.take_back(nEllipsis));
  }
  SmallVector<ArrayRef<int64_t>> ellipsisRefs(ellipsisShapes.begin(),
                                              ellipsisShapes.end());
  auto broadcast = broadcastShapes(loc, ellipsisRefs);
  if (failed(broadcast))
    return failure();
  EinsumTerm out;
  if (explicitOutput) {
    FailureOr<EinsumTerm> t = parseEinsumTerm(loc, rhs);
    if (failed(t))
      return failure();
    out = *t;
  } else {
    out.ellipsis = ellipsisShapes.empty() ? std::string::npos : 0;
    for (auto [letter, count] : counts)
      if (count == 1)
        out.letters.push_back(letter);
  }
  SmallVector<int64_t> shape;
  for (size_t i = 0; i <= out.letters.size(); ++i) {
    if (i == out.ellipsis)
      shape.append(*broadcast);
    if (i == out.letters.size())
      break;
    auto it = dims.find(out.letters[i]);
    if (it == dims.end())
      return emitOptionalError(loc, "output label '",
                               StringRef(&out.letters[i], 1),
                               "' is in no input term");
    shape.push_back(it->second);
  }
  results.push_back(tensorOf(shape, getElementTypeOrSelf(inputs[0])));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// The result type of a convolution of shape `shape`: X's element type, and a
/// bias of the output channel count.
static LogicalResult pushConvResult(std::optional<Location> loc,
                                    FailureOr<SmallVector<int64_t>> shape,
                                    Value x, Value w, Value bias,
                                    SmallVectorImpl<Type> &results) {
  if (failed(shape) || failed(verifySameElementType(loc, x, "X", w, "W")) ||
      failed(verifyChannelVector(loc, bias, (*shape)[1], "B")))
    return failure();
  if (!isNone(bias) && failed(verifySameElementType(loc, x, "X", bias, "B")))
    return failure();
  results.push_back(tensorOf(*shape, getElementTypeOrSelf(x)));
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  auto shape = inferConvShape(loc, adaptor.getX().getType(),
                              adaptor.getW().getType(), adaptor.getGroup(),
                              getConvWindowAttrs(adaptor));
  return pushConvResult(loc, shape, adaptor.getX(), adaptor.getW(),
                        adaptor.getB(), results);
}

LogicalResult ConvTransposeOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &results) {
  auto shape = inferConvTransposeShape(
      loc, adaptor.getX().getType(), adaptor.getW().getType(),
      adaptor.getGroup(), getConvWindowAttrs(adaptor),
      adaptor.getOutputPadding(), adaptor.getOutputShape());
  return pushConvResult(loc, shape, adaptor.getX(), adaptor.getW(),
                        adaptor.getB(), results);
}

/// The result type of a pool: X's element type with the pooled shape.
template <typename AdaptorT>
static FailureOr<RankedTensorType> inferPoolType(std::optional<Location> loc,
                                                 AdaptorT adaptor) {
  auto shape = inferPoolShape(loc, adaptor.getX().getType(),
                              getPoolWindowAttrs(adaptor));
  if (failed(shape))
    return failure();
  if (adaptor.getCeilMode() > 1)
    return emitOptionalError(loc, "ceil_mode is ", adaptor.getCeilMode(),
                             " but must be 0 or 1");
  return tensorOf(*shape, getElementTypeOrSelf(adaptor.getX()));
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  if (adaptor.getStorageOrder() > 1)
    return emitOptionalError(loc, "storage_order is ", adaptor.getStorageOrder(),
                             " but must be 0 (row-major) or 1 (column-major)");
  auto type = inferPoolType(loc, adaptor);
  if (failed(type))
    return failure();
  results.push_back(*type);
  results.push_back(type->clone(IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  auto type = inferPoolType(loc, adaptor);
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

LogicalResult LpPoolOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (int64_t(adaptor.getP()) < 1)
    return emitOptionalError(loc, "p is ", int64_t(adaptor.getP()),
                             " but must be at least 1");
  auto type = inferPoolType(loc, adaptor);
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Checks that `x` has rank >= `minRank` (N, C, ...) and that each of
/// `vectors` is 1-D with C elements and `x`'s element type.
static LogicalResult verifyPerChannel(Operation *op, Value x, int64_t minRank,
                                      ArrayRef<std::pair<Value, StringRef>> vectors) {
  auto type = rankedType(x);
  if (type.getRank() < minRank)
    return op->emitOpError("input must have rank >= ")
           << minRank << " (N, C, ...), got " << type;
  for (auto [v, name] : vectors)
    if (failed(verifyChannelVector(op->getLoc(), v, type.getDimSize(1), name)) ||
        failed(verifySameElementType(op->getLoc(), x, "the input", v, name)))
      return failure();
  return success();
}

LogicalResult BatchNormalizationOp::verify() {
  if (getTrainingMode() != 0)
    return emitOpError("training_mode ")
           << getTrainingMode()
           << " is not supported: Kiln implements inference mode only";
  return verifyPerChannel(*this, getX(), 2,
                          {{getScale(), "scale"},
                           {getB(), "B"},
                           {getInputMean(), "input_mean"},
                           {getInputVar(), "input_var"}});
}

LogicalResult InstanceNormalizationOp::verify() {
  return verifyPerChannel(*this, getInput(), 3,
                          {{getScale(), "scale"}, {getB(), "B"}});
}

LogicalResult GroupNormalizationOp::verify() {
  int64_t groups = getNumGroups();
  if (groups < 1)
    return emitOpError("num_groups is ") << groups << " but must be >= 1";
  if (failed(getStashElementType(getLoc(), getContext(), getStashType())))
    return failure();
  int64_t c = getX().getType().getRank() > 1 ? getX().getType().getDimSize(1)
                                             : ShapedType::kDynamic;
  if (!isDyn(c) && c % groups != 0)
    return emitOpError("the ") << c << " channels are not divisible by num_groups "
                               << groups;
  return verifyPerChannel(*this, getX(), 2,
                          {{getScale(), "scale"}, {getBias(), "bias"}});
}

LogicalResult LayerNormalizationOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  auto x = rankedType(adaptor.getX());
  FailureOr<int64_t> axis =
      normalizeAxis(loc, int64_t(adaptor.getAxis()), x.getRank());
  FailureOr<Type> stash = getStashElementType(loc, ctx, adaptor.getStashType());
  if (failed(axis) || failed(stash))
    return failure();
  ArrayRef<int64_t> normalized = x.getShape().drop_front(*axis);
  for (auto [v, name] : {std::pair(adaptor.getScale(), "Scale"),
                         std::pair(adaptor.getB(), "B")}) {
    if (isNone(v))
      continue;
    if (failed(verifySameElementType(loc, adaptor.getX(), "X", v, name)))
      return failure();
    auto type = rankedType(v);
    auto shape = broadcastShapes(loc, {normalized, type.getShape()});
    if (failed(shape))
      return failure();
    if (ArrayRef<int64_t>(*shape) != normalized &&
        !llvm::equal(*shape, normalized, [](int64_t a, int64_t b) {
          return a == b || isDyn(b);
        }))
      return emitOptionalError(loc, name, " of type ", type,
                               " does not broadcast to the normalized dims of ",
                               x);
  }
  SmallVector<int64_t> statsShape(x.getShape());
  std::fill(statsShape.begin() + *axis, statsShape.end(), 1);
  results.push_back(x);
  results.push_back(tensorOf(statsShape, *stash));
  results.push_back(tensorOf(statsShape, *stash));
  return success();
}

LogicalResult LpNormalizationOp::verify() {
  if (failed(normalizeAxis(getLoc(), int64_t(getAxis()),
                           getInput().getType().getRank())))
    return failure();
  if (getP() != 1 && getP() != 2)
    return emitOpError("p is ") << getP() << " but must be 1 or 2";
  return success();
}

LogicalResult LRNOp::verify() {
  if (int64_t(getSize()) < 1)
    return emitOpError("size is ") << int64_t(getSize()) << " but must be >= 1";
  if (getX().getType().getRank() < 3)
    return emitOpError("X must have rank >= 3 (N, C and a spatial dim), got ")
           << getX().getType();
  return success();
}

LogicalResult MeanVarianceNormalizationOp::verify() {
  int64_t rank = getX().getType().getRank();
  SmallVector<bool> seen(rank, false);
  for (int64_t axis : getAxes()) {
    FailureOr<int64_t> a = normalizeAxis(getLoc(), axis, rank, "axes entry");
    if (failed(a))
      return failure();
    if (seen[*a])
      return emitOpError("axes lists axis ") << *a << " twice";
    seen[*a] = true;
  }
  return success();
}

static LogicalResult verifySoftmaxAxis(Operation *op, Value input,
                                       int64_t axis) {
  return normalizeAxis(op->getLoc(), axis, rankedType(input).getRank());
}

LogicalResult SoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getInput(), getAxis());
}
LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getInput(), getAxis());
}
LogicalResult HardmaxOp::verify() {
  return verifySoftmaxAxis(*this, getInput(), getAxis());
}

LogicalResult DropoutOp::verify() {
  for (Value v : {getRatio(), getTrainingMode()})
    if (!isNone(v) && rankedType(v).getNumElements() != 1)
      return emitOpError("ratio and training_mode must be scalars, got ")
             << v.getType();
  if (auto mode = getKnownIntValues(getTrainingMode());
      mode && mode->size() == 1 && !isDyn((*mode)[0]) && (*mode)[0] != 0)
    return emitOpError("training_mode is true, which is not supported: Kiln "
                       "implements inference mode only");
  if (auto ratio = getKnownFloatValues(getRatio());
      ratio && ratio->size() == 1 && ((*ratio)[0] < 0 || (*ratio)[0] >= 1))
    return emitOpError("ratio is ") << (*ratio)[0] << " but must be in [0, 1)";
  return success();
}

//===----------------------------------------------------------------------===//
// Padding and resampling
//===----------------------------------------------------------------------===//

/// The axes an op applies to: `axes` (normalized) when known, all axes when
/// absent, std::nullopt when not known at compile time.
static FailureOr<std::optional<SmallVector<int64_t>>>
getOpAxes(std::optional<Location> loc, std::optional<SmallVector<int64_t>> axes,
          bool absent, int64_t rank) {
  if (absent)
    return std::optional(llvm::to_vector(llvm::seq<int64_t>(0, rank)));
  if (!axes || llvm::any_of(*axes, isDyn))
    return std::optional<SmallVector<int64_t>>();
  SmallVector<bool> seen(rank, false);
  for (int64_t &axis : *axes) {
    FailureOr<int64_t> a = normalizeAxis(loc, axis, rank, "axes entry");
    if (failed(a))
      return failure();
    if (seen[*a])
      return emitOptionalError(loc, "axes lists axis ", *a, " twice");
    seen[*a] = true;
    axis = *a;
  }
  return std::optional(*axes);
}

/// The number of elements of a 1-D operand, kDynamic when not static.
static int64_t vectorSize(Value v) {
  auto type = rankedType(v);
  return type.getRank() == 1 ? type.getDimSize(0) : ShapedType::kDynamic;
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &results) {
  auto data = rankedType(adaptor.getData());
  if (failed(checkOneOf(loc, "mode", adaptor.getMode(),
                        {"constant", "reflect", "edge", "wrap"})))
    return failure();
  if (rankedType(adaptor.getPads()).getRank() != 1)
    return emitOptionalError(loc, "pads must be 1-D, got ",
                             adaptor.getPads().getType());
  Value value = adaptor.getConstantValue();
  if (!isNone(value)) {
    if (failed(verifySameElementType(loc, adaptor.getData(), "data", value,
                                    "constant_value")))
      return failure();
    if (rankedType(value).getNumElements() != 1)
      return emitOptionalError(loc, "constant_value must be a scalar, got ",
                               value.getType());
  }
  auto axes = getOpAxes(loc, getKnownIntValues(adaptor.getAxes()),
                        isNone(adaptor.getAxes()), data.getRank());
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape(data.getShape());
  if (!*axes) {
    results.push_back(data.clone(
        SmallVector<int64_t>(data.getRank(), ShapedType::kDynamic)));
    return success();
  }
  int64_t n = (*axes)->size();
  int64_t padCount = vectorSize(adaptor.getPads());
  if (!isDyn(padCount) && padCount != 2 * n)
    return emitOptionalError(loc, "pads has ", padCount, " entries but ", 2 * n,
                             " are needed (a begin and an end for each of ", n,
                             " axes)");
  std::optional<SmallVector<int64_t>> pads = getKnownIntValues(adaptor.getPads());
  if (pads && int64_t(pads->size()) != 2 * n)
    pads.reset();
  for (auto [i, axis] : llvm::enumerate(**axes)) {
    int64_t &d = shape[axis];
    if (!pads || isDyn(d) || isDyn((*pads)[i]) || isDyn((*pads)[n + i])) {
      d = ShapedType::kDynamic;
      continue;
    }
    int64_t padded = d + (*pads)[i] + (*pads)[n + i];
    if (padded < 0)
      return emitOptionalError(loc, "pads ", (*pads)[i], " and ",
                               (*pads)[n + i], " make axis ", axis,
                               " of size ", d, " negative (", padded, ")");
    d = padded;
  }
  results.push_back(data.clone(shape));
  return success();
}

/// True when the optional operand `v` is absent: `none`, or a tensor with no
/// elements (older exporters' placeholder for Resize's scales).
static bool isAbsentOrEmpty(Value v) {
  return isNone(v) || rankedType(v).getNumElements() == 0;
}

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto x = rankedType(adaptor.getX());
  bool hasScales = !isAbsentOrEmpty(adaptor.getScales());
  bool hasSizes = !isAbsentOrEmpty(adaptor.getSizes());
  if (hasScales == hasSizes)
    return emitOptionalError(loc, "exactly one of scales and sizes must be "
                                  "given, got ",
                             hasScales ? "both" : "neither");
  std::optional<SmallVector<int64_t>> axesAttr;
  if (adaptor.getAxes())
    axesAttr = SmallVector<int64_t>(*adaptor.getAxes());
  auto axesOr = getOpAxes(loc, axesAttr, !axesAttr, x.getRank());
  if (failed(axesOr))
    return failure();
  SmallVector<int64_t> axes = **axesOr;
  size_t n = axes.size();
  Value operand = hasScales ? adaptor.getScales() : adaptor.getSizes();
  int64_t count = vectorSize(operand);
  if (!isDyn(count) && count != int64_t(n))
    return emitOptionalError(loc, hasScales ? "scales" : "sizes", " has ",
                             count, " entries but ", n, " are needed (one per ",
                             axesAttr ? "entry of axes" : "axis of X", ")");
  SmallVector<int64_t> shape(x.getShape());
  SmallVector<double> scales;
  if (hasScales) {
    if (auto known = getKnownFloatValues(operand); known && known->size() == n)
      scales = *known;
  } else if (auto sizes = getKnownIntValues(operand);
             sizes && sizes->size() == n) {
    StringRef policy = adaptor.getKeepAspectRatioPolicy();
    for (auto [i, size] : llvm::enumerate(*sizes))
      if (!isDyn(size) && size < 1)
        return emitOptionalError(loc, "sizes[", i, "] is ", size,
                                 " but must be positive");
    if (policy == "stretch") {
      for (auto [axis, size] : llvm::zip(axes, *sizes))
        shape[axis] = size;
    } else if (!llvm::any_of(*sizes, isDyn) &&
               llvm::none_of(axes, [&](int64_t a) { return isDyn(shape[a]); })) {
      // One scale for all axes, the largest that fits (or smallest that covers).
      bool notLarger = policy == "not_larger";
      double scale = notLarger ? INFINITY : 0;
      for (auto [axis, size] : llvm::zip(axes, *sizes)) {
        double s = double(size) / double(shape[axis]);
        scale = notLarger ? std::min(scale, s) : std::max(scale, s);
      }
      scales.assign(n, scale);
    }
  }
  for (auto [i, axis] : llvm::enumerate(axes)) {
    int64_t &d = shape[axis];
    if (hasSizes && adaptor.getKeepAspectRatioPolicy() == "stretch")
      continue; // Set from sizes above (or already `?`: see below).
    if (scales.empty() || isDyn(d)) {
      d = ShapedType::kDynamic;
      continue;
    }
    if (scales[i] <= 0)
      return emitOptionalError(loc, "scales[", i, "] is ", scales[i],
                               " but must be positive");
    // ONNX computes the output size in single precision.
    float product = float(d) * float(scales[i]);
    d = int64_t(hasScales ? std::floor(product) : std::round(product));
  }
  if (hasSizes && adaptor.getKeepAspectRatioPolicy() == "stretch" &&
      !getKnownIntValues(operand))
    for (int64_t axis : axes)
      shape[axis] = ShapedType::kDynamic;
  results.push_back(x.clone(shape));
  return success();
}

LogicalResult ResizeOp::verify() {
  Location loc = getLoc();
  if (failed(checkOneOf(loc, "mode", getMode(), {"nearest", "linear", "cubic"})) ||
      failed(checkOneOf(loc, "coordinate_transformation_mode",
                        getCoordinateTransformationMode(),
                        {"half_pixel", "half_pixel_symmetric",
                         "pytorch_half_pixel", "align_corners", "asymmetric",
                         "tf_crop_and_resize"})) ||
      failed(checkOneOf(loc, "nearest_mode", getNearestMode(),
                        {"round_prefer_floor", "round_prefer_ceil", "floor",
                         "ceil"})) ||
      failed(checkOneOf(loc, "keep_aspect_ratio_policy",
                        getKeepAspectRatioPolicy(),
                        {"stretch", "not_larger", "not_smaller"})))
    return failure();
  if (getAntialias() > 1 || getExcludeOutside() > 1)
    return emitOpError("antialias and exclude_outside must be 0 or 1, got ")
           << getAntialias() << " and " << getExcludeOutside();
  return success();
}
