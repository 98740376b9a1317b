//===- FuzzTensorFiles.cpp - libFuzzer: .npy and TensorProto readers ------===//
//
// kiln-run reads inputs and expected outputs from .npy files and ONNX
// TensorProto (.pb) files (tools/kiln-run/TensorIO.cpp): untrusted files.
// Any bytes through both readers; what reads back is written and read again
// and must be the same tensor.
//
//===----------------------------------------------------------------------===//
#include "kiln/Run/TensorIO.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

static std::string tempPath(const char *suffix) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/kiln-fuzz-tensor-" +
         std::to_string(getpid()) + suffix;
}

static void roundTrip(const kiln::run::HostTensor &t, bool npy) {
  std::string path = tempPath(npy ? ".back.npy" : ".back.pb"), error;
  kiln::run::HostTensor back;
  bool written = npy ? kiln::run::writeNpy(path, t, error)
                     : kiln::run::writeTensorProto(path, t, error);
  if (!written)
    return;
  bool read = npy ? kiln::run::readNpy(path, back, error)
                  : kiln::run::readTensorProto(path, back, error);
  if (!read || back.dtype != t.dtype || back.dims != t.dims ||
      back.numBytes() != t.numBytes() ||
      (t.numBytes() && std::memcmp(back.data(), t.data(), t.numBytes())))
    std::abort(); // what Kiln writes it must read back
  std::remove(path.c_str());
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (bool npy : {true, false}) {
    std::string path = tempPath(npy ? ".npy" : ".pb");
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f)
      return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    kiln::run::HostTensor t;
    std::string error;
    bool ok = npy ? kiln::run::readNpy(path, t, error)
                  : kiln::run::readTensorProto(path, t, error);
    if (ok)
      roundTrip(t, npy);
    else if (error.empty())
      std::abort(); // a rejection always says why
    std::remove(path.c_str());
  }
  return 0;
}
