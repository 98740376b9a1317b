//===- ShapeOps.cpp - Shape and data-movement ops: type inference ---------===//
//
// Each inferReturnTypes also checks what ONNX forbids; it runs when an op is
// verified (InferTypeOpInterface), so its diagnostics are the op's verifier
// errors. Folders are in ShapeFolds.cpp, the evaluator of shape arithmetic
// in KnownValues.cpp.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "ShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnShapeOps.cpp.inc"

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;
using Dims = SmallVector<KnownDim>;
} // namespace

/// `adaptor` with the ODS defaults of OpTy's attributes filled in: the
/// adaptor that ODS builds for inferReturnTypes reads the bare attribute
/// dictionary, and its builders infer before the defaults are populated.
template <typename OpTy>
static typename OpTy::Adaptor withDefaults(MLIRContext *ctx,
                                           typename OpTy::Adaptor adaptor) {
  NamedAttrList attrs(adaptor.getAttributes());
  OpTy::populateDefaultAttrs(OperationName(OpTy::getOperationName(), ctx), attrs);
  return typename OpTy::Adaptor(adaptor.getOperands(), attrs.getDictionary(ctx));
}

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static LogicalResult pushTensor(SmallVectorImpl<Type> &results,
                                ArrayRef<int64_t> shape, Type elementType) {
  results.push_back(tensorOf(shape, elementType));
  return success();
}

/// The product of `dims`, or kDynamic when one of them is.
static int64_t productOf(ArrayRef<int64_t> dims) {
  int64_t product = 1;
  for (int64_t d : dims) {
    if (ShapedType::isDynamic(d))
      return kDyn;
    product *= d;
  }
  return product;
}

static int64_t mulDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) ? kDyn : a * b;
}

/// The known elements of a 1-D shape-like operand (`what` names it); an
/// error when its length is not static, as the result rank depends on it.
static FailureOr<Dims> shapeOperand(std::optional<Location> loc, Value v,
                                    StringRef what) {
  RankedTensorType type = typeOf(v);
  if (type.getRank() != 1 || type.isDynamicDim(0))
    return emitOptionalError(loc, "the `", what,
                             "` operand must be a 1-D tensor of static length, got ",
                             type);
  std::optional<Dims> dims = getKnownDims(v);
  if (!dims)
    dims = Dims(type.getDimSize(0));
  return *dims;
}

/// The value of a one-element operand, when known.
static std::optional<int64_t> knownScalar(Value v) {
  std::optional<SmallVector<int64_t>> values = getKnownIntValues(v);
  if (!values || values->size() != 1 || ShapedType::isDynamic((*values)[0]))
    return std::nullopt;
  return (*values)[0];
}

/// Fails unless `v` has exactly one element (a scalar or a 1-element
/// vector, or a dynamic size that might be one).
static LogicalResult checkOneElement(std::optional<Location> loc, Value v,
                                     StringRef what) {
  RankedTensorType type = typeOf(v);
  if (type.getRank() > 1 || (type.hasStaticShape() && type.getNumElements() != 1))
    return emitOptionalError(loc, "`", what,
                             "` must be a scalar or a one-element tensor, got ",
                             type);
  return success();
}

/// Normalizes a list of axes of a rank-`rank` tensor; fails when one is out
/// of range or repeated.
static FailureOr<SmallVector<int64_t>>
normalizeAxes(std::optional<Location> loc, ArrayRef<int64_t> axes, int64_t rank,
              StringRef what = "axes") {
  SmallVector<int64_t> result;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t axis : axes) {
    FailureOr<int64_t> a = normalizeAxis(loc, axis, rank, what);
    if (failed(a))
      return failure();
    if (!seen.insert(*a).second)
      return emitOptionalError(loc, what, " repeats axis ", *a);
    result.push_back(*a);
  }
  return result;
}

/// The axes of Squeeze/Unsqueeze, from the operand or the pre-opset-13
/// attribute: std::nullopt when neither is given.
static FailureOr<std::optional<SmallVector<int64_t>>>
squeezeAxes(std::optional<Location> loc, Value operand,
            std::optional<ArrayRef<int64_t>> attr) {
  if (isNone(operand)) {
    if (!attr)
      return std::optional<SmallVector<int64_t>>();
    return std::optional(SmallVector<int64_t>(attr->begin(), attr->end()));
  }
  if (attr)
    return emitOptionalError(loc, "give the axes as an operand or as the `axes` "
                                  "attribute, not both");
  std::optional<SmallVector<int64_t>> values = getKnownIntValues(operand);
  if (!values || llvm::any_of(*values, ShapedType::isDynamic))
    return emitOptionalError(
        loc, "the `axes` must be known at compile time: they set the result rank");
  return std::optional(*values);
}

