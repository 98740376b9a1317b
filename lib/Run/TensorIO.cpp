//===- TensorIO.cpp - Tensors for kiln-run: files, random, compare --------===//
#include "kiln/Run/TensorIO.h"
#include "kiln/half.h"

#include "kiln/artifact_format.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace kiln {
namespace run {

uint64_t HostTensor::numElements() const {
  uint64_t n = 1;
  for (int64_t d : dims)
    n *= uint64_t(d);
  return n;
}

uint64_t HostTensor::numBytes() const {
  return numElements() * kiln_dtype_size(dtype);
}

void HostTensor::allocate() {
  storage.assign((numBytes() + 7) / 8, 0);
}

std::string shapeString(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string dtypeString(int32_t dtype) {
  const char *name = kiln_dtype_name(dtype);
  return name ? name : "dtype " + std::to_string(dtype);
}

float halfToFloat(uint16_t h) { return halfBitsToFloat(h); }
uint16_t floatToHalf(float f) { return floatToHalfBits(f); }
float bfloat16ToFloat(uint16_t h) { return bfloat16BitsToFloat(h); }
uint16_t floatToBfloat16(float f) { return floatToBfloat16Bits(f); }

double HostTensor::at(uint64_t i) const {
  const unsigned char *p =
      reinterpret_cast<const unsigned char *>(storage.data());
  switch (dtype) {
#define CASE(code, T)                                                          \
  case code: {                                                                 \
    T v;                                                                       \
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));                             \
    return double(v);                                                          \
  }
    CASE(KILN_DTYPE_FLOAT32, float)
    CASE(KILN_DTYPE_FLOAT64, double)
    CASE(KILN_DTYPE_INT8, int8_t)
    CASE(KILN_DTYPE_INT16, int16_t)
    CASE(KILN_DTYPE_INT32, int32_t)
    CASE(KILN_DTYPE_INT64, int64_t)
    CASE(KILN_DTYPE_UINT8, uint8_t)
    CASE(KILN_DTYPE_UINT16, uint16_t)
    CASE(KILN_DTYPE_UINT32, uint32_t)
    CASE(KILN_DTYPE_UINT64, uint64_t)
    CASE(KILN_DTYPE_BOOL, uint8_t)
#undef CASE
  case KILN_DTYPE_FLOAT16: {
    uint16_t v;
    std::memcpy(&v, p + i * 2, 2);
    return halfToFloat(v);
  }
  case KILN_DTYPE_BFLOAT16: {
    uint16_t v;
    std::memcpy(&v, p + i * 2, 2);
    return bfloat16ToFloat(v);
  }
  default:
    return 0;
  }
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

namespace {

struct NpyType {
  const char *descr;
  int32_t dtype;
};
const NpyType kNpyTypes[] = {
    {"f4", KILN_DTYPE_FLOAT32}, {"f8", KILN_DTYPE_FLOAT64},
    {"f2", KILN_DTYPE_FLOAT16}, {"i1", KILN_DTYPE_INT8},
    {"i2", KILN_DTYPE_INT16},   {"i4", KILN_DTYPE_INT32},
    {"i8", KILN_DTYPE_INT64},   {"u1", KILN_DTYPE_UINT8},
    {"u2", KILN_DTYPE_UINT16},  {"u4", KILN_DTYPE_UINT32},
    {"u8", KILN_DTYPE_UINT64},  {"b1", KILN_DTYPE_BOOL}};

bool readWhole(const std::string &path, std::string &bytes,
               std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open";
    return false;
  }
  bytes.assign(std::istreambuf_iterator<char>(in),
               std::istreambuf_iterator<char>());
  return true;
}

// The value text after 'key': in a numpy header dict.
bool dictValue(const std::string &h, const std::string &key,
               std::string &value) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos)
    return false;
  size_t colon = h.find(':', k);
  if (colon == std::string::npos)
    return false;
  size_t start = h.find_first_not_of(" ", colon + 1);
  if (start == std::string::npos)
    return false;
  size_t end;
  if (h[start] == '\'')
    end = h.find('\'', start + 1) + 1;
  else if (h[start] == '(')
    end = h.find(')', start) + 1;
  else
    end = h.find_first_of(",}", start);
  if (end == std::string::npos || end == 0)
    return false;
  value = h.substr(start, end - start);
  return true;
}

} // namespace

