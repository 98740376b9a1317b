//===- TestArtifact.cpp - Packs the runtime tests' model ------------------===//
#include "TestArtifact.h"

#include <fstream>
#include <iterator>

namespace kiln {
namespace test {

const char *const kTestModelSo = KILN_TEST_MODEL_SO;
const char *const kTestDynamicModelSo = KILN_TEST_DYNAMIC_MODEL_SO;
const char *const kTestModelNoEntrySo = KILN_TEST_MODEL_NO_ENTRY_SO;
const char *const kTestModelAbi2So = KILN_TEST_MODEL_ABI2_SO;
const char *const kTestModelOmpSo = KILN_TEST_MODEL_OMP_SO;
const char *const kTestCudaModelSo = KILN_TEST_CUDA_MODEL_SO;
const char *const kTestCudaModelGemmSo = KILN_TEST_CUDA_MODEL_GEMM_SO;
const char *const kTestCudaModelQGemmSo = KILN_TEST_CUDA_MODEL_QGEMM_SO;
const char *const kFakeCudaSo = KILN_FAKE_CUDA_SO;
const char *const kFakeCublasLtSo = KILN_FAKE_CUBLASLT_SO;
const char *const kTestCudaModelConvSo = KILN_TEST_CUDA_MODEL_CONV_SO;
const char *const kFakeCudnnSo = KILN_FAKE_CUDNN_SO;
const char *const kFakeFatbin = "FAKEBIN:k0_add,k1_relu";

namespace {
const float kCudaWeight[4] = {0.5f, -1.0f, 2.0f, -3.0f};
} // namespace

std::vector<float> testWeightW() {
  std::vector<float> w(32);
  for (int k = 0; k < 32; ++k)
    w[k] = 0.25f * float(k % 8) - 1.0f;
  return w;
}

std::vector<float> testWeightB() { return {1.0f, 2.0f, 3.0f}; }

std::vector<char> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in),
                           std::istreambuf_iterator<char>());
}

ArtifactSpec testModelSpec(const std::vector<char> &code,
                           const std::vector<float> &w,
                           const std::vector<float> &b) {
  ArtifactSpec spec;
  spec.compilerVersion = "test";
  spec.source = "test/Runtime/TestModel.c";
#if defined(__x86_64__)
  spec.target = {"cpu", "x86_64-pc-linux-gnu", "x86-64", {"sse2"}};
#elif defined(__aarch64__)
  spec.target = {"cpu", "aarch64-unknown-linux-gnu", "generic", {}};
#endif
  spec.setOption("opt_level", int64_t(0));
  spec.setOption("kernels", "hand-written");
  spec.pipeline = "none";
  spec.inputs = {{"x", "float32", {4, 8}}, {"s", "int32", {8}}};
  spec.outputs = {{"y", "float32", {4, 8}}, {"z", "int64", {1}}};
  spec.weights = {{"w", "float32", {4, 8}, w.data(), w.size() * 4},
                  {"b", "float32", {3}, b.data(), b.size() * 4}};
  // TestModel.c's kernels (its profiling hooks' ids).
  spec.kernelsJson =
      R"([{"id": 0, "name": "mul_0", "category": "elementwise", )"
      R"("onnx_nodes": ["Mul"]},)"
      R"( {"id": 1, "name": "add_0", "category": "elementwise", )"
      R"("onnx_nodes": ["Add", "Add_1"]},)"
      R"( {"id": 2, "name": "reduce_sum_0", "category": "reduction", )"
      R"("onnx_nodes": ["ReduceSum"]}])";
  spec.code = code.data();
  spec.codeSize = code.size();
  return spec;
}

std::string writeTestArtifact(const std::string &path,
                              const std::string &soPath,
                              uint64_t sideThreshold) {
  std::vector<char> code = readFile(soPath);
  if (code.empty())
    return soPath + ": cannot read";
  std::vector<float> w = testWeightW(), b = testWeightB();
  ArtifactSpec spec = testModelSpec(code, w, b);
  spec.sideWeightsThreshold = sideThreshold;
  return writeArtifact(path, spec);
}