static LogicalResult checkReduction(std::optional<Location> loc,
                                    StringRef reduction) {
  if (reduction == "none" || reduction == "add" || reduction == "mul" ||
      reduction == "max" || reduction == "min")
    return success();
  return emitOptionalError(loc, "reduction \"", reduction,
                           "\" is not one of none, add, mul, max, min");
}

/// Fails when two static dims of the same index differ.
static LogicalResult checkSameShape(std::optional<Location> loc,
                                    ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                                    StringRef what) {
  if (a.size() != b.size())
    return emitOptionalError(loc, what, ": ranks ", a.size(), " and ", b.size(),
                             " differ");
  for (auto [i, pair] : llvm::enumerate(llvm::zip(a, b))) {
    auto [x, y] = pair;
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return emitOptionalError(loc, what, ": dimension ", i, " is ", x,
                               " in one and ", y, " in the other");
  }
  return success();
}

SliceAxis kiln::clampSliceAxis(int64_t dim, int64_t start, int64_t end,
                               int64_t step) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, step, end > start ? (end - start + step - 1) / step : 0};
  }
  if (dim == 0)
    return {0, step, 0};
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  int64_t stride = -step;
  return {start, step, start > end ? (start - end + stride - 1) / stride : 0};
}

//===----------------------------------------------------------------------===//
// Shape queries
//===----------------------------------------------------------------------===//

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                        Adaptor raw,
                                        SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<ShapeOp>(ctx, raw);
  int64_t rank = typeOf(adaptor.getData()).getRank();
  std::optional<int64_t> end;
  if (adaptor.getEnd())
    end = static_cast<int64_t>(*adaptor.getEnd());
  auto [first, last] =
      shapeOpRange(rank, static_cast<int64_t>(adaptor.getStart()), end);
  return pushTensor(results, {last - first}, IntegerType::get(ctx, 64));
}

LogicalResult SizeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                       Adaptor, SmallVectorImpl<Type> &results) {
  return pushTensor(results, {}, IntegerType::get(ctx, 64));
}

//===----------------------------------------------------------------------===//
// Reshaping
//===----------------------------------------------------------------------===//

