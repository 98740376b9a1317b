//===- KnownValues.cpp - Compile-time values of shape arithmetic ----------===//
//
// kiln::getKnownIntValues / getKnownDims / getKnownFloatValues: what is known
// at compile time about small integer (or float) tensors, seen through
// constants and the shape arithmetic exporters emit around Reshape, Expand,
// Slice, ... (PyTorch: Shape -> Gather -> Unsqueeze -> Concat -> Reshape).
//
// Values are held flattened in row-major order; the public contract only
// promises 0-d and 1-d tensors, but intermediate ones of higher rank (an
// Unsqueeze to 2-D and back) are handled the same way.
//
// Ops of other families (kiln.identity, kiln.cast, kiln.mul, ...) are matched
// by name and operand position, so this file does not depend on their C++
// classes and works as soon as they exist.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/ShapeInference.h"
#include "ShapeUtils.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cstring>

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;
/// Larger tensors are not shape arithmetic; tracking them would only cost.
constexpr int64_t kMaxElements = 256;
/// Bounds on the walk up the use-def chain: depth, and ops visited per query.
constexpr unsigned kMaxDepth = 32;
constexpr unsigned kMaxVisits = 1024;

using Dims = SmallVector<KnownDim>;

/// The element count of a statically shaped tensor of at most kMaxElements
/// elements whose element type is `T`.
template <typename T> std::optional<int64_t> smallStaticCount(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() || !isa<T>(tensor.getElementType()))
    return std::nullopt;
  int64_t n = tensor.getNumElements();
  if (n > kMaxElements)
    return std::nullopt;
  return n;
}

/// Sign- or zero-extends the low `width` bits of `bits` as the integer type
/// `type` reads them (i1 and unsigned types are zero-extended).
int64_t extendTo(IntegerType type, uint64_t bits) {
  unsigned width = type.getWidth();
  if (width >= 64)
    return static_cast<int64_t>(bits);
  if (type.isUnsigned() || width == 1)
    return static_cast<int64_t>(bits & ((uint64_t(1) << width) - 1));
  return llvm::SignExtend64(bits, width);
}

/// The raw little-endian elements of a dense_resource blob, `width` bits
/// each; std::nullopt when the blob is absent (elided) or of the wrong size.
std::optional<SmallVector<uint64_t>>
readResourceBits(DenseResourceElementsAttr attr, unsigned width) {
  AsmResourceBlob *blob = attr.getRawHandle().getBlob();
  if (!blob || width % 8 != 0 || width > 64)
    return std::nullopt;
  ArrayRef<char> data = blob->getData();
  int64_t count = attr.getType().getNumElements();
  size_t bytes = width / 8;
  if (data.size() != count * bytes)
    return std::nullopt;
  SmallVector<uint64_t> bits(count, 0);
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(&bits[i], data.data() + i * bytes, bytes); // little-endian host
  return bits;
}

/// The integer elements of a constant's value.
std::optional<SmallVector<int64_t>> readIntConstant(Attribute value) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements)
    return std::nullopt;
  auto type = dyn_cast<IntegerType>(elements.getElementType());
  if (!type || elements.getNumElements() > kMaxElements)
    return std::nullopt;
  SmallVector<int64_t> result;
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    for (const APInt &i : dense.getValues<APInt>())
      result.push_back(extendTo(type, i.getZExtValue()));
    return result;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    auto bits = readResourceBits(resource, type.getWidth());
    if (!bits)
      return std::nullopt;
    for (uint64_t b : *bits)
      result.push_back(extendTo(type, b));
    return result;
  }
  return std::nullopt;
}

/// The floating-point elements of a constant's value.
std::optional<SmallVector<double>> readFloatConstant(Attribute value) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements)
    return std::nullopt;
  auto type = dyn_cast<FloatType>(elements.getElementType());
  if (!type || elements.getNumElements() > kMaxElements)
    return std::nullopt;
  SmallVector<double> result;
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    for (const APFloat &f : dense.getValues<APFloat>())
      result.push_back(f.convertToDouble());
    return result;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    unsigned width = type.getWidth();
    auto bits = readResourceBits(resource, width);
    if (!bits)
      return std::nullopt;
    for (uint64_t b : *bits)
      result.push_back(
          APFloat(type.getFloatSemantics(), APInt(width, b)).convertToDouble());
    return result;
  }
  return std::nullopt;
}

