//===- TensorConversion.cpp - ONNX dtypes, types and tensors to MLIR ------===//
//
// TensorProto → ElementsAttr for every dtype Kiln supports, from raw_data or
// from the typed repeated fields; large tensors become dense_resource blobs.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/StringExtras.h"

#include <cstring>
#include <limits>

using namespace mlir;

namespace kiln::import {

// onnx.proto's TensorProto.DataType, including the values newer than
// libonnx 1.12 (FLOAT8*, INT4, FLOAT4, ...), so diagnostics name them.
std::string dataTypeName(int32_t dtype) {
  static const char *const names[] = {
      "UNDEFINED", "FLOAT",      "UINT8",         "INT8",         "UINT16",
      "INT16",     "INT32",      "INT64",         "STRING",       "BOOL",
      "FLOAT16",   "DOUBLE",     "UINT32",        "UINT64",       "COMPLEX64",
      "COMPLEX128", "BFLOAT16",  "FLOAT8E4M3FN",  "FLOAT8E4M3FNUZ",
      "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1",
      "FLOAT8E8M0", "UINT2",     "INT2"};
  if (dtype >= 0 && dtype < int32_t(std::size(names)))
    return names[dtype];
  return "<unknown dtype " + std::to_string(dtype) + ">";
}

Type convertDataType(int32_t dtype, MLIRContext *context, llvm::StringRef what) {
  Builder b(context);
  switch (dtype) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::INT8:
    return b.getIntegerType(8);
  case onnx::TensorProto::INT16:
    return b.getIntegerType(16);
  case onnx::TensorProto::INT32:
    return b.getIntegerType(32);
  case onnx::TensorProto::INT64:
    return b.getIntegerType(64);
  case onnx::TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case onnx::TensorProto::UINT16:
    return b.getIntegerType(16, false);
  case onnx::TensorProto::UINT32:
    return b.getIntegerType(32, false);
  case onnx::TensorProto::UINT64:
    return b.getIntegerType(64, false);
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  default:
    fail("unsupported dtype {0} for '{1}'", dataTypeName(dtype), what);
  }
}

RankedTensorType convertTypeProto(const onnx::TypeProto &type,
                                  MLIRContext *context, llvm::StringRef what,
                                  bool needRank) {
  switch (type.value_case()) {
  case onnx::TypeProto::kTensorType:
    break;
  case onnx::TypeProto::kSequenceType:
    fail("not supported yet: sequence types ('{0}' is a sequence)", what);
  case onnx::TypeProto::kOptionalType:
    fail("not supported yet: optional types ('{0}' is an optional)", what);
  case onnx::TypeProto::kMapType:
    fail("unsupported type: '{0}' is a map", what);
  case onnx::TypeProto::kSparseTensorType:
    fail("unsupported type: '{0}' is a sparse tensor", what);
  default:
    if (!needRank)
      return nullptr;
    fail("'{0}' has no type", what);
  }
  const onnx::TypeProto::Tensor &tensor = type.tensor_type();
  if (!tensor.has_elem_type() || tensor.elem_type() == 0) {
    if (!needRank)
      return nullptr;
    fail("'{0}' has no element type", what);
  }
  Type elementType = convertDataType(tensor.elem_type(), context, what);
  if (!tensor.has_shape()) {
    if (!needRank)
      return nullptr;
    fail("'{0}' has no shape: Kiln needs the rank of graph inputs", what);
  }
  SmallVector<int64_t> dims;
  for (const onnx::TensorShapeProto::Dimension &dim : tensor.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0)
      dims.push_back(dim.dim_value());
    else
      dims.push_back(ShapedType::kDynamic);
  }
  return RankedTensorType::get(dims, elementType);
}