/// The bytes of a dense tensor of `dims` and `dtype`; false when the count
/// overflows 64 bits (a malformed file, not a tensor to allocate).
static bool byteSize(const std::vector<int64_t> &dims, int32_t dtype,
                     uint64_t &bytes) {
  uint64_t n = kiln_dtype_size(dtype);
  for (int64_t d : dims) {
    if (d < 0 || (d && n > UINT64_MAX / uint64_t(d)))
      return false;
    n *= uint64_t(d);
  }
  bytes = n;
  return true;
}

bool readNpy(const std::string &path, HostTensor &out, std::string &error) {
  std::string bytes;
  if (!readWhole(path, bytes, error))
    return false;
  auto bad = [&](const std::string &what) {
    error = path + ": not a valid .npy file: " + what;
    return false;
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return bad("no \\x93NUMPY magic");
  unsigned major = (unsigned char)bytes[6];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = (unsigned char)bytes[8] | (unsigned char)bytes[9] << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated");
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = headerLen << 8 | (unsigned char)bytes[8 + i];
    headerStart = 12;
  } else {
    return bad("format version " + std::to_string(major));
  }
  if (headerStart + headerLen > bytes.size())
    return bad("truncated header");
  std::string h = bytes.substr(headerStart, headerLen);
  std::string descr, fortran, shape;
  if (!dictValue(h, "descr", descr) ||
      !dictValue(h, "fortran_order", fortran) ||
      !dictValue(h, "shape", shape))
    return bad("header lacks descr, fortran_order or shape");
  if (fortran != "False")
    return bad("Fortran order is not supported (save with C order)");
  if (descr.size() < 4 || descr.front() != '\'' || descr.back() != '\'')
    return bad("descr " + descr);
  descr = descr.substr(1, descr.size() - 2);
  char order = descr[0];
  std::string code = descr.substr(1);
  out.dtype = KILN_DTYPE_UNDEFINED;
  for (const NpyType &t : kNpyTypes)
    if (code == t.descr)
      out.dtype = t.dtype;
  if (out.dtype == KILN_DTYPE_UNDEFINED)
    return bad("unsupported dtype '" + descr + "'");
  if (order == '>' && kiln_dtype_size(out.dtype) > 1)
    return bad("big-endian data is not supported");
  if (order != '<' && order != '|' && order != '=' && order != '>')
    return bad("descr '" + descr + "'");
  out.dims.clear();
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    return bad("shape " + shape);
  std::string inner = shape.substr(1, shape.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(" ");
    if (a == std::string::npos)
      continue;
    char *end;
    long long d = std::strtoll(item.c_str() + a, &end, 10);
    if (d < 0 || (*end != '\0' && *end != ' ' && *end != 'L'))
      return bad("shape " + shape);
    out.dims.push_back(d);
  }
  size_t dataStart = headerStart + headerLen;
  uint64_t needed = 0;
  if (!byteSize(out.dims, out.dtype, needed) ||
      bytes.size() - dataStart < needed)
    return bad("data truncated: " + std::to_string(bytes.size() - dataStart) +
               " bytes, shape " + shapeString(out.dims) + " of " +
               dtypeString(out.dtype) + " needs " +
               (needed ? std::to_string(needed) : std::string("more")));
  out.allocate();
  if (out.numBytes())
    std::memcpy(out.data(), bytes.data() + dataStart, out.numBytes());
  return true;
}

