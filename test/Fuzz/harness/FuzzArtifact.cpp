//===- FuzzArtifact.cpp - libFuzzer: loading an artifact file -------------===//
//
// kiln_model_load on any bytes, as kiln-run and the C API load a file: the
// header, its JSON, the section table, the content hash, the host check. A
// file that passes all of them (the hash makes that unlikely for random
// bytes) goes on to the code section's dlopen; the harness then creates a
// session and frees it. Also parseArtifact alone, which skips the hash.
//
//===----------------------------------------------------------------------===//
#include "Artifact.h"
#include "kiln/runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::ArtifactHeader header;
  std::string error;
  if (kiln::parseArtifact(data, size, header, error) != KILN_OK &&
      error.empty())
    std::abort(); // a rejection always says why

  static std::string path = [] {
    const char *dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/kiln-fuzz-artifact-" +
           std::to_string(getpid()) + ".kiln";
  }();
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  kiln_model *model = nullptr;
  if (kiln_model_load(path.c_str(), &model) == KILN_OK) {
    kiln_session *session = nullptr;
    if (kiln_session_create(model, nullptr, &session) == KILN_OK)
      kiln_session_free(session);
    kiln_model_free(model);
  } else if (!kiln_last_error() || !*kiln_last_error()) {
    std::abort();
  }
  std::remove(path.c_str());
  return 0;
}
