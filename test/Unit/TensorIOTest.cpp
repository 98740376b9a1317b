//===- TensorIOTest.cpp - Tests of kiln-run's tensor helpers --------------===//
//
// .npy round trips for every dtype, TensorProto reading (raw_data and each
// typed field), half/bfloat16 conversion, the documented random generator
// and the comparison rule.
//
//===----------------------------------------------------------------------===//
#include "kiln/Run/TensorIO.h"

#include "kiln/artifact_format.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

using namespace kiln::run;

namespace {

std::string tempPath(const std::string &name) {
  static std::string dir = [] {
    char tmpl[] = "/tmp/kiln-tensorio-test-XXXXXX";
    const char *d = mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  return dir + "/" + name;
}

HostTensor pattern(int32_t dtype, std::vector<int64_t> dims) {
  HostTensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.allocate();
  unsigned char *p = static_cast<unsigned char *>(t.data());
  for (uint64_t i = 0; i < t.numBytes(); ++i)
    p[i] = (unsigned char)(i * 37 + 11);
  if (dtype == KILN_DTYPE_BOOL)
    for (uint64_t i = 0; i < t.numBytes(); ++i)
      p[i] &= 1;
  return t;
}

TEST(TensorIO, NpyRoundTripEveryDtype) {
  const int32_t dtypes[] = {
      KILN_DTYPE_FLOAT32, KILN_DTYPE_FLOAT64, KILN_DTYPE_FLOAT16,
      KILN_DTYPE_INT8,    KILN_DTYPE_INT16,   KILN_DTYPE_INT32,
      KILN_DTYPE_INT64,   KILN_DTYPE_UINT8,   KILN_DTYPE_UINT16,
      KILN_DTYPE_UINT32,  KILN_DTYPE_UINT64,  KILN_DTYPE_BOOL};
  for (int32_t dtype : dtypes) {
    for (auto dims : {std::vector<int64_t>{2, 3, 5}, std::vector<int64_t>{7},
                      std::vector<int64_t>{}, std::vector<int64_t>{0, 4}}) {
      HostTensor t = pattern(dtype, dims);
      std::string path = tempPath("t.npy");
      std::string err;
      ASSERT_TRUE(writeNpy(path, t, err)) << err;
      HostTensor back;
      ASSERT_TRUE(readNpy(path, back, err)) << err;
      EXPECT_EQ(back.dtype, dtype) << dtypeString(dtype);
      EXPECT_EQ(back.dims, dims) << dtypeString(dtype);
      ASSERT_EQ(back.numBytes(), t.numBytes());
      if (t.numBytes())
        EXPECT_EQ(0, std::memcmp(back.data(), t.data(), t.numBytes()));
    }
  }
  // The header is padded so the data starts 64-byte aligned.
  std::ifstream in(tempPath("t.npy"), std::ios::binary);
  char head[10];
  in.read(head, 10);
  size_t len = (unsigned char)head[8] | (unsigned char)head[9] << 8;
  EXPECT_EQ((10 + len) % 64, 0u);
}

// A .npy as numpy writes it, format 2.0 and with a trailing-comma-free shape.
TEST(TensorIO, NpyVersion2AndErrors) {
  std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 1)}";
  std::string file = "\x93NUMPY";
  file += char(2);
  file += char(0);
  uint32_t len = uint32_t(dict.size());
  file.append(reinterpret_cast<const char *>(&len), 4);
  file += dict;
  int64_t values[2] = {-5, 1ll << 40};
  file.append(reinterpret_cast<const char *>(values), 16);
  std::string path = tempPath("v2.npy");
  std::ofstream(path, std::ios::binary) << file;
  HostTensor t;
  std::string err;
  ASSERT_TRUE(readNpy(path, t, err)) << err;
  EXPECT_EQ(t.dtype, KILN_DTYPE_INT64);
  EXPECT_EQ(t.dims, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(t.at(0), -5.0);
  EXPECT_EQ(t.at(1), double(1ll << 40));

  auto expectBad = [&](std::string text, const std::string &fragment) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    HostTensor u;
    std::string e;
    EXPECT_FALSE(readNpy(path, u, e));
    EXPECT_NE(e.find(fragment), std::string::npos) << e;
  };
  expectBad("not numpy", "magic");
  std::string fortran = file;
  fortran.replace(fortran.find("False"), 5, "True ");
  expectBad(fortran, "Fortran order");
  std::string complex = file;
  complex.replace(complex.find("<i8"), 3, "<c8");
  expectBad(complex, "unsupported dtype");
  expectBad(file.substr(0, file.size() - 3), "data truncated");
  HostTensor u;
  EXPECT_FALSE(readNpy(tempPath("absent.npy"), u, err));
}