ArtifactSpec testDynamicModelSpec(const std::vector<char> &code,
                                  const float *w) {
  ArtifactSpec spec;
  spec.compilerVersion = "test";
  spec.source = "test/Runtime/TestDynamicModel.c";
#if defined(__x86_64__)
  spec.target = {"cpu", "x86_64-pc-linux-gnu", "x86-64", {"sse2"}};
#elif defined(__aarch64__)
  spec.target = {"cpu", "aarch64-unknown-linux-gnu", "generic", {}};
#endif
  spec.setOption("opt_level", int64_t(0));
  spec.setOption("kernels", "hand-written");
  spec.pipeline = "none";
  spec.symbols = {"n", "m"};
  spec.inputs = {{"x", "float32", {-1, -1}, {"n", "m"}},
                 {"b", "float32", {1, -1}, {"", "m"}}};
  spec.outputs = {{"y", "float32", {-1, -1}, {"n", "m * 2"}},
                  {"even", "float32", {-1, -1}, {"(n + 1) / 2", "m"}},
                  {"count", "int64", {1}}};
  spec.weights = {{"w", "float32", {1}, w, sizeof(float)}};
  spec.code = code.data();
  spec.codeSize = code.size();
  return spec;
}

std::string writeTestDynamicArtifact(const std::string &path) {
  std::vector<char> code = readFile(kTestDynamicModelSo);
  if (code.empty())
    return std::string(kTestDynamicModelSo) + ": cannot read";
  static const float w = kTestDynamicWeight;
  return writeArtifact(path, testDynamicModelSpec(code, &w));
}

void testDynamicModelReference(int64_t n, int64_t m, const float *x,
                               const float *b, float *y, float *even,
                               int64_t *count) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float v = x[i * m + j] + b[j];
      y[i * 2 * m + j] = v;
      y[i * 2 * m + m + j] = v + kTestDynamicWeight;
    }
  for (int64_t k = 0; 2 * k < n; ++k)
    for (int64_t j = 0; j < m; ++j)
      even[k * m + j] = x[2 * k * m + j];
  *count = n * m;
}

std::string writeTestCudaArtifact(const std::string &path,
                                  const std::string &soPath,
                                  const std::string &fatbin,
                                  const std::string &chip, bool gemm,
                                  bool conv, int64_t tpRanks,
                                  int64_t tpRank) {
  std::vector<char> code = readFile(soPath);
  if (code.empty())
    return soPath + ": cannot read";
  ArtifactSpec spec;
  spec.compilerVersion = "test";
  spec.source = "test/Runtime/TestCudaModel.c";
#if defined(__x86_64__)
  spec.target = {"cuda", "x86_64-pc-linux-gnu", "", {}, chip};
#elif defined(__aarch64__)
  spec.target = {"cuda", "aarch64-unknown-linux-gnu", "", {}, chip};
#endif
  spec.setOption("opt_level", int64_t(0));
  spec.setOption("kernels", gemm || conv ? "library" : "codegen");
  if (tpRanks > 1) {
    spec.setOption("tensor_parallel_ranks", tpRanks);
    spec.setOption("tensor_parallel_rank", tpRank);
  }
  spec.pipeline = "none";
  spec.inputs = {{"x", "float32", {2, 4}}};
  spec.outputs = {{"y", "float32", {2, 4}}};
  spec.weights = {{"w", "float32", {4}, kCudaWeight, sizeof(kCudaWeight)}};
  spec.kernelsJson =
      std::string(R"([{"id": 0, "name": "k0_add", "category": "elementwise", )"
                  R"("onnx_nodes": ["Add"]},)"
                  R"( {"id": 1, "name": "k1_relu", "category": "elementwise", )"
                  R"("onnx_nodes": ["Relu"]})") +
      (gemm ? R"(, {"id": 2, "name": "gemm_0", "category": "gemm", )"
              R"("library": true, "onnx_nodes": ["MatMul"]}])"
       : tpRanks > 1
           ? R"(, {"id": 2, "name": "all_reduce_0", "category": "copy", )"
             R"("library": true, "onnx_nodes": []}])"
       : conv
           ? R"(, {"id": 2, "name": "k2_cudnn_conv_relu", "category": )"
             R"("gemm", "library": true, "onnx_nodes": ["Conv", "Relu"]}])"
           : "]");
  spec.code = code.data();
  spec.codeSize = code.size();
  spec.sections.push_back(
      {"cuda-fatbin", "cuda-fatbin", fatbin.c_str(), fatbin.size() + 1});
  return writeArtifact(path, spec);
}

void testCudaModelReference(const float *x, float *y) {
  for (int i = 0; i < 8; ++i) {
    float v = x[i] + kCudaWeight[i % 4];
    y[i] = v > 0 ? v : 0;
  }
}

void testModelReference(const float *x, const int32_t *s, float *y,
                        int64_t *z) {
  std::vector<float> w = testWeightW();
  for (int i = 0; i < 32; ++i)
    y[i] = x[i] * w[i] + float(s[i % 8]) + 1.0f;
  int64_t sum = 0;
  for (int j = 0; j < 8; ++j)
    sum += s[j];
  z[0] = sum;
}

} // namespace test
} // namespace kiln