bool writeNpy(const std::string &path, const HostTensor &t,
              std::string &error) {
  const char *descr = nullptr;
  int32_t dtype = t.dtype == KILN_DTYPE_BFLOAT16 ? KILN_DTYPE_UINT16 : t.dtype;
  for (const NpyType &n : kNpyTypes)
    if (n.dtype == dtype)
      descr = n.descr;
  if (!descr) {
    error = path + ": cannot write " + dtypeString(t.dtype) + " as .npy";
    return false;
  }
  std::string shape = "(";
  for (size_t i = 0; i < t.dims.size(); ++i)
    shape += std::to_string(t.dims[i]) + (t.dims.size() == 1 ? "," : "") +
             (i + 1 < t.dims.size() ? ", " : "");
  shape += ")";
  char order = kiln_dtype_size(dtype) == 1 ? '|' : '<';
  std::string dict = std::string("{'descr': '") + order + descr +
                     "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts 64-aligned; end with a newline.
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict += std::string(pad, ' ') + "\n";
  std::string header = "\x93NUMPY";
  header += char(1);
  header += char(0);
  header += char(dict.size() & 0xFF);
  header += char(dict.size() >> 8);
  header += dict;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = path + ": cannot open for writing";
    return false;
  }
  out.write(header.data(), std::streamsize(header.size()));
  out.write(static_cast<const char *>(t.data()), std::streamsize(t.numBytes()));
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// TensorProto
//===----------------------------------------------------------------------===//

// memcpy that allows an empty tensor (whose storage pointer may be null).
static void copyBytes(void *dst, const void *src, size_t n) {
  if (n)
    std::memcpy(dst, src, n);
}

bool readTensorProto(const std::string &path, HostTensor &out,
                     std::string &error) {
  std::string bytes;
  if (!readWhole(path, bytes, error))
    return false;
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    error = path + ": not a TensorProto";
    return false;
  }
  out.name = proto.name();
  out.dtype = proto.data_type();
  if (!kiln_dtype_name(out.dtype)) {
    error = path + ": tensor data type " + std::to_string(out.dtype) +
            " is not supported";
    return false;
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL ||
      proto.external_data_size()) {
    error = path + ": external data is not supported";
    return false;
  }
  out.dims.assign(proto.dims().begin(), proto.dims().end());
  for (int64_t d : out.dims)
    if (d < 0) {
      error = path + ": negative dim";
      return false;
    }
  // Every stored value takes at least one byte of the file: a shape that
  // needs more values than that (or overflows) is not allocated.
  uint64_t needed = 0;
  if (!byteSize(out.dims, out.dtype, needed) ||
      needed / kiln_dtype_size(out.dtype) > bytes.size()) {
    error = path + ": shape " + shapeString(out.dims) + " of " +
            dtypeString(out.dtype) + " needs more values than the file's " +
            std::to_string(bytes.size()) + " bytes hold";
    return false;
  }
  out.allocate();
  uint64_t n = out.numElements();
  size_t elem = kiln_dtype_size(out.dtype);
  unsigned char *dst = static_cast<unsigned char *>(out.data());
  auto sizeError = [&](const char *field, uint64_t have) {
    error = path + ": " + field + " has " + std::to_string(have) +
            " values, shape " + shapeString(out.dims) + " needs " +
            std::to_string(n);
    return false;
  };
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != n * elem) {
      error = path + ": raw_data has " +
              std::to_string(proto.raw_data().size()) + " bytes, shape " +
              shapeString(out.dims) + " of " + dtypeString(out.dtype) +
              " needs " + std::to_string(n * elem);
      return false;
    }
    copyBytes(dst, proto.raw_data().data(), n * elem);
    return true;
  }
  switch (out.dtype) {
  case KILN_DTYPE_FLOAT32:
    if (uint64_t(proto.float_data_size()) != n)
      return sizeError("float_data", proto.float_data_size());
    copyBytes(dst, proto.float_data().data(), n * 4);
    return true;
  case KILN_DTYPE_FLOAT64:
    if (uint64_t(proto.double_data_size()) != n)
      return sizeError("double_data", proto.double_data_size());
    copyBytes(dst, proto.double_data().data(), n * 8);
    return true;
  case KILN_DTYPE_INT64:
    if (uint64_t(proto.int64_data_size()) != n)
      return sizeError("int64_data", proto.int64_data_size());
    copyBytes(dst, proto.int64_data().data(), n * 8);
    return true;
  case KILN_DTYPE_UINT32:
  case KILN_DTYPE_UINT64:
    if (uint64_t(proto.uint64_data_size()) != n)
      return sizeError("uint64_data", proto.uint64_data_size());
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t v = proto.uint64_data(int(i));
      if (out.dtype == KILN_DTYPE_UINT32) {
        uint32_t v32 = uint32_t(v);
        std::memcpy(dst + i * 4, &v32, 4);
      } else {
        std::memcpy(dst + i * 8, &v, 8);
      }
    }
    return true;
  default: // the types stored in int32_data, narrowed to their size
    if (uint64_t(proto.int32_data_size()) != n)
      return sizeError("int32_data", proto.int32_data_size());
    for (uint64_t i = 0; i < n; ++i) {
      int32_t v = proto.int32_data(int(i));
      if (elem == 1) {
        uint8_t b = uint8_t(v);
        dst[i] = b;
      } else if (elem == 2) {
        uint16_t h = uint16_t(v);
        std::memcpy(dst + i * 2, &h, 2);
      } else {
        std::memcpy(dst + i * 4, &v, 4);
      }
    }
    return true;
  }
}