void writeProto(const std::string &path, const onnx::TensorProto &p) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(p.SerializeToOstream(&out));
}

TEST(TensorIO, TensorProtoFields) {
  std::string path = tempPath("t.pb");
  std::string err;
  HostTensor t;
  {
    onnx::TensorProto p; // raw_data
    p.set_name("a");
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(2);
    float v[2] = {1.5f, -2.0f};
    p.set_raw_data(std::string(reinterpret_cast<char *>(v), 8));
    writeProto(path, p);
    ASSERT_TRUE(readTensorProto(path, t, err)) << err;
    EXPECT_EQ(t.name, "a");
    EXPECT_EQ(t.at(1), -2.0);
  }
  {
    onnx::TensorProto p; // float_data
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(3);
    for (float f : {0.5f, 1.0f, 2.0f})
      p.add_float_data(f);
    writeProto(path, p);
    ASSERT_TRUE(readTensorProto(path, t, err)) << err;
    EXPECT_EQ(t.at(2), 2.0);
  }
  struct Int32Case {
    int dtype;
    std::vector<int32_t> values;
    std::vector<double> expect;
  };
  // The types kept in int32_data, narrowed to their element size.
  Int32Case cases[] = {
      {onnx::TensorProto::INT32, {-7, 9}, {-7, 9}},
      {onnx::TensorProto::INT8, {-128, 127}, {-128, 127}},
      {onnx::TensorProto::UINT8, {0, 255}, {0, 255}},
      {onnx::TensorProto::INT16, {-300, 300}, {-300, 300}},
      {onnx::TensorProto::UINT16, {65535, 1}, {65535, 1}},
      {onnx::TensorProto::BOOL, {1, 0}, {1, 0}},
      {onnx::TensorProto::FLOAT16, {0x3C00, 0xC000}, {1.0, -2.0}},
      {onnx::TensorProto::BFLOAT16, {0x3F80, 0x4040}, {1.0, 3.0}}};
  for (const Int32Case &c : cases) {
    onnx::TensorProto p;
    p.set_data_type(c.dtype);
    p.add_dims(2);
    for (int32_t v : c.values)
      p.add_int32_data(v);
    writeProto(path, p);
    ASSERT_TRUE(readTensorProto(path, t, err)) << err;
    EXPECT_EQ(t.at(0), c.expect[0]) << dtypeString(c.dtype);
    EXPECT_EQ(t.at(1), c.expect[1]) << dtypeString(c.dtype);
  }
  {
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::INT64);
    p.add_dims(1);
    p.add_int64_data(-(1ll << 50));
    writeProto(path, p);
    ASSERT_TRUE(readTensorProto(path, t, err)) << err;
    EXPECT_EQ(t.at(0), double(-(1ll << 50)));
  }
  {
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::DOUBLE);
    p.add_dims(1);
    p.add_double_data(0.125);
    writeProto(path, p);
    ASSERT_TRUE(readTensorProto(path, t, err)) << err;
    EXPECT_EQ(t.at(0), 0.125);
  }
  for (int dtype : {int(onnx::TensorProto::UINT32),
                    int(onnx::TensorProto::UINT64)}) {
    onnx::TensorProto p;
    p.set_data_type(dtype);
    p.add_dims(1);
    p.add_uint64_data(4000000000ull);
    writeProto(path, p);
    ASSERT_TRUE(readTensorProto(path, t, err)) << err;
    EXPECT_EQ(t.at(0), 4e9);
  }
  {
    onnx::TensorProto p; // wrong count
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(4);
    p.add_float_data(1);
    writeProto(path, p);
    EXPECT_FALSE(readTensorProto(path, t, err));
    EXPECT_NE(err.find("float_data has 1 values"), std::string::npos) << err;
  }
  {
    onnx::TensorProto p; // strings are not tensors kiln runs
    p.set_data_type(onnx::TensorProto::STRING);
    p.add_dims(1);
    p.add_string_data("x");
    writeProto(path, p);
    EXPECT_FALSE(readTensorProto(path, t, err));
    EXPECT_NE(err.find("not supported"), std::string::npos) << err;
  }
  {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << "\xff\xff\xff";
    EXPECT_FALSE(readTensorProto(path, t, err));
  }
  // writeTensorProto's output reads back.
  HostTensor h = pattern(KILN_DTYPE_INT16, {3, 2});
  h.name = "h";
  ASSERT_TRUE(writeTensorProto(path, h, err)) << err;
  ASSERT_TRUE(readTensorProto(path, t, err)) << err;
  EXPECT_EQ(t.name, "h");
  EXPECT_EQ(t.dims, h.dims);
  EXPECT_EQ(0, std::memcmp(t.data(), h.data(), h.numBytes()));
}