/// Infers Reshape's -1 from the element count. The input's dynamic dims
/// must cancel against output dims known to be those same dims (a 0 copying
/// one, or a dim taken from kiln.shape of the input or of a tensor whose dim
/// canonicalDim shows to be the same).
static LogicalResult inferReshapeWildcard(std::optional<Location> loc, Value data,
                                          const Dims &target, bool allowZero,
                                          int64_t wildcard,
                                          SmallVectorImpl<int64_t> &shape) {
  ArrayRef<int64_t> input = typeOf(data).getShape();
  int64_t inProduct = 1, outProduct = 1;
  // The input's dynamic dims, in canonical form, until an output dim cancels.
  SmallVector<std::optional<std::pair<Value, int64_t>>> pending(input.size());
  for (auto [i, d] : llvm::enumerate(input)) {
    if (ShapedType::isDynamic(d))
      pending[i] = canonicalDim(data, i);
    else
      inProduct *= d;
  }
  for (auto [i, t] : llvm::enumerate(target)) {
    if (static_cast<int64_t>(i) == wildcard)
      continue;
    if (!ShapedType::isDynamic(shape[i])) {
      outProduct *= shape[i];
      continue;
    }
    // A dynamic output dim must be one of the input's (a 0 copies dim i).
    auto *match = pending.end();
    if (t.isKnown() && t.value == 0 && !allowZero)
      match = pending.begin() + i;
    else if (!t.isKnown() && t.dimOf)
      match = llvm::find(pending, std::make_pair(t.dimOf, t.dim));
    if (match == pending.end() || !*match)
      return success(); // Unknown size: nothing to infer or check.
    *match = std::nullopt;
  }
  if (llvm::any_of(pending, [](const auto &p) { return p.has_value(); }))
    return success();
  if (wildcard < 0) {
    if (inProduct != outProduct)
      return emitOptionalError(loc, "cannot reshape ", typeOf(data),
                               ": the element counts differ (", inProduct,
                               " vs ", outProduct, ")");
    return success();
  }
  if (outProduct == 0) {
    if (inProduct != 0)
      return emitOptionalError(loc, "cannot infer the -1 of shape: the other dims "
                                    "have 0 elements and the input ",
                               inProduct);
    return success();
  }
  if (inProduct % outProduct != 0)
    return emitOptionalError(loc, "cannot reshape ", typeOf(data), ": ", inProduct,
                             " elements are not a multiple of ", outProduct);
  shape[wildcard] = inProduct / outProduct;
  return success();
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                          Adaptor raw,
                                          SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<ReshapeOp>(ctx, raw);
  RankedTensorType dataType = typeOf(adaptor.getData());
  FailureOr<Dims> target = shapeOperand(loc, adaptor.getShape(), "shape");
  if (failed(target))
    return failure();
  bool allowZero = adaptor.getAllowzero() != 0;
  SmallVector<int64_t> shape;
  int64_t wildcard = -1;
  bool hasZero = false;
  for (auto [i, d] : llvm::enumerate(*target)) {
    int64_t dim = kDyn;
    if (!d.isKnown()) {
      // Unknown, unless it is known to be a static dim of the input.
    } else if (d.value == -1) {
      if (wildcard >= 0)
        return emitOptionalError(loc, "shape has more than one -1 (at ", wildcard,
                                 " and ", i, ")");
      wildcard = i;
    } else if (d.value < -1) {
      return emitOptionalError(loc, "shape[", i, "] is ", d.value,
                               ": dims must be >= -1");
    } else if (d.value == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= dataType.getRank())
        return emitOptionalError(loc, "shape[", i,
                                 "] is 0 (copy the input dim) but the input has rank ",
                                 dataType.getRank());
      dim = dataType.getDimSize(i);
    } else {
      hasZero |= d.value == 0;
      dim = d.value;
    }
    shape.push_back(dim);
  }
  if (allowZero && hasZero && wildcard >= 0)
    return emitOptionalError(loc, "with allowzero = 1 the shape cannot hold both "
                                  "a 0 and a -1");
  if (failed(inferReshapeWildcard(loc, adaptor.getData(), *target, allowZero,
                                  wildcard, shape)))
    return failure();
  return pushTensor(results, shape, dataType.getElementType());
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                          Adaptor raw,
                                          SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<FlattenOp>(ctx, raw);
  RankedTensorType type = typeOf(adaptor.getInput());
  int64_t rank = type.getRank();
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < -rank || axis > rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range [", -rank, ", ",
                             rank, "] for rank ", rank);
  if (axis < 0)
    axis += rank;
  ArrayRef<int64_t> dims = type.getShape();
  return pushTensor(results,
                    {productOf(dims.take_front(axis)), productOf(dims.drop_front(axis))},
                    type.getElementType());
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  RankedTensorType type = typeOf(adaptor.getData());
  auto axes = squeezeAxes(loc, adaptor.getAxesInput(), adaptor.getAxes());
  if (failed(axes))
    return failure();
  SmallVector<bool> drop(type.getRank(), false);
  if (!*axes) {
    for (auto [i, d] : llvm::enumerate(type.getShape()))
      drop[i] = d == 1;
  } else {
    auto normalized = normalizeAxes(loc, **axes, type.getRank());
    if (failed(normalized))
      return failure();
    for (int64_t a : *normalized) {
      int64_t d = type.getDimSize(a);
      if (d != 1 && !ShapedType::isDynamic(d))
        return emitOptionalError(loc, "cannot squeeze dim ", a, " of size ", d);
      drop[a] = true;
    }
  }
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    if (!drop[i])
      shape.push_back(d);
  return pushTensor(results, shape, type.getElementType());
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto axes = squeezeAxes(loc, adaptor.getAxesInput(), adaptor.getAxes());
  if (failed(axes))
    return failure();
  if (!*axes)
    return emitOptionalError(loc, "unsqueeze needs axes");
  RankedTensorType type = typeOf(adaptor.getData());
  int64_t rank = type.getRank() + (*axes)->size();
  auto normalized = normalizeAxes(loc, **axes, rank);
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> shape(rank, 1);
  ArrayRef<int64_t> input = type.getShape();
  for (int64_t i = 0; i < rank; ++i)
    if (!llvm::is_contained(*normalized, i)) {
      shape[i] = input.front();
      input = input.drop_front();
    }
  return pushTensor(results, shape, type.getElementType());
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  RankedTensorType type = typeOf(adaptor.getData());
  SmallVector<int64_t> perm = transposePerm(adaptor.getPerm(), type.getRank());
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return emitOptionalError(loc, "perm has ", perm.size(),
                             " entries for an input of rank ", type.getRank());
  SmallVector<bool> used(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= type.getRank() || used[p])
      return emitOptionalError(loc, "perm is not a permutation of [0, ",
                               type.getRank(), "): entry ", p);
    used[p] = true;
    shape.push_back(type.getDimSize(p));
  }
  return pushTensor(results, shape, type.getElementType());
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RankedTensorType type = typeOf(adaptor.getInput());
  FailureOr<Dims> target = shapeOperand(loc, adaptor.getShape(), "shape");
  if (failed(target))
    return failure();
  SmallVector<int64_t> shape;
  for (const KnownDim &d : *target) {
    if (d.isKnown() && d.value < 0)
      return emitOptionalError(loc, "shape holds ", d.value,
                               ": dims must be >= 0");
    shape.push_back(d.value);
  }
  FailureOr<SmallVector<int64_t>> result =
      broadcastShapes(loc, {type.getShape(), shape});
  if (failed(result))
    return failure();
  return pushTensor(results, *result, type.getElementType());
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  RankedTensorType type = typeOf(adaptor.getInput());
  FailureOr<Dims> repeats = shapeOperand(loc, adaptor.getRepeats(), "repeats");
  if (failed(repeats))
    return failure();
  if (static_cast<int64_t>(repeats->size()) != type.getRank())
    return emitOptionalError(loc, "repeats has ", repeats->size(),
                             " entries for an input of rank ", type.getRank());
  SmallVector<int64_t> shape;
  for (auto [d, r] : llvm::zip(type.getShape(), *repeats)) {
    if (r.isKnown() && r.value < 0)
      return emitOptionalError(loc, "repeats holds ", r.value,
                               ": repeats must be >= 0");
    shape.push_back(mulDims(d, r.value));
  }
  return pushTensor(results, shape, type.getElementType());
}