/// The index into an operand of shape `operand` that numpy broadcasting maps
/// the element `flat` of a result of shape `result` to.
int64_t broadcastSource(ArrayRef<int64_t> result, ArrayRef<int64_t> operand,
                        int64_t flat) {
  int64_t index = 0, stride = 1;
  size_t offset = result.size() - operand.size();
  for (size_t i = result.size(); i-- > 0;) {
    int64_t coord = flat % result[i];
    flat /= result[i];
    if (i < offset)
      continue;
    int64_t d = operand[i - offset];
    index += (d == 1 ? 0 : coord) * stride;
    stride *= d;
  }
  return index;
}

/// ONNX integer elementwise ops on known values; std::nullopt when the
/// result is unknown (an unknown operand, division by zero, overflow).
std::optional<int64_t> applyBinary(StringRef name, int64_t a, int64_t b) {
  int64_t r;
  if (name == "kiln.add")
    return llvm::AddOverflow(a, b, r) ? std::nullopt : std::optional(r);
  if (name == "kiln.sub")
    return llvm::SubOverflow(a, b, r) ? std::nullopt : std::optional(r);
  if (name == "kiln.mul")
    return llvm::MulOverflow(a, b, r) ? std::nullopt : std::optional(r);
  if (name == "kiln.div") {
    // ONNX Div on integers as ONNX Runtime computes it: C++ division,
    // truncating toward zero (not numpy's floor): -7 / 2 = -3.
    if (b == 0 || (a == INT64_MIN && b == -1))
      return std::nullopt;
    return a / b;
  }
  if (name == "kiln.max")
    return std::max(a, b);
  if (name == "kiln.min")
    return std::min(a, b);
  if (name == "kiln.equal")
    return int64_t(a == b);
  return std::nullopt;
}

bool isElementwiseName(StringRef name) {
  return llvm::StringSwitch<bool>(name)
      .Cases({"kiln.add", "kiln.sub", "kiln.mul", "kiln.div"}, true)
      .Cases({"kiln.max", "kiln.min", "kiln.equal", "kiln.where"}, true)
      .Default(false);
}

/// One query: memoizes values, so that a DAG is walked once.
class Evaluator {
public:
  /// The known dims of `v`, or std::nullopt when `v` is not a small,
  /// statically shaped integer tensor.
  std::optional<Dims> eval(Value v, unsigned depth);

private:
  std::optional<Dims> evalOp(Operation *op, Value v, unsigned depth);
  std::optional<Dims> evalShape(ShapeOp op);
  std::optional<Dims> evalGather(GatherOp op, unsigned depth);
  std::optional<Dims> evalSlice(SliceOp op, unsigned depth);
  std::optional<Dims> evalElementwise(Operation *op, Value v, unsigned depth);
  std::optional<Dims> evalRange(Operation *op, unsigned depth);
  std::optional<Dims> evalCast(Operation *op, Value v, unsigned depth);
  std::optional<Dims> evalNegOrAbs(Operation *op, bool negate, unsigned depth);
  /// All elements of `v` known, or std::nullopt.
  std::optional<SmallVector<int64_t>> evalAllKnown(Value v, unsigned depth);

  llvm::DenseMap<Value, Dims> cache;
  unsigned visits = 0;
};

Dims fromValues(ArrayRef<int64_t> values) {
  Dims dims;
  for (int64_t v : values)
    dims.push_back(KnownDim{v, Value(), -1});
  return dims;
}

std::optional<Dims> Evaluator::eval(Value v, unsigned depth) {
  if (!v)
    return std::nullopt;
  std::optional<int64_t> count = smallStaticCount<IntegerType>(v.getType());
  if (!count)
    return std::nullopt;
  Dims unknown(*count);
  auto it = cache.find(v);
  if (it != cache.end())
    return it->second;
  Operation *op = v.getDefiningOp();
  if (!op || depth > kMaxDepth || ++visits > kMaxVisits)
    return unknown;
  std::optional<Dims> result = evalOp(op, v, depth + 1);
  if (!result || static_cast<int64_t>(result->size()) != *count)
    result = unknown;
  cache[v] = *result;
  return result;
}

std::optional<SmallVector<int64_t>> Evaluator::evalAllKnown(Value v,
                                                            unsigned depth) {
  std::optional<Dims> dims = eval(v, depth);
  if (!dims)
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const KnownDim &d : *dims) {
    if (!d.isKnown())
      return std::nullopt;
    values.push_back(d.value);
  }
  return values;
}