bool writeTensorProto(const std::string &path, const HostTensor &t,
                      std::string &error) {
  onnx::TensorProto proto;
  proto.set_name(t.name);
  proto.set_data_type(t.dtype);
  for (int64_t d : t.dims)
    proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char *>(t.data()),
                                 t.numBytes()));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !proto.SerializeToOstream(&out)) {
    error = path + ": cannot write";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Random inputs and comparison
//===----------------------------------------------------------------------===//

namespace {
uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
} // namespace

void fillRandom(HostTensor &t, uint64_t seed, uint64_t index) {
  t.allocate();
  uint64_t state = seed + index;
  uint64_t n = t.numElements();
  unsigned char *p = static_cast<unsigned char *>(t.data());
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t r = splitmix64(state);
    // Floats: the top 24 (53) bits as a fraction in [0, 1), then 2u - 1.
    float f = float(r >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
    uint64_t small = r % 10;
    switch (t.dtype) {
    case KILN_DTYPE_FLOAT32:
      std::memcpy(p + i * 4, &f, 4);
      break;
    case KILN_DTYPE_FLOAT64: {
      double d = double(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
      std::memcpy(p + i * 8, &d, 8);
      break;
    }
    case KILN_DTYPE_FLOAT16: {
      uint16_t h = floatToHalf(f);
      std::memcpy(p + i * 2, &h, 2);
      break;
    }
    case KILN_DTYPE_BFLOAT16: {
      uint16_t h = floatToBfloat16(f);
      std::memcpy(p + i * 2, &h, 2);
      break;
    }
    case KILN_DTYPE_BOOL:
      p[i] = uint8_t(r & 1);
      break;
    default: { // integers: [0, 10), little-endian in the element's size
      size_t elem = kiln_dtype_size(t.dtype);
      std::memset(p + i * elem, 0, elem);
      p[i * elem] = uint8_t(small);
      break;
    }
    }
  }
}

Comparison compare(const HostTensor &actual, const HostTensor &expected,
                   double rtol, double atol, bool sameDtype) {
  Comparison c;
  c.dtypeMatches = !sameDtype || actual.dtype == expected.dtype;
  c.shapeMatches = actual.dims == expected.dims;
  if (!c.dtypeMatches || !c.shapeMatches)
    return c;
  c.count = actual.numElements();
  for (uint64_t i = 0; i < c.count; ++i) {
    double a = actual.at(i), e = expected.at(i);
    if (std::isnan(a) || std::isnan(e)) {
      if (!(std::isnan(a) && std::isnan(e)))
        ++c.mismatches;
      continue;
    }
    if (std::isinf(a) || std::isinf(e)) {
      if (a != e)
        ++c.mismatches;
      continue;
    }
    double diff = std::fabs(a - e);
    if (diff > c.maxAbsError)
      c.maxAbsError = diff;
    if (e != 0 && diff / std::fabs(e) > c.maxRelError)
      c.maxRelError = diff / std::fabs(e);
    if (!(diff <= atol + rtol * std::fabs(e)))
      ++c.mismatches;
  }
  return c;
}

} // namespace run
} // namespace kiln