//===----------------------------------------------------------------------===//
// Joining and splitting
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "concat needs at least one input");
  RankedTensorType first = typeOf(inputs.front());
  if (first.getRank() == 0)
    return emitOptionalError(loc, "concat's inputs must have rank 1 or more");
  FailureOr<int64_t> axis = normalizeAxis(
      loc, static_cast<int64_t>(adaptor.getAxis()), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (auto [k, input] : llvm::enumerate(inputs)) {
    RankedTensorType type = typeOf(input);
    if (type.getElementType() != first.getElementType())
      return emitOptionalError(loc, "operand ", k, " has element type ",
                               type.getElementType(), ", operand 0 has ",
                               first.getElementType());
    if (type.getRank() != first.getRank())
      return emitOptionalError(loc, "operand ", k, " has rank ", type.getRank(),
                               ", operand 0 has rank ", first.getRank());
    for (int64_t i = 0; i < type.getRank(); ++i) {
      int64_t d = type.getDimSize(i);
      if (i == *axis) {
        shape[i] = ShapedType::isDynamic(shape[i]) || ShapedType::isDynamic(d)
                       ? kDyn
                       : shape[i] + d;
      } else if (ShapedType::isDynamic(shape[i])) {
        shape[i] = d;
      } else if (!ShapedType::isDynamic(d) && d != shape[i]) {
        return emitOptionalError(loc, "dimension ", i, " is ", shape[i],
                                 " in one operand and ", d, " in operand ", k);
      }
    }
  }
  return pushTensor(results, shape, first.getElementType());
}

/// Split's part sizes along its axis of size `dim` (kDynamic where unknown).
static FailureOr<SmallVector<int64_t>>
splitSizes(std::optional<Location> loc, SplitOp::Adaptor adaptor, int64_t dim) {
  std::optional<int64_t> numOutputs;
  if (adaptor.getNumOutputs())
    numOutputs = static_cast<int64_t>(*adaptor.getNumOutputs());
  SmallVector<int64_t> sizes;
  bool given = true;
  if (!isNone(adaptor.getSplitInput())) {
    if (adaptor.getSplit())
      return emitOptionalError(loc, "give the split sizes as an operand or as the "
                                    "`split` attribute, not both");
    FailureOr<Dims> dims = shapeOperand(loc, adaptor.getSplitInput(), "split");
    if (failed(dims))
      return failure();
    for (const KnownDim &d : *dims)
      sizes.push_back(d.value);
  } else if (adaptor.getSplit()) {
    sizes.assign(adaptor.getSplit()->begin(), adaptor.getSplit()->end());
  } else {
    given = false;
  }
  if (given) {
    if (numOutputs && *numOutputs != static_cast<int64_t>(sizes.size()))
      return emitOptionalError(loc, "num_outputs is ", *numOutputs, " but there are ",
                               sizes.size(), " split sizes");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (!ShapedType::isDynamic(s) && s < 0)
        return emitOptionalError(loc, "split size ", s, " is negative");
      sum = ShapedType::isDynamic(s) || ShapedType::isDynamic(sum) ? kDyn : sum + s;
    }
    if (!ShapedType::isDynamic(dim) && !ShapedType::isDynamic(sum) && sum != dim)
      return emitOptionalError(loc, "split sizes add up to ", sum,
                               " but the split dim is ", dim);
    return sizes;
  }
  if (!numOutputs)
    return emitOptionalError(loc, "split needs num_outputs or split sizes");
  if (*numOutputs < 1)
    return emitOptionalError(loc, "num_outputs is ", *numOutputs, ", must be >= 1");
  int64_t n = *numOutputs;
  // Opset 18: parts of ceil(dim / n), the last one smaller.
  int64_t chunk = ShapedType::isDynamic(dim) ? kDyn : (dim + n - 1) / n;
  for (int64_t k = 0; k < n; ++k)
    sizes.push_back(ShapedType::isDynamic(chunk)
                        ? kDyn
                        : std::clamp<int64_t>(dim - k * chunk, 0, chunk));
  return sizes;
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                        Adaptor raw,
                                        SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<SplitOp>(ctx, raw);
  RankedTensorType type = typeOf(adaptor.getInput());
  if (type.getRank() == 0)
    return emitOptionalError(loc, "split's input must have rank 1 or more");
  FailureOr<int64_t> axis =
      normalizeAxis(loc, static_cast<int64_t>(adaptor.getAxis()), type.getRank());
  if (failed(axis))
    return failure();
  auto sizes = splitSizes(loc, adaptor, type.getDimSize(*axis));
  if (failed(sizes))
    return failure();
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t s : *sizes) {
    shape[*axis] = s;
    results.push_back(tensorOf(shape, type.getElementType()));
  }
  return success();
}