std::optional<Dims> Evaluator::evalShape(ShapeOp op) {
  auto type = cast<RankedTensorType>(op.getData().getType());
  auto [begin, end] = shapeOpRange(type.getRank(), op.getStart(), op.getEnd());
  Dims dims;
  for (int64_t i = begin; i < end; ++i) {
    int64_t d = type.getDimSize(i);
    if (ShapedType::isDynamic(d)) {
      auto [source, dim] = canonicalDim(op.getData(), i);
      dims.push_back(KnownDim{kDyn, source, dim});
      continue;
    }
    dims.push_back(KnownDim{d, Value(), -1});
  }
  return dims;
}

std::optional<Dims> Evaluator::evalGather(GatherOp op, unsigned depth) {
  auto dataType = cast<RankedTensorType>(op.getData().getType());
  if (dataType.getRank() != 1)
    return std::nullopt;
  std::optional<Dims> data = eval(op.getData(), depth);
  std::optional<Dims> indices = eval(op.getIndices(), depth);
  if (!data || !indices)
    return std::nullopt;
  int64_t n = data->size();
  Dims result;
  for (const KnownDim &index : *indices) {
    int64_t i = index.value;
    if (index.isKnown() && i < 0)
      i += n;
    if (!index.isKnown() || i < 0 || i >= n)
      result.push_back(KnownDim{});
    else
      result.push_back((*data)[i]);
  }
  return result;
}

std::optional<Dims> Evaluator::evalSlice(SliceOp op, unsigned depth) {
  std::optional<Dims> data = eval(op.getData(), depth);
  auto starts = evalAllKnown(op.getStarts(), depth);
  auto ends = evalAllKnown(op.getEnds(), depth);
  if (!data || !starts || !ends || starts->size() != 1 || ends->size() != 1 ||
      cast<RankedTensorType>(op.getData().getType()).getRank() != 1)
    return std::nullopt;
  int64_t step = 1;
  if (!isNone(op.getSteps())) {
    auto steps = evalAllKnown(op.getSteps(), depth);
    if (!steps || steps->size() != 1 || (*steps)[0] == 0)
      return std::nullopt;
    step = (*steps)[0];
  }
  if (!isNone(op.getAxes())) {
    auto axes = evalAllKnown(op.getAxes(), depth);
    if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1))
      return std::nullopt;
  }
  SliceAxis axis =
      clampSliceAxis(data->size(), (*starts)[0], (*ends)[0], step);
  Dims result;
  for (int64_t i = 0; i < axis.count; ++i)
    result.push_back((*data)[axis.start + i * axis.step]);
  return result;
}

std::optional<Dims> Evaluator::evalElementwise(Operation *op, Value v,
                                               unsigned depth) {
  StringRef name = op->getName().getStringRef();
  ArrayRef<int64_t> resultShape = cast<RankedTensorType>(v.getType()).getShape();
  SmallVector<Dims> operands;
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value operand : op->getOperands()) {
    std::optional<Dims> dims = eval(operand, depth);
    if (!dims)
      return std::nullopt;
    operands.push_back(std::move(*dims));
    shapes.push_back(cast<RankedTensorType>(operand.getType()).getShape());
  }
  bool isWhere = name == "kiln.where";
  if (operands.empty() || (isWhere && operands.size() != 3))
    return std::nullopt;
  int64_t count = ShapedType::getNumElements(resultShape);
  Dims result;
  for (int64_t i = 0; i < count; ++i) {
    auto at = [&](size_t k) -> const KnownDim & {
      return operands[k][broadcastSource(resultShape, shapes[k], i)];
    };
    if (isWhere) {
      const KnownDim &cond = at(0);
      result.push_back(cond.isKnown() ? at(cond.value ? 1 : 2) : KnownDim{});
      continue;
    }
    // Max and Min are variadic; the others have two operands.
    bool isKnown = at(0).isKnown() &&
                   (operands.size() > 1 || name == "kiln.max" || name == "kiln.min");
    int64_t acc = at(0).value;
    for (size_t k = 1; k < operands.size() && isKnown; ++k) {
      std::optional<int64_t> next =
          at(k).isKnown() ? applyBinary(name, acc, at(k).value) : std::nullopt;
      isKnown = next.has_value();
      acc = next.value_or(kDyn);
    }
    result.push_back(isKnown ? KnownDim{acc, Value(), -1} : KnownDim{});
  }
  return result;
}

