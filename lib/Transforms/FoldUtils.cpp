//===- FoldUtils.cpp - Constant tensors for kiln-constant-fold ------------===//
//
// Reading constants (dense and dense_resource) into ConstTensor and writing
// them back as attributes, with the element-type rounding helpers.
//
//===----------------------------------------------------------------------===//

#include "FoldUtils.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/MathExtras.h"

#include <cstring>

using namespace mlir;

namespace kiln::fold {

int64_t getElementBytes(Type elementType) {
  if (elementType.isInteger(1))
    return 1;
  return elementType.getIntOrFloatBitWidth() / 8;
}

bool isZeroExtended(Type elementType) {
  return elementType.isUnsignedInteger() || elementType.isInteger(1);
}

int64_t wrapToType(Type elementType, uint64_t bits) {
  unsigned width = elementType.getIntOrFloatBitWidth();
  if (width >= 64)
    return static_cast<int64_t>(bits);
  if (isZeroExtended(elementType))
    return static_cast<int64_t>(bits & ((uint64_t(1) << width) - 1));
  return llvm::SignExtend64(bits, width);
}

double roundToType(Type elementType, double value) {
  if (elementType.isF64())
    return value;
  if (elementType.isF32())
    return static_cast<double>(static_cast<float>(value));
  bool losesInfo;
  APFloat f(value);
  f.convert(cast<FloatType>(elementType).getFloatSemantics(),
            APFloat::rmNearestTiesToEven, &losesInfo);
  return f.convertToDouble();
}

/// One element of `type` decoded from its little-endian bytes at `data`.
static void decodeElement(Type type, const char *data, double &f, int64_t &i) {
  if (auto floatType = dyn_cast<FloatType>(type)) {
    if (type.isF32()) {
      float v;
      std::memcpy(&v, data, 4);
      f = v;
    } else if (type.isF64()) {
      std::memcpy(&f, data, 8);
    } else {
      unsigned width = floatType.getWidth();
      uint64_t bits = 0;
      std::memcpy(&bits, data, width / 8);
      f = APFloat(floatType.getFloatSemantics(), APInt(width, bits))
              .convertToDouble();
    }
    return;
  }
  uint64_t bits = 0;
  std::memcpy(&bits, data, getElementBytes(type));
  i = type.isInteger(1) ? int64_t(bits != 0) : wrapToType(type, bits);
}

/// The little-endian bytes of one element.
static void encodeElement(Type type, double f, int64_t i, char *data) {
  if (auto floatType = dyn_cast<FloatType>(type)) {
    if (type.isF32()) {
      float v = static_cast<float>(f);
      std::memcpy(data, &v, 4);
    } else if (type.isF64()) {
      std::memcpy(data, &f, 8);
    } else {
      bool losesInfo;
      APFloat v(f);
      v.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      uint64_t bits = v.bitcastToAPInt().getZExtValue();
      std::memcpy(data, &bits, floatType.getWidth() / 8);
    }
    return;
  }
  uint64_t bits = static_cast<uint64_t>(i);
  std::memcpy(data, &bits, getElementBytes(type));
}

static bool isSupportedElementType(Type type) {
  if (auto f = dyn_cast<FloatType>(type))
    return f.getWidth() == 16 || f.getWidth() == 32 || f.getWidth() == 64;
  if (auto i = dyn_cast<IntegerType>(type))
    return i.getWidth() == 1 || i.getWidth() == 8 || i.getWidth() == 16 ||
           i.getWidth() == 32 || i.getWidth() == 64;
  return false;
}

ConstTensor ConstTensor::getSplat(RankedTensorType type) {
  ConstTensor t;
  t.type = type;
  t.isFloatType = isa<FloatType>(type.getElementType());
  t.splat = true;
  if (t.isFloatType)
    t.floats.assign(1, 0.0);
  else
    t.ints.assign(1, 0);
  return t;
}

ConstTensor ConstTensor::getDense(RankedTensorType type) {
  ConstTensor t = getSplat(type);
  t.splat = false;
  if (t.isFloatType)
    t.floats.assign(type.getNumElements(), 0.0);
  else
    t.ints.assign(type.getNumElements(), 0);
  return t;
}

std::optional<ConstTensor> ConstTensor::read(ElementsAttr attr) {
  auto type = dyn_cast<RankedTensorType>(attr.getType());
  if (!type || !type.hasStaticShape() ||
      !isSupportedElementType(type.getElementType()))
    return std::nullopt;
  Type elementType = type.getElementType();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    ConstTensor t = dense.isSplat() ? getSplat(type) : getDense(type);
    int64_t n = t.splat ? 1 : type.getNumElements();
    if (elementType.isInteger(1)) {
      auto values = dense.getValues<bool>();
      for (int64_t i = 0; i < n; ++i)
        t.ints[i] = values[i];
    } else if (elementType.isF32()) {
      auto values = dense.getValues<float>();
      for (int64_t i = 0; i < n; ++i)
        t.floats[i] = values[i];
    } else if (elementType.isF64()) {
      auto values = dense.getValues<double>();
      for (int64_t i = 0; i < n; ++i)
        t.floats[i] = values[i];
    } else if (t.isFloatType) {
      auto values = dense.getValues<APFloat>();
      for (int64_t i = 0; i < n; ++i)
        t.floats[i] = values[i].convertToDouble();
    } else {
      auto values = dense.getValues<APInt>();
      for (int64_t i = 0; i < n; ++i)
        t.ints[i] = wrapToType(elementType, values[i].getZExtValue());
    }
    return t;
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
  if (!resource)
    return std::nullopt;
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return std::nullopt; // Elided from the printed IR: the bytes are unknown.
  ArrayRef<char> data = blob->getData();
  int64_t bytes = getElementBytes(elementType);
  int64_t n = type.getNumElements();
  if (static_cast<int64_t>(data.size()) != n * bytes)
    return std::nullopt;
  ConstTensor t = getDense(type);
  for (int64_t i = 0; i < n; ++i) {
    double f = 0;
    int64_t v = 0;
    decodeElement(elementType, data.data() + i * bytes, f, v);
    if (t.isFloatType)
      t.floats[i] = f;
    else
      t.ints[i] = v;
  }
  return t;
}

double ConstTensor::getAsDouble(int64_t i) const {
  if (isFloatType)
    return getFloat(i);
  int64_t v = getInt(i);
  if (getElementType().isUnsignedInteger(64))
    return static_cast<double>(static_cast<uint64_t>(v));
  return static_cast<double>(v);
}

void ConstTensor::copyElement(int64_t to, const ConstTensor &src, int64_t from) {
  if (isFloatType)
    setFloat(to, src.getFloat(from));
  else
    setInt(to, src.getInt(from));
}

ConstTensor ConstTensor::withType(RankedTensorType newType) const {
  ConstTensor t = *this;
  t.type = newType;
  return t;
}

bool ConstTensor::allEqual() const {
  if (splat)
    return true;
  if (isFloatType) {
    // Bitwise equality: -0 and 0, or NaN payloads, must not be merged.
    return llvm::all_of(floats, [&](double f) {
      return std::memcmp(&f, &floats.front(), sizeof(double)) == 0;
    });
  }
  return llvm::all_equal(ints);
}

int64_t ConstTensor::getStoredBytes() const {
  int64_t bytes = getElementBytes(getElementType());
  return allEqual() ? bytes : bytes * getNumElements();
}

ElementsAttr ConstTensor::toAttr(StringRef resourceName) const {
  Type elementType = getElementType();
  auto scalarAttr = [&](int64_t i) -> Attribute {
    if (isFloatType) {
      if (elementType.isF64() || elementType.isF32())
        return FloatAttr::get(elementType, getFloat(i));
      bool losesInfo;
      APFloat v(getFloat(i));
      v.convert(cast<FloatType>(elementType).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &losesInfo);
      return FloatAttr::get(elementType, v);
    }
    if (elementType.isInteger(1))
      return BoolAttr::get(elementType.getContext(), getInt(i) != 0);
    return IntegerAttr::get(elementType,
                            APInt(elementType.getIntOrFloatBitWidth(),
                                  static_cast<uint64_t>(getInt(i)),
                                  /*isSigned=*/false, /*implicitTrunc=*/true));
  };
  if (getNumElements() == 0)
    return DenseElementsAttr::get(type, ArrayRef<Attribute>());
  if (allEqual())
    return DenseElementsAttr::get(type, scalarAttr(0));
  int64_t n = getNumElements();
  if (elementType.isInteger(1)) {
    SmallVector<bool> values;
    values.reserve(n);
    for (int64_t i = 0; i < n; ++i)
      values.push_back(getInt(i) != 0);
    return DenseElementsAttr::get(type, values);
  }
  int64_t bytes = getElementBytes(elementType);
  std::vector<char> data(n * bytes);
  for (int64_t i = 0; i < n; ++i)
    encodeElement(elementType, isFloatType ? getFloat(i) : 0,
                  isFloatType ? 0 : getInt(i), data.data() + i * bytes);
  if (n * bytes >= kResourceThresholdBytes) {
    AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(data), alignof(std::max_align_t));
    return DenseResourceElementsAttr::get(type, resourceName, std::move(blob));
  }
  return DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(data));
}

std::optional<ConstTensor> EvalContext::allocate(RankedTensorType type) {
  if (type.getNumElements() * getElementBytes(type.getElementType()) >
      sizeLimit) {
    tooLarge = true;
    return std::nullopt;
  }
  return ConstTensor::getDense(type);
}

std::optional<SmallVector<int64_t>> getInts(const ConstTensor *t) {
  if (!t || t->isFloat())
    return std::nullopt;
  SmallVector<int64_t> values;
  for (int64_t i = 0, e = t->getNumElements(); i < e; ++i)
    values.push_back(t->getInt(i));
  return values;
}

} // namespace kiln::fold
