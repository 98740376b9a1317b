//===- LayoutUtils.cpp - Permutations and permuted constants --------------===//
//
// Constant data is moved as raw bytes, so a transpose of a weight costs one
// pass over its elements whatever the element type; i1 data (bit-packed in a
// DenseElementsAttr) goes through bools.
//
//===----------------------------------------------------------------------===//

#include "LayoutUtils.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;

namespace kiln::layout {

/// Constants of at least this many bytes become dense_resource blobs, the
/// importer's threshold.
static constexpr int64_t kResourceThresholdBytes = 1024;

SmallVector<int64_t> getPermutation(TransposeOp op) {
  if (std::optional<ArrayRef<int64_t>> perm = op.getPerm())
    return SmallVector<int64_t>(*perm);
  int64_t rank = op.getData().getType().getRank();
  SmallVector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  return reversed;
}

SmallVector<int64_t> invertPermutation(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  return inverse;
}

bool isIdentityPermutation(ArrayRef<int64_t> perm) {
  for (auto [i, p] : llvm::enumerate(perm))
    if (p != int64_t(i))
      return false;
  return true;
}

SmallVector<int64_t> permuteShape(ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> perm) {
  SmallVector<int64_t> result;
  for (int64_t p : perm)
    result.push_back(shape[p]);
  return result;
}

bool isTransposeAReshape(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (shape[p] == 1)
      continue;
    if (p < last)
      return false;
    last = p;
  }
  return true;
}

namespace {
/// A constant's elements as row-major bytes, `width` bytes each (bools one
/// byte each).
struct RawElements {
  std::vector<char> bytes;
  size_t width = 0;
  bool isBool = false;
};
} // namespace

/// The bytes of one element of `type`, 0 for types that are not byte-sized.
static size_t getElementBytes(Type type) {
  if (type.isInteger(1))
    return 1;
  unsigned bits = type.getIntOrFloatBitWidth();
  return bits % 8 == 0 ? bits / 8 : 0;
}

static std::optional<RawElements> readElements(ElementsAttr attr) {
  Type elementType = attr.getElementType();
  if (!elementType.isIntOrFloat())
    return std::nullopt;
  RawElements raw;
  raw.width = getElementBytes(elementType);
  raw.isBool = elementType.isInteger(1);
  if (raw.width == 0)
    return std::nullopt;
  int64_t count = attr.getNumElements();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (raw.isBool) {
      for (bool b : dense.getValues<bool>())
        raw.bytes.push_back(b ? 1 : 0);
      return raw;
    }
    ArrayRef<char> data = dense.getRawData();
    if (dense.isSplat()) {
      raw.bytes.reserve(count * raw.width);
      for (int64_t i = 0; i < count; ++i)
        raw.bytes.insert(raw.bytes.end(), data.begin(),
                         data.begin() + raw.width);
      return raw;
    }
    raw.bytes.assign(data.begin(), data.end());
    return raw;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || raw.isBool)
      return std::nullopt;
    ArrayRef<char> data = blob->getData();
    if (int64_t(data.size()) != count * int64_t(raw.width))
      return std::nullopt;
    raw.bytes.assign(data.begin(), data.end());
    return raw;
  }
  return std::nullopt;
}

bool canReadElements(ElementsAttr attr) {
  if (auto dense = dyn_cast<DenseElementsAttr>(attr))
    return getElementBytes(dense.getElementType()) != 0;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    size_t width = getElementBytes(resource.getElementType());
    return blob && width != 0 && !resource.getElementType().isInteger(1) &&
           int64_t(blob->getData().size()) ==
               resource.getNumElements() * int64_t(width);
  }
  return false;
}

/// The name of the resource blob behind `attr`, or "layout".
static std::string getBlobName(ElementsAttr attr) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
    return resource.getRawHandle().getKey().str();
  return "layout";
}

/// An elements attribute of `type` holding `raw` (already in `type`'s order).
static ElementsAttr makeElements(RankedTensorType type, const RawElements &raw,
                                 StringRef blobName) {
  if (raw.isBool) {
    SmallVector<bool> values;
    for (char c : raw.bytes)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, values);
  }
  if (int64_t(raw.bytes.size()) >= kResourceThresholdBytes) {
    AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(raw.bytes), alignof(std::max_align_t));
    return DenseResourceElementsAttr::get(type, blobName, std::move(blob));
  }
  return DenseElementsAttr::getFromRawBuffer(type, raw.bytes);
}

ElementsAttr transposeElements(ElementsAttr attr, ArrayRef<int64_t> perm) {
  auto type = cast<RankedTensorType>(attr.getType());
  ArrayRef<int64_t> shape = type.getShape();
  auto resultType = type.clone(permuteShape(shape, perm));
  if (auto dense = dyn_cast<DenseElementsAttr>(attr); dense && dense.isSplat())
    return dense.reshape(resultType);
  std::optional<RawElements> raw = readElements(attr);
  if (!raw)
    return nullptr;
  if (isTransposeAReshape(shape, perm))
    return makeElements(resultType, *raw, getBlobName(attr) + "_t");

  int64_t rank = shape.size();
  // Input strides (in elements) of the dims in result order.
  SmallVector<int64_t> inStrides(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    inStrides[i] = inStrides[i + 1] * shape[i + 1];
  SmallVector<int64_t> strides = permuteShape(inStrides, perm);
  ArrayRef<int64_t> outShape = resultType.getShape();

  RawElements out;
  out.width = raw->width;
  out.isBool = raw->isBool;
  out.bytes.resize(raw->bytes.size());
  int64_t count = resultType.getNumElements();
  size_t width = raw->width;
  SmallVector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t n = 0; n < count; ++n) {
    std::memcpy(out.bytes.data() + n * width, raw->bytes.data() + offset * width,
                width);
    // Advance the result index like an odometer, keeping `offset` (the
    // input element it reads) in step.
    for (int64_t d = rank - 1; d >= 0; --d) {
      offset += strides[d];
      if (++index[d] < outShape[d])
        break;
      offset -= strides[d] * outShape[d];
      index[d] = 0;
    }
  }
  return makeElements(resultType, out, getBlobName(attr) + "_t");
}

ElementsAttr reshapeElements(ElementsAttr attr, RankedTensorType type) {
  if (auto dense = dyn_cast<DenseElementsAttr>(attr))
    return dense.reshape(type);
  std::optional<RawElements> raw = readElements(attr);
  if (!raw)
    return nullptr;
  return makeElements(type, *raw, getBlobName(attr));
}

Value createTransposeOrFold(OpBuilder &builder, Location loc, Value value,
                            ArrayRef<int64_t> perm, LayoutCounters *counters) {
  if (auto constant = value.getDefiningOp<ConstantOp>())
    if (ElementsAttr folded = transposeElements(constant.getValue(), perm))
      return ConstantOp::create(builder, loc, folded.getType(), folded);
  if (counters)
    ++counters->transposesInserted;
  return TransposeOp::create(builder, loc, value,
                             builder.getDenseI64ArrayAttr(perm));
}

} // namespace kiln::layout