TEST(TensorIO, HalfConversions) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f,
                  5.960464477539063e-08f, 0.333251953125f})
    EXPECT_EQ(halfToFloat(floatToHalf(f)), f) << f;
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(70000.0f), 0x7C00); // overflow: inf
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 4096), 0x3C00); // ties to even
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3F80);
  EXPECT_EQ(bfloat16ToFloat(0x4040), 3.0f);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBfloat16(NAN))));
}

TEST(TensorIO, RandomGeneratorIsTheDocumentedOne) {
  HostTensor f;
  f.dtype = KILN_DTYPE_FLOAT32;
  f.dims = {1000};
  fillRandom(f, 42, 0);
  double lo = 1, hi = -1;
  for (uint64_t i = 0; i < 1000; ++i) {
    lo = std::min(lo, f.at(i));
    hi = std::max(hi, f.at(i));
  }
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_LT(lo, -0.9); // spread over the range
  EXPECT_GT(hi, 0.9);
  // splitmix64 seeded with 42 + 0: its first output is 0xbdd732262feb6e95
  // (the reference splitmix64), whose top 24 bits give the first value.
  uint64_t first = 0xbdd732262feb6e95ull;
  EXPECT_EQ(f.at(0), double(float(first >> 40) / 16777216.0f * 2.0f - 1.0f));
  // Same seed and index: same values; seed + index is what counts.
  HostTensor g = f;
  fillRandom(g, 41, 1);
  EXPECT_EQ(0, std::memcmp(f.data(), g.data(), f.numBytes()));
  fillRandom(g, 42, 1);
  EXPECT_NE(0, std::memcmp(f.data(), g.data(), f.numBytes()));

  HostTensor i;
  i.dtype = KILN_DTYPE_INT64;
  i.dims = {500};
  fillRandom(i, 1, 0);
  bool sawZero = false, sawNine = false;
  for (uint64_t k = 0; k < 500; ++k) {
    EXPECT_GE(i.at(k), 0);
    EXPECT_LT(i.at(k), 10);
    sawZero |= i.at(k) == 0;
    sawNine |= i.at(k) == 9;
  }
  EXPECT_TRUE(sawZero && sawNine);
  HostTensor b;
  b.dtype = KILN_DTYPE_BOOL;
  b.dims = {64};
  fillRandom(b, 3, 0);
  for (uint64_t k = 0; k < 64; ++k)
    EXPECT_TRUE(b.at(k) == 0 || b.at(k) == 1);
}

TEST(TensorIO, CompareRule) {
  auto make = [](std::vector<float> v) {
    HostTensor t;
    t.dtype = KILN_DTYPE_FLOAT32;
    t.dims = {int64_t(v.size())};
    t.allocate();
    std::memcpy(t.data(), v.data(), v.size() * 4);
    return t;
  };
  float inf = std::numeric_limits<float>::infinity();
  HostTensor e = make({1.0f, 100.0f, NAN, inf, 0.0f});
  Comparison c = compare(make({1.0f, 100.0f, NAN, inf, 0.0f}), e, 1e-3, 1e-7);
  EXPECT_TRUE(c.pass());
  EXPECT_EQ(c.count, 5u);
  // 100.05 is within 1e-3 * 100; 1.01 is not within 1e-3 * 1.
  c = compare(make({1.01f, 100.05f, NAN, inf, 0.0f}), e, 1e-3, 1e-7);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_NEAR(c.maxAbsError, 0.05, 1e-4);
  EXPECT_NEAR(c.maxRelError, 0.01, 1e-4);
  c = compare(make({1.0f, 100.0f, 0.0f, -inf, 1e-8f}), e, 1e-3, 1e-7);
  EXPECT_EQ(c.mismatches, 2u); // NaN vs 0, inf vs -inf; 1e-8 within atol
  c = compare(make({1.0f, 100.0f}), e, 1e-3, 1e-7);
  EXPECT_FALSE(c.shapeMatches);
  EXPECT_FALSE(c.pass());
  HostTensor d = e;
  d.dtype = KILN_DTYPE_INT32;
  EXPECT_FALSE(compare(d, e, 1, 1).pass());
}

} // namespace