/// The known values of one of Slice's index operands, all kDynamic when
/// unknown; std::nullopt when not even their count is known.
static std::optional<SmallVector<int64_t>> sliceOperand(Value v) {
  std::optional<SmallVector<int64_t>> values = getKnownIntValues(v);
  if (values)
    return values;
  RankedTensorType type = typeOf(v);
  if (type.getRank() == 1 && !type.isDynamicDim(0))
    return SmallVector<int64_t>(type.getDimSize(0), kDyn);
  return std::nullopt;
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  RankedTensorType type = typeOf(adaptor.getData());
  SmallVector<int64_t> allDynamic(type.getRank(), kDyn);
  auto starts = sliceOperand(adaptor.getStarts());
  auto ends = sliceOperand(adaptor.getEnds());
  if (!starts || !ends)
    return pushTensor(results, allDynamic, type.getElementType());
  size_t n = starts->size();
  if (ends->size() != n)
    return emitOptionalError(loc, "starts has ", n, " entries but ends has ",
                             ends->size());
  SmallVector<int64_t> axes, steps(n, 1);
  if (isNone(adaptor.getAxes())) {
    for (size_t i = 0; i < n; ++i)
      axes.push_back(i);
  } else {
    auto known = sliceOperand(adaptor.getAxes());
    if (!known || llvm::any_of(*known, ShapedType::isDynamic))
      return pushTensor(results, allDynamic, type.getElementType());
    axes = *known;
  }
  if (!isNone(adaptor.getSteps())) {
    auto known = sliceOperand(adaptor.getSteps());
    if (!known)
      return pushTensor(results, allDynamic, type.getElementType());
    steps = *known;
  }
  if (axes.size() != n || steps.size() != n)
    return emitOptionalError(loc, "starts has ", n, " entries, axes ", axes.size(),
                             " and steps ", steps.size());
  auto normalized = normalizeAxes(loc, axes, type.getRank());
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> shape(type.getShape());
  for (size_t i = 0; i < n; ++i) {
    int64_t a = (*normalized)[i], dim = shape[a];
    if (steps[i] == 0)
      return emitOptionalError(loc, "steps[", i, "] is 0");
    if (ShapedType::isDynamic(dim) || ShapedType::isDynamic((*starts)[i]) ||
        ShapedType::isDynamic((*ends)[i]) || ShapedType::isDynamic(steps[i])) {
      shape[a] = kDyn;
      continue;
    }
    shape[a] = clampSliceAxis(dim, (*starts)[i], (*ends)[i], steps[i]).count;
  }
  return pushTensor(results, shape, type.getElementType());
}

