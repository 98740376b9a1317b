//===- TestArtifact.h - Packs the runtime tests' model ----------*- C++ -*-===//
//
// Writes TestModel.c's shared object as a model artifact with the writer the
// compiler uses, so the runtime's tests and kiln-run's lit tests load a real
// code section.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TEST_RUNTIME_TESTARTIFACT_H
#define KILN_TEST_RUNTIME_TESTARTIFACT_H

#include "kiln/ArtifactWriter.h"

#include <string>
#include <vector>

namespace kiln {
namespace test {

/// The shared objects built by test/Runtime/CMakeLists.txt.
extern const char *const kTestModelSo;
extern const char *const kTestModelNoEntrySo;
extern const char *const kTestModelAbi2So;
/// The OpenMP variant; "" when the compiler has no OpenMP.
extern const char *const kTestModelOmpSo;

/// The weights TestModel.c expects (w then b).
std::vector<float> testWeightW();
std::vector<float> testWeightB();

/// Reads a whole file; empty on failure.
std::vector<char> readFile(const std::string &path);

/// The spec of the test model with the code of `soPath`; `code` must
/// outlive the spec (it holds the bytes).
ArtifactSpec testModelSpec(const std::vector<char> &code,
                           const std::vector<float> &w,
                           const std::vector<float> &b);

/// Packs the test model (code from `soPath`) to `path`; "" or an error.
std::string writeTestArtifact(const std::string &path,
                              const std::string &soPath = kTestModelSo,
                              uint64_t sideThreshold =
                                  KILN_ARTIFACT_SIDE_WEIGHTS_THRESHOLD);

/// TestDynamicModel.c: symbols n and m, inputs x ["n", "m"] and
/// b [1, "m"], weight w [1] = 2.5, outputs y ["n", "m * 2"],
/// even ["(n + 1) / 2", "m"] and count [1].
extern const char *const kTestDynamicModelSo;
constexpr float kTestDynamicWeight = 2.5f;

/// Its spec with the code in `code` (which must outlive the spec); `w`
/// holds the weight.
ArtifactSpec testDynamicModelSpec(const std::vector<char> &code,
                                  const float *w);

/// Packs it to `path`; "" or an error.
std::string writeTestDynamicArtifact(const std::string &path);

/// Its outputs for x (n * m floats) and b (m floats): y (n * 2m), even
/// ((n + 1) / 2 * m) and count.
void testDynamicModelReference(int64_t n, int64_t m, const float *x,
                               const float *b, float *y, float *even,
                               int64_t *count);

/// The CUDA stand-ins (TestCudaModel.c, FakeCuda.c; test/Runtime/
/// CMakeLists.txt): the host code, its variant calling the library GEMM,
/// and the fake libcuda.
extern const char *const kTestCudaModelSo;
extern const char *const kTestCudaModelGemmSo;
/// The variant calling kiln_rt_cuda_qgemm (int8) after the kernels.
extern const char *const kTestCudaModelQGemmSo;
/// Its variant calling the library convolution: y = the kiln_rt_cuda_conv2d
/// of relu(x + w) (see TestCudaModel.c).
extern const char *const kTestCudaModelConvSo;
extern const char *const kFakeCudaSo;
/// A cuBLASLt computing on the host (FakeCublasLt.c).
extern const char *const kFakeCublasLtSo;
/// A cuDNN computing on the host (FakeCudnn.c).
extern const char *const kFakeCudnnSo;

/// The fatbin FakeCuda.c accepts, with both kernels of TestCudaModel.c.
extern const char *const kFakeFatbin;

/// Packs TestCudaModel.c's code (from `soPath`) as a "cuda" artifact for
/// `chip`, with `fatbin` as its cuda-fatbin section (text, NUL included)
/// and the weight w = {0.5, -1, 2, -3}; "" or an error. With `gemm` the
/// kernel table gets a third, library entry gemm_0; with `conv` the third
/// entry is the library convolution k2_cudnn_conv_relu. With `tpRanks` > 1
/// the artifact is rank `tpRank` of a tensor-parallel group (options
/// tensor_parallel_ranks/rank) whose third entry is all_reduce_0.
std::string writeTestCudaArtifact(const std::string &path,
                                  const std::string &soPath = kTestCudaModelSo,
                                  const std::string &fatbin = kFakeFatbin,
                                  const std::string &chip = "sm_80",
                                  bool gemm = false, bool conv = false,
                                  int64_t tpRanks = 1, int64_t tpRank = 0);

/// TestCudaModel.c's y = relu(x + w) for x of 8 floats.
void testCudaModelReference(const float *x, float *y);

/// The expected outputs for inputs x (32 floats) and s (8 ints).
void testModelReference(const float *x, const int32_t *s, float *y,
                        int64_t *z);

} // namespace test
} // namespace kiln

#endif