std::optional<Dims> Evaluator::evalRange(Operation *op, unsigned depth) {
  auto start = evalAllKnown(op->getOperand(0), depth);
  auto limit = evalAllKnown(op->getOperand(1), depth);
  auto delta = evalAllKnown(op->getOperand(2), depth);
  if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 ||
      delta->size() != 1)
    return std::nullopt;
  std::optional<int64_t> n = rangeLength((*start)[0], (*limit)[0], (*delta)[0]);
  if (!n || *n > kMaxElements)
    return std::nullopt;
  SmallVector<int64_t> values;
  for (int64_t i = 0; i < *n; ++i)
    values.push_back((*start)[0] + i * (*delta)[0]);
  return fromValues(values);
}

std::optional<Dims> Evaluator::evalCast(Operation *op, Value v, unsigned depth) {
  auto to = cast<IntegerType>(getElementTypeOrSelf(v.getType()));
  Value input = op->getOperand(0);
  Dims result;
  if (isa<FloatType>(getElementTypeOrSelf(input.getType()))) {
    // ONNX Cast from float to int truncates toward zero.
    std::optional<SmallVector<double>> floats = getKnownFloatValues(input);
    if (!floats)
      return std::nullopt;
    for (double f : *floats) {
      bool fits = std::isfinite(f) && std::abs(f) < 9.2e18;
      result.push_back(fits ? KnownDim{extendTo(to, static_cast<uint64_t>(
                                                        static_cast<int64_t>(f))),
                                       Value(), -1}
                            : KnownDim{});
    }
    return result;
  }
  std::optional<Dims> dims = eval(input, depth);
  if (!dims)
    return std::nullopt;
  for (KnownDim d : *dims) {
    if (d.isKnown())
      d.value = to.getWidth() == 1 ? int64_t(d.value != 0)
                                   : extendTo(to, static_cast<uint64_t>(d.value));
    result.push_back(d);
  }
  return result;
}

std::optional<Dims> Evaluator::evalOp(Operation *op, Value v, unsigned depth) {
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    std::optional<SmallVector<int64_t>> values =
        readIntConstant(constant.getValue());
    return values ? std::optional(fromValues(*values)) : std::nullopt;
  }
  if (auto shape = dyn_cast<ShapeOp>(op))
    return evalShape(shape);
  if (auto size = dyn_cast<SizeOp>(op)) {
    auto type = cast<RankedTensorType>(size.getData().getType());
    return Dims{KnownDim{type.hasStaticShape() ? type.getNumElements() : kDyn,
                         Value(), -1}};
  }
  if (auto gather = dyn_cast<GatherOp>(op))
    return evalGather(gather, depth);
  if (auto slice = dyn_cast<SliceOp>(op))
    return evalSlice(slice, depth);
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    Dims result;
    for (Value input : concat.getInputs()) {
      std::optional<Dims> dims = eval(input, depth);
      if (!dims || cast<RankedTensorType>(input.getType()).getRank() != 1)
        return std::nullopt;
      result.append(*dims);
    }
    return result;
  }
  if (auto fill = dyn_cast<ConstantOfShapeOp>(op)) {
    std::optional<SmallVector<int64_t>> value =
        fill.getValue() ? readIntConstant(*fill.getValue()) : std::nullopt;
    if (!value || value->size() != 1)
      return std::nullopt;
    int64_t n = cast<RankedTensorType>(v.getType()).getNumElements();
    return fromValues(SmallVector<int64_t>(n, (*value)[0]));
  }
  if (auto expand = dyn_cast<ExpandOp>(op)) {
    std::optional<Dims> input = eval(expand.getInput(), depth);
    if (!input)
      return std::nullopt;
    ArrayRef<int64_t> result = cast<RankedTensorType>(v.getType()).getShape();
    ArrayRef<int64_t> source =
        cast<RankedTensorType>(expand.getInput().getType()).getShape();
    Dims dims;
    for (int64_t i = 0, e = ShapedType::getNumElements(result); i < e; ++i)
      dims.push_back((*input)[broadcastSource(result, source, i)]);
    return dims;
  }
  if (isa<RangeOp>(op))
    return evalRange(op, depth);

  StringRef name = op->getName().getStringRef();
  if (name == "kiln.cast" && op->getNumOperands() == 1)
    return evalCast(op, v, depth);
  // Ops that keep the elements and their row-major order.
  if (isa<ReshapeOp, SqueezeOp, UnsqueezeOp, FlattenOp>(op) ||
      name == "kiln.identity")
    return eval(op->getOperand(0), depth);
  if (isElementwiseName(name))
    return evalElementwise(op, v, depth);
  if ((name == "kiln.neg" || name == "kiln.abs") && op->getNumOperands() == 1)
    return evalNegOrAbs(op, name == "kiln.neg", depth);
  return std::nullopt;
}

