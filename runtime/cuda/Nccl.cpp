//===- Nccl.cpp - NCCL for the all-reduces of tensor-parallel models ------===//
//
// runtime/cuda/Nccl.h.
//
//===----------------------------------------------------------------------===//
#include "Nccl.h"

#include "CudaDriver.h"
#include "kiln/runtime.h"


namespace kiln {
namespace cuda {

std::string Nccl::load(const Nccl *&out) {
  return loadOnce(out, [](const Nccl *&loaded) -> std::string {
    std::string tried;
    void *h = openCudaLibrary("KILN_LIBNCCL", {"libnccl.so.2", "libnccl.so"},
                              tried);
    if (!h)
      return "NCCL not found (tried " + tried +
             "): a tensor-parallel CUDA model sums over its ranks with "
             "NCCL; install NCCL or set KILN_LIBNCCL";
    auto *api = new Nccl;
    Symbols sym{h};
    sym(api->getVersion, "ncclGetVersion");
    sym(api->getUniqueId, "ncclGetUniqueId");
    sym(api->commInitRank, "ncclCommInitRank");
    sym(api->allReduce, "ncclAllReduce");
    sym(api->commDestroy, "ncclCommDestroy");
    sym(api->errorString, "ncclGetErrorString");
    if (const char *missing = sym.missing) {
      delete api;
      return std::string("NCCL lacks ") + missing;
    }
    if (api->getVersion(&api->version) != 0)
      api->version = 0;
    loaded = api;
    return "";
  });
}

std::string Nccl::versionString() const {
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch (2.9 and later).
  int major = version / 10000, minor = version / 100 % 100,
      patch = version % 100;
  return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch);
}

int ncclTypeOf(int32_t kilnDtype) {
  switch (kilnDtype) {
  case KILN_DTYPE_FLOAT32:
    return kNcclFloat32;
  case KILN_DTYPE_FLOAT16:
    return kNcclFloat16;
  case KILN_DTYPE_BFLOAT16:
    return kNcclBfloat16;
  default:
    return -1;
  }
}

} // namespace cuda
} // namespace kiln