//===----------------------------------------------------------------------===//
// Gather and scatter
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                         Adaptor raw,
                                         SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<GatherOp>(ctx, raw);
  RankedTensorType type = typeOf(adaptor.getData());
  if (type.getRank() < 1)
    return emitOptionalError(loc, "gather needs data of rank >= 1");
  FailureOr<int64_t> axis =
      normalizeAxis(loc, static_cast<int64_t>(adaptor.getAxis()), type.getRank());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> dims = type.getShape();
  SmallVector<int64_t> shape(dims.take_front(*axis));
  llvm::append_range(shape, typeOf(adaptor.getIndices()).getShape());
  llvm::append_range(shape, dims.drop_front(*axis + 1));
  return pushTensor(results, shape, type.getElementType());
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *ctx,
                                                 std::optional<Location> loc,
                                                 Adaptor raw,
                                                 SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<GatherElementsOp>(ctx, raw);
  RankedTensorType type = typeOf(adaptor.getData());
  RankedTensorType indices = typeOf(adaptor.getIndices());
  if (indices.getRank() != type.getRank())
    return emitOptionalError(loc, "indices have rank ", indices.getRank(),
                             ", data has rank ", type.getRank());
  if (failed(normalizeAxis(loc, static_cast<int64_t>(adaptor.getAxis()),
                           type.getRank())))
    return failure();
  return pushTensor(results, indices.getShape(), type.getElementType());
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                           Adaptor raw,
                                           SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<GatherNDOp>(ctx, raw);
  RankedTensorType type = typeOf(adaptor.getData());
  RankedTensorType indices = typeOf(adaptor.getIndices());
  int64_t batchDims = static_cast<int64_t>(adaptor.getBatchDims());
  int64_t r = type.getRank(), q = indices.getRank();
  if (r < 1 || q < 1)
    return emitOptionalError(loc, "data and indices need rank >= 1");
  if (batchDims < 0 || batchDims >= std::min(r, q))
    return emitOptionalError(loc, "batch_dims ", batchDims,
                             " must be in [0, min(rank(data), rank(indices)))");
  int64_t k = indices.getDimSize(q - 1);
  if (ShapedType::isDynamic(k))
    return emitOptionalError(loc, "the last dim of indices must be static: it "
                                  "sets the result rank");
  if (k < 1 || k > r - batchDims)
    return emitOptionalError(loc, "the last dim of indices is ", k,
                             ", must be in [1, ", r - batchDims, "]");
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  llvm::append_range(shape, type.getShape().drop_front(batchDims + k));
  return pushTensor(results, shape, type.getElementType());
}

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *ctx,
                                                  std::optional<Location> loc,
                                                  Adaptor raw,
                                                  SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<ScatterElementsOp>(ctx, raw);
  RankedTensorType type = typeOf(adaptor.getData());
  RankedTensorType updates = typeOf(adaptor.getUpdates());
  if (failed(checkReduction(loc, adaptor.getReduction())) ||
      failed(checkSameShape(loc, typeOf(adaptor.getIndices()).getShape(),
                            updates.getShape(), "indices and updates")) ||
      failed(normalizeAxis(loc, static_cast<int64_t>(adaptor.getAxis()),
                           type.getRank())))
    return failure();
  if (updates.getRank() != type.getRank())
    return emitOptionalError(loc, "updates have rank ", updates.getRank(),
                             ", data has rank ", type.getRank());
  if (updates.getElementType() != type.getElementType())
    return emitOptionalError(loc, "updates have element type ",
                             updates.getElementType(), ", data has ",
                             type.getElementType());
  results.push_back(type);
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                            Adaptor raw,
                                            SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<ScatterNDOp>(ctx, raw);
  RankedTensorType type = typeOf(adaptor.getData());
  RankedTensorType indices = typeOf(adaptor.getIndices());
  RankedTensorType updates = typeOf(adaptor.getUpdates());
  if (failed(checkReduction(loc, adaptor.getReduction())))
    return failure();
  int64_t q = indices.getRank();
  if (q < 1)
    return emitOptionalError(loc, "indices need rank >= 1");
  int64_t k = indices.getDimSize(q - 1);
  if (!ShapedType::isDynamic(k)) {
    if (k > type.getRank())
      return emitOptionalError(loc, "the last dim of indices is ", k,
                               ", more than the data rank ", type.getRank());
    SmallVector<int64_t> expected(indices.getShape().drop_back());
    llvm::append_range(expected, type.getShape().drop_front(k));
    if (failed(checkSameShape(loc, expected, updates.getShape(),
                              "updates and indices.shape[:-1] + data.shape[k:]")))
      return failure();
  }
  results.push_back(type);
  return success();
}

LogicalResult TensorScatterOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor raw,
    SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<TensorScatterOp>(ctx, raw);
  RankedTensorType past = typeOf(adaptor.getPastCache());
  RankedTensorType update = typeOf(adaptor.getUpdate());
  StringRef mode = adaptor.getMode();
  if (mode != "linear" && mode != "circular")
    return emitOptionalError(loc, "mode \"", mode,
                             "\" is not one of linear, circular");
  if (past.getRank() < 2)
    return emitOptionalError(loc, "past_cache needs rank >= 2, got ", past);
  FailureOr<int64_t> axis = normalizeAxis(
      loc, static_cast<int64_t>(adaptor.getAxis()), past.getRank());
  if (failed(axis))
    return failure();
  if (*axis == 0)
    return emitOptionalError(loc, "axis is the batch dim 0");
  if (update.getElementType() != past.getElementType())
    return emitOptionalError(loc, "update has element type ",
                             update.getElementType(), ", past_cache has ",
                             past.getElementType());
  SmallVector<int64_t> expected(past.getShape());
  expected[*axis] = update.getDimSize(*axis);
  if (failed(checkSameShape(loc, expected, update.getShape(),
                            "update and past_cache outside the axis")))
    return failure();
  if (!isNone(adaptor.getWriteIndices())) {
    RankedTensorType indices = typeOf(adaptor.getWriteIndices());
    if (indices.getRank() != 1)
      return emitOptionalError(loc, "write_indices must be [batch], got ",
                               indices);
    if (failed(checkSameShape(loc, indices.getShape(),
                              past.getShape().take_front(1),
                              "write_indices and the batch")))
      return failure();
  }
  results.push_back(past);
  return success();
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

