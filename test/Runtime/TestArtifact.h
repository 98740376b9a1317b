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

/// The expected outputs for inputs x (32 floats) and s (8 ints).
void testModelReference(const float *x, const int32_t *s, float *y,
                        int64_t *z);

} // namespace test
} // namespace kiln

#endif
