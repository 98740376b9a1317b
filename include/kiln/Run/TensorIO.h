//===- TensorIO.h - Tensors for kiln-run: files, random, compare -*- C++ -*-===//
//
// kiln-run's tensor helpers, in a library so the unit tests reach them:
// reading and writing .npy (format 1.0/2.0/3.0 headers, little-endian, C
// order), reading ONNX TensorProto .pb files (raw_data and the typed
// fields), the documented random input generator, and the ONNX backend-test
// comparison rule.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUN_TENSORIO_H
#define KILN_RUN_TENSORIO_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace run {

struct HostTensor {
  std::string name;
  int32_t dtype = 0; ///< kiln_dtype (ONNX TensorProto code)
  std::vector<int64_t> dims;
  /// Dense row-major bytes; uint64_t storage keeps every element aligned.
  std::vector<uint64_t> storage;

  uint64_t numElements() const;
  uint64_t numBytes() const;
  /// Sizes storage for dims and dtype (zero-filled).
  void allocate();
  void *data() { return storage.data(); }
  const void *data() const { return storage.data(); }
  /// Element i converted to double (float16/bfloat16 decoded).
  double at(uint64_t i) const;
};

std::string shapeString(const std::vector<int64_t> &dims);
std::string dtypeString(int32_t dtype);

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bfloat16ToFloat(uint16_t h);
uint16_t floatToBfloat16(float f);

/// .npy files. bfloat16 is written as '<u2' (numpy has no bfloat16); a
/// '<u2' file read for a bfloat16 input is taken as its bits (kiln-run).
bool readNpy(const std::string &path, HostTensor &out, std::string &error);
bool writeNpy(const std::string &path, const HostTensor &t,
              std::string &error);

/// An ONNX TensorProto in binary protobuf form (the backend tests'
/// input_N.pb / output_N.pb).
bool readTensorProto(const std::string &path, HostTensor &out,
                     std::string &error);
/// Writes one (raw_data) for tests and --save-outputs.
bool writeTensorProto(const std::string &path, const HostTensor &t,
                      std::string &error);

/// The random inputs of --seed (docs/kiln-run.md): input k gets its own
/// splitmix64 stream seeded with seed + k; floats are uniform in [-1, 1)
/// (24 random bits, 53 for float64), integers uniform in [0, 10), bools 0/1.
void fillRandom(HostTensor &t, uint64_t seed, uint64_t index);

struct Comparison {
  bool shapeMatches = true;
  bool dtypeMatches = true;
  uint64_t mismatches = 0;
  uint64_t count = 0;
  double maxAbsError = 0; ///< over finite pairs
  double maxRelError = 0; ///< over finite pairs with expected != 0
  bool pass() const { return shapeMatches && dtypeMatches && mismatches == 0; }
};

/// The ONNX backend rule: |actual - expected| <= atol + rtol * |expected|
/// elementwise; NaN matches NaN, an infinity must match exactly. With
/// `sameDtype` false (a reference model at another precision), the values
/// are compared as doubles whatever their dtypes.
Comparison compare(const HostTensor &actual, const HostTensor &expected,
                   double rtol, double atol, bool sameDtype = true);

} // namespace run
} // namespace kiln

#endif