LogicalResult ConstantOfShapeOp::inferReturnTypes(MLIRContext *ctx,
                                                  std::optional<Location> loc,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &results) {
  FailureOr<Dims> target = shapeOperand(loc, adaptor.getInput(), "input");
  if (failed(target))
    return failure();
  Type elementType = Float32Type::get(ctx);
  if (auto value = adaptor.getValueAttr()) {
    if (value.getNumElements() != 1)
      return emitOptionalError(loc, "value must have one element, got ",
                               value.getType());
    elementType = value.getElementType();
  }
  SmallVector<int64_t> shape;
  for (const KnownDim &d : *target) {
    if (d.isKnown() && d.value < 0)
      return emitOptionalError(loc, "the shape holds ", d.value,
                               ": dims must be >= 0");
    shape.push_back(d.value);
  }
  return pushTensor(results, shape, elementType);
}

LogicalResult RangeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  Type elementType = getElementTypeOrSelf(adaptor.getStart());
  for (Value v : adaptor.getOperands()) {
    if (typeOf(v).getRank() != 0)
      return emitOptionalError(loc, "start, limit and delta must be scalars, got ",
                               v.getType());
    if (getElementTypeOrSelf(v) != elementType)
      return emitOptionalError(loc, "start, limit and delta must have one element "
                                    "type, got ",
                               elementType, " and ", getElementTypeOrSelf(v));
  }
  std::optional<int64_t> length = kDyn;
  if (isa<IntegerType>(elementType)) {
    auto start = knownScalar(adaptor.getStart());
    auto limit = knownScalar(adaptor.getLimit());
    auto delta = knownScalar(adaptor.getDelta());
    if (delta && *delta == 0)
      return emitOptionalError(loc, "delta is 0");
    if (start && limit && delta)
      length = rangeLength(*start, *limit, *delta);
  } else {
    auto start = getKnownFloatValues(adaptor.getStart());
    auto limit = getKnownFloatValues(adaptor.getLimit());
    auto delta = getKnownFloatValues(adaptor.getDelta());
    if (delta && (*delta)[0] == 0)
      return emitOptionalError(loc, "delta is 0");
    if (start && limit && delta)
      length = rangeLength((*start)[0], (*limit)[0], (*delta)[0]);
  }
  return pushTensor(results, {length.value_or(kDyn)}, elementType);
}

LogicalResult EyeLikeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  RankedTensorType type = typeOf(adaptor.getInput());
  if (type.getRank() != 2)
    return emitOptionalError(loc, "eye_like needs a 2-D input, got ", type);
  Type elementType = type.getElementType();
  if (auto dtype = adaptor.getDtype())
    elementType = *dtype;
  return pushTensor(results, type.getShape(), elementType);
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                         Adaptor raw,
                                         SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<OneHotOp>(ctx, raw);
  RankedTensorType indices = typeOf(adaptor.getIndices());
  RankedTensorType values = typeOf(adaptor.getValues());
  if (failed(checkOneElement(loc, adaptor.getDepth(), "depth")))
    return failure();
  if (values.getRank() != 1 ||
      (!values.isDynamicDim(0) && values.getDimSize(0) != 2))
    return emitOptionalError(loc, "values must be [off, on], got ", values);
  int64_t rank = indices.getRank() + 1;
  FailureOr<int64_t> axis =
      normalizeAxis(loc, static_cast<int64_t>(adaptor.getAxis()), rank);
  if (failed(axis))
    return failure();
  int64_t depth = kDyn;
  if (auto known = knownScalar(adaptor.getDepth()))
    depth = *known;
  else if (auto floats = getKnownFloatValues(adaptor.getDepth()))
    depth = static_cast<int64_t>((*floats)[0]);
  if (!ShapedType::isDynamic(depth) && depth < 1)
    return emitOptionalError(loc, "depth is ", depth, ", must be >= 1");
  SmallVector<int64_t> shape(indices.getShape());
  shape.insert(shape.begin() + *axis, depth);
  return pushTensor(results, shape, values.getElementType());
}

//===----------------------------------------------------------------------===//
// Same-shape data movement and scans
//===----------------------------------------------------------------------===//

LogicalResult TriluOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  RankedTensorType type = typeOf(adaptor.getInput());
  if (type.getRank() < 2)
    return emitOptionalError(loc, "trilu needs rank >= 2, got ", type);
  if (!isNone(adaptor.getK()) && failed(checkOneElement(loc, adaptor.getK(), "k")))
    return failure();
  results.push_back(type);
  return success();
}

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RankedTensorType type = typeOf(adaptor.getX());
  if (failed(checkOneElement(loc, adaptor.getAxis(), "axis")))
    return failure();
  if (auto axis = knownScalar(adaptor.getAxis()))
    if (failed(normalizeAxis(loc, *axis, type.getRank())))
      return failure();
  results.push_back(type);
  return success();
}