/// Neg and Abs (the ONNX LayerNormalization function computes a rank from
/// Neg(axis)); INT64_MIN has no negation and stays unknown.
std::optional<Dims> Evaluator::evalNegOrAbs(Operation *op, bool negate,
                                            unsigned depth) {
  std::optional<Dims> input = eval(op->getOperand(0), depth);
  if (!input)
    return std::nullopt;
  Dims result(input->size());
  for (auto [in, out] : llvm::zip(*input, result))
    if (in.isKnown() && in.value != INT64_MIN)
      out = KnownDim{negate || in.value < 0 ? -in.value : in.value, Value(), -1};
  return result;
}

} // namespace

std::pair<Value, int64_t> canonicalDim(Value v, int64_t dim) {
  for (unsigned step = 0; step < kMaxDepth; ++step) {
    Operation *op = v.getDefiningOp();
    if (!op)
      break;
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      auto type = cast<RankedTensorType>(transpose.getData().getType());
      SmallVector<int64_t> perm =
          transposePerm(transpose.getPerm(), type.getRank());
      if (dim >= static_cast<int64_t>(perm.size()))
        break;
      v = transpose.getData();
      dim = perm[dim];
      continue;
    }
    if (op->hasTrait<OpTrait::SameOperandsAndResultType>() &&
        op->getNumOperands() > 0) {
      v = op->getOperand(0);
      continue;
    }
    auto reshape = dyn_cast<ReshapeOp>(op);
    if (!reshape)
      break;
    std::optional<SmallVector<KnownDim>> dims = getKnownDims(reshape.getShape());
    if (!dims || dim >= static_cast<int64_t>(dims->size()))
      break;
    const KnownDim &d = (*dims)[dim];
    if (d.isKnown() && d.value == 0 && reshape.getAllowzero() == 0) {
      v = reshape.getData(); // A 0 copies the input dim.
      continue;
    }
    if (d.isKnown() || !d.dimOf)
      break;
    // Already canonical: evalShape made it so.
    return {d.dimOf, d.dim};
  }
  return {v, dim};
}

std::optional<SmallVector<KnownDim>> getKnownDims(Value v) {
  if (!v || isNone(v))
    return std::nullopt;
  return Evaluator().eval(v, 0);
}

std::optional<SmallVector<int64_t>> getKnownIntValues(Value v) {
  std::optional<SmallVector<KnownDim>> dims = getKnownDims(v);
  if (!dims)
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const KnownDim &d : *dims)
    values.push_back(d.value);
  return values;
}

/// getKnownFloatValues, `depth` ops up the use-def chain.
static std::optional<SmallVector<double>> knownFloats(Value v, unsigned depth) {
  if (!v || isNone(v) || !smallStaticCount<FloatType>(v.getType()) ||
      depth > kMaxDepth)
    return std::nullopt;
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto constant = dyn_cast<ConstantOp>(op))
    return readFloatConstant(constant.getValue());
  StringRef name = op->getName().getStringRef();
  if (name == "kiln.cast" && op->getNumOperands() == 1) {
    Value input = op->getOperand(0);
    if (isa<FloatType>(getElementTypeOrSelf(input.getType())))
      return knownFloats(input, depth + 1);
    std::optional<SmallVector<int64_t>> ints = getKnownIntValues(input);
    if (!ints || llvm::any_of(*ints, ShapedType::isDynamic))
      return std::nullopt;
    return SmallVector<double>(ints->begin(), ints->end());
  }
  if (isa<ReshapeOp, SqueezeOp, UnsqueezeOp, FlattenOp>(op) ||
      name == "kiln.identity")
    return knownFloats(op->getOperand(0), depth + 1);
  return std::nullopt;
}

std::optional<SmallVector<double>> getKnownFloatValues(Value v) {
  return knownFloats(v, 0);
}

} // namespace kiln
