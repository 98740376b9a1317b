//===- kiln-test-artifact.cpp - Writes the runtime tests' model artifact --===//
//
// kiln-test-artifact -o OUT.kiln [--side-threshold BYTES]
// kiln-test-artifact -o OUT.kiln --dynamic
// kiln-test-artifact -o OUT.kiln --cuda [--chip sm_80]
//                    [--fatbin TEXT | --fatbin-file FILE]
// kiln-test-artifact --fake-libcuda
//
// The lit tests of kiln-run use it to get an artifact with a real code
// section without kiln-compile (TestModel.c documents the model; --dynamic:
// TestDynamicModel.c, symbolic dims; --cuda:
// TestCudaModel.c, a "cuda" artifact for the fake driver FakeCuda.c, whose
// path --fake-libcuda prints).
//
//===----------------------------------------------------------------------===//
#include "TestArtifact.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  std::string out;
  uint64_t threshold = KILN_ARTIFACT_SIDE_WEIGHTS_THRESHOLD;
  bool cuda = false, dynamic = false;
  std::string chip = "sm_80", fatbin = kiln::test::kFakeFatbin;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "-o") && i + 1 < argc)
      out = argv[++i];
    else if (!std::strcmp(argv[i], "--cuda"))
      cuda = true;
    else if (!std::strcmp(argv[i], "--dynamic"))
      dynamic = true;
    else if (!std::strcmp(argv[i], "--chip") && i + 1 < argc)
      chip = argv[++i];
    else if (!std::strcmp(argv[i], "--fatbin") && i + 1 < argc)
      fatbin = argv[++i];
    else if (!std::strcmp(argv[i], "--fatbin-file") && i + 1 < argc) {
      std::vector<char> bytes = kiln::test::readFile(argv[++i]);
      if (bytes.empty()) {
        std::fprintf(stderr, "kiln-test-artifact: %s: cannot read\n",
                     argv[i]);
        return 1;
      }
      fatbin.assign(bytes.begin(), bytes.end());
    }
    else if (!std::strcmp(argv[i], "--fake-libcuda")) {
      std::printf("%s\n", kiln::test::kFakeCudaSo);
      return 0;
    }
    else if (!std::strcmp(argv[i], "--side-threshold") && i + 1 < argc)
      threshold = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr,
                   "usage: kiln-test-artifact -o OUT [--side-threshold N] "
                   "[--dynamic] [--cuda [--chip C] [--fatbin TEXT | "
                   "--fatbin-file F]] | --fake-libcuda\n");
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "kiln-test-artifact: -o is required\n");
    return 2;
  }
  std::string err =
      dynamic ? kiln::test::writeTestDynamicArtifact(out)
      : cuda  ? kiln::test::writeTestCudaArtifact(
                 out, kiln::test::kTestCudaModelSo, fatbin, chip)
           : kiln::test::writeTestArtifact(out, kiln::test::kTestModelSo,
                                           threshold);
  if (!err.empty()) {
    std::fprintf(stderr, "kiln-test-artifact: %s\n", err.c_str());
    return 1;
  }
  return 0;
}