namespace {

/// Copies the elements of a typed repeated field into `bytes`, narrowing each
/// to `Storage` (ONNX stores int8..uint16, bool and the 16-bit floats' bits
/// in int32_data, uint32 in uint64_data).
template <typename Storage, typename Field>
void appendNarrowed(const Field &field, std::string &bytes) {
  bytes.resize(field.size() * sizeof(Storage));
  char *out = bytes.data();
  for (auto v : field) {
    Storage s = static_cast<Storage>(v);
    std::memcpy(out, &s, sizeof(Storage));
    out += sizeof(Storage);
  }
}

/// The tensor's data in MLIR's dense layout (little-endian, one element
/// after the other; i1 as one byte per element) and its element count in
/// the typed field.
std::string getTensorBytes(const onnx::TensorProto &t, int64_t &fieldCount) {
  std::string bytes;
  using TP = onnx::TensorProto;
  switch (t.data_type()) {
  case TP::FLOAT:
    fieldCount = t.float_data_size();
    appendNarrowed<float>(t.float_data(), bytes);
    break;
  case TP::DOUBLE:
    fieldCount = t.double_data_size();
    appendNarrowed<double>(t.double_data(), bytes);
    break;
  case TP::INT64:
    fieldCount = t.int64_data_size();
    appendNarrowed<int64_t>(t.int64_data(), bytes);
    break;
  case TP::INT32:
    fieldCount = t.int32_data_size();
    appendNarrowed<int32_t>(t.int32_data(), bytes);
    break;
  case TP::INT16:
    fieldCount = t.int32_data_size();
    appendNarrowed<int16_t>(t.int32_data(), bytes);
    break;
  case TP::INT8:
    fieldCount = t.int32_data_size();
    appendNarrowed<int8_t>(t.int32_data(), bytes);
    break;
  case TP::UINT16:
  case TP::FLOAT16:
  case TP::BFLOAT16:
    fieldCount = t.int32_data_size();
    appendNarrowed<uint16_t>(t.int32_data(), bytes);
    break;
  case TP::UINT8:
  case TP::BOOL:
    fieldCount = t.int32_data_size();
    appendNarrowed<uint8_t>(t.int32_data(), bytes);
    break;
  case TP::UINT32:
    fieldCount = t.uint64_data_size();
    appendNarrowed<uint32_t>(t.uint64_data(), bytes);
    break;
  case TP::UINT64:
    fieldCount = t.uint64_data_size();
    appendNarrowed<uint64_t>(t.uint64_data(), bytes);
    break;
  default:
    fieldCount = 0;
    break;
  }
  return bytes;
}

/// A resource key MLIR prints bare: the initializer name with every
/// character outside [A-Za-z0-9_.] replaced by '_'.
std::string sanitizeResourceKey(llvm::StringRef name) {
  std::string key = name.empty() ? std::string("tensor") : name.str();
  for (char &c : key)
    if (!llvm::isAlnum(c) && c != '_' && c != '.')
      c = '_';
  if (llvm::isDigit(key.front()) || key.front() == '.')
    key.insert(key.begin(), '_');
  return key;
}

} // namespace

ElementsAttr convertTensor(const onnx::TensorProto &tensor, MLIRContext *context,
                           llvm::StringRef what, int64_t resourceThresholdBytes) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    fail("tensor '{0}' still refers to external data", what);
  if (tensor.has_segment())
    fail("tensor '{0}' is segmented, which Kiln does not support", what);
  Type elementType = convertDataType(tensor.data_type(), context, what);

  SmallVector<int64_t> dims;
  int64_t numElements = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      fail("tensor '{0}' has a negative dimension {1}", what, d);
    if (d != 0 && numElements > std::numeric_limits<int32_t>::max() / d)
      fail("tensor '{0}' has too many elements", what);
    numElements *= d;
    dims.push_back(d);
  }
  auto type = RankedTensorType::get(dims, elementType);
  int64_t elementBytes =
      elementType.isInteger(1) ? 1 : (elementType.getIntOrFloatBitWidth() / 8);
  int64_t expectedBytes = numElements * elementBytes;

  int64_t fieldCount = 0;
  std::string typedBytes;
  llvm::StringRef bytes;
  if (tensor.has_raw_data()) {
    bytes = tensor.raw_data();
    if (int64_t(bytes.size()) != expectedBytes)
      fail("tensor '{0}' has {1} bytes of raw data, but {2} needs {3}", what,
           bytes.size(), type, expectedBytes);
  } else {
    typedBytes = getTensorBytes(tensor, fieldCount);
    if (fieldCount != numElements)
      fail("tensor '{0}' has {1} elements of data, but {2} needs {3}", what,
           fieldCount, type, numElements);
    bytes = typedBytes;
  }

  if (elementType.isInteger(1)) {
    SmallVector<bool> values;
    values.reserve(numElements);
    for (char c : bytes)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, values);
  }
  ArrayRef<char> data(bytes.data(), bytes.size());
  if (resourceThresholdBytes >= 0 && expectedBytes >= resourceThresholdBytes &&
      numElements > 0) {
    AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        data, alignof(std::max_align_t));
    return DenseResourceElementsAttr::get(type, sanitizeResourceKey(what),
                                          std::move(blob));
  }
  return DenseElementsAttr::getFromRawBuffer(type, data);
}

} // namespace kiln::import