LogicalResult ReverseSequenceOp::inferReturnTypes(MLIRContext *ctx,
                                                  std::optional<Location> loc,
                                                  Adaptor raw,
                                                  SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<ReverseSequenceOp>(ctx, raw);
  RankedTensorType type = typeOf(adaptor.getInput());
  int64_t batch = static_cast<int64_t>(adaptor.getBatchAxis());
  int64_t time = static_cast<int64_t>(adaptor.getTimeAxis());
  if (type.getRank() < 2)
    return emitOptionalError(loc, "reverse_sequence needs rank >= 2, got ", type);
  if (!((batch == 0 && time == 1) || (batch == 1 && time == 0)))
    return emitOptionalError(loc, "batch_axis and time_axis must be 0 and 1, got ",
                             batch, " and ", time);
  RankedTensorType lens = typeOf(adaptor.getSequenceLens());
  if (lens.getRank() != 1 ||
      failed(checkSameShape(loc, lens.getShape(), {type.getDimSize(batch)},
                            "sequence_lens and the batch dim")))
    return emitOptionalError(loc, "sequence_lens must be 1-D with one entry per batch");
  results.push_back(type);
  return success();
}

/// DepthToSpace (`toSpace`) and SpaceToDepth on a 4-D input.
static LogicalResult inferBlockRearrange(std::optional<Location> loc, Value input,
                                         int64_t block, bool toSpace,
                                         SmallVectorImpl<Type> &results) {
  RankedTensorType type = typeOf(input);
  if (type.getRank() != 4)
    return emitOptionalError(loc, "needs a 4-D [N, C, H, W] input, got ", type);
  if (block < 1)
    return emitOptionalError(loc, "blocksize is ", block, ", must be >= 1");
  SmallVector<int64_t> shape(type.getShape());
  // The dims divided by the block (C by block², or H and W by block).
  SmallVector<std::pair<int64_t, int64_t>> divided;
  if (toSpace)
    divided.push_back({1, block * block});
  else
    divided = {{2, block}, {3, block}};
  for (auto [i, by] : divided) {
    if (!ShapedType::isDynamic(shape[i]) && shape[i] % by != 0)
      return emitOptionalError(loc, "dim ", i, " (", shape[i],
                               ") is not a multiple of ", by);
    shape[i] = ShapedType::isDynamic(shape[i]) ? kDyn : shape[i] / by;
  }
  if (toSpace) {
    shape[2] = mulDims(shape[2], block);
    shape[3] = mulDims(shape[3], block);
  } else {
    shape[1] = mulDims(shape[1], block * block);
  }
  return pushTensor(results, shape, type.getElementType());
}

LogicalResult DepthToSpaceOp::inferReturnTypes(MLIRContext *ctx,
                                               std::optional<Location> loc,
                                               Adaptor raw,
                                               SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<DepthToSpaceOp>(ctx, raw);
  StringRef mode = adaptor.getMode();
  if (mode != "DCR" && mode != "CRD")
    return emitOptionalError(loc, "mode \"", mode, "\" is not DCR or CRD");
  return inferBlockRearrange(loc, adaptor.getInput(),
                             static_cast<int64_t>(adaptor.getBlocksize()),
                             /*toSpace=*/true, results);
}

LogicalResult SpaceToDepthOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  return inferBlockRearrange(loc, adaptor.getInput(),
                             static_cast<int64_t>(adaptor.getBlocksize()),
                             /*toSpace=*/false, results);
}

//===----------------------------------------------------------------------===//
// Data-dependent results
//===----------------------------------------------------------------------===//

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                       Adaptor raw,
                                       SmallVectorImpl<Type> &results) {
  Adaptor adaptor = withDefaults<TopKOp>(ctx, raw);
  RankedTensorType type = typeOf(adaptor.getX());
  if (type.getRank() == 0)
    return emitOptionalError(loc, "topk's input must have rank 1 or more");
  if (failed(checkOneElement(loc, adaptor.getK(), "K")))
    return failure();
  FailureOr<int64_t> axis =
      normalizeAxis(loc, static_cast<int64_t>(adaptor.getAxis()), type.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(type.getShape());
  std::optional<int64_t> k = knownScalar(adaptor.getK());
  if (k && (*k < 0 || (!ShapedType::isDynamic(shape[*axis]) && *k > shape[*axis])))
    return emitOptionalError(loc, "K is ", *k, " for a dim of size ", shape[*axis]);
  shape[*axis] = k.value_or(kDyn);
  results.push_back(tensorOf(shape, type.getElementType()));
  return pushTensor(results, shape, IntegerType::get(ctx, 64));
}

LogicalResult NonZeroOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  return pushTensor(results, {typeOf(adaptor.getX()).getRank(), kDyn},
                    IntegerType::get(ctx, 64));
}
