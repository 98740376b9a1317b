//===- CudaDriver.cpp - Loads libcuda at run time ---------------------------===//
//
// dlopen of libcuda.so.1 (or $KILN_LIBCUDA) and dlsym of the versioned entry
// point names, once per process. Every failure becomes a sentence the
// runtime puts after "no CUDA device: ".
//
//===----------------------------------------------------------------------===//
#include "CudaDriver.h"

#include <vector>

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <mutex>

namespace kiln {
namespace cuda {

std::string driverLibraryName() {
  const char *env = std::getenv("KILN_LIBCUDA");
  return env && *env ? env : "libcuda.so.1";
}

std::string Driver::errorText(CUresult r) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(r, &name);
  if (cuGetErrorString)
    cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(r);
  if (text)
    s += std::string(": ") + text;
  return s;
}

namespace {

struct Loaded {
  Driver driver{};
  bool ok = false;
  std::string error;
};

// Resolves `name`, else `fallback` (an older unversioned name), into `fn`.
template <typename Fn>
bool resolve(void *lib, Fn &fn, const char *name,
             const char *fallback = nullptr) {
  void *p = dlsym(lib, name);
  if (!p && fallback)
    p = dlsym(lib, fallback);
  fn = reinterpret_cast<Fn>(p);
  return p != nullptr;
}

void load(Loaded &l) {
  std::string lib = driverLibraryName();
  dlerror();
  void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    l.error = lib + " not found (" + (e ? e : "dlopen failed") +
              "): is the NVIDIA driver installed?";
    return;
  }
  Driver &d = l.driver;
  const char *missing = nullptr;
#define KILN_RESOLVE(field, ...)                                               \
  if (!missing && !resolve(h, d.field, __VA_ARGS__))                           \
    missing = #field;
  KILN_RESOLVE(cuInit, "cuInit")
  KILN_RESOLVE(cuDriverGetVersion, "cuDriverGetVersion")
  KILN_RESOLVE(cuGetErrorName, "cuGetErrorName")
  KILN_RESOLVE(cuGetErrorString, "cuGetErrorString")
  KILN_RESOLVE(cuDeviceGetCount, "cuDeviceGetCount")
  KILN_RESOLVE(cuDeviceGet, "cuDeviceGet")
  KILN_RESOLVE(cuDeviceGetName, "cuDeviceGetName")
  KILN_RESOLVE(cuDeviceGetAttribute, "cuDeviceGetAttribute")
  KILN_RESOLVE(cuDeviceTotalMem, "cuDeviceTotalMem_v2")
  KILN_RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
  KILN_RESOLVE(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",
               "cuDevicePrimaryCtxRelease")
  KILN_RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent")
  KILN_RESOLVE(cuModuleLoadData, "cuModuleLoadData")
  KILN_RESOLVE(cuModuleUnload, "cuModuleUnload")
  KILN_RESOLVE(cuModuleGetFunction, "cuModuleGetFunction")
  KILN_RESOLVE(cuFuncSetAttribute, "cuFuncSetAttribute")
  KILN_RESOLVE(cuLaunchKernel, "cuLaunchKernel")
  KILN_RESOLVE(cuStreamCreate, "cuStreamCreate")
  KILN_RESOLVE(cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy")
  KILN_RESOLVE(cuStreamSynchronize, "cuStreamSynchronize")
  KILN_RESOLVE(cuStreamWaitEvent, "cuStreamWaitEvent")
  KILN_RESOLVE(cuEventCreate, "cuEventCreate")
  KILN_RESOLVE(cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy")
  KILN_RESOLVE(cuEventRecord, "cuEventRecord")
  KILN_RESOLVE(cuEventSynchronize, "cuEventSynchronize")
  KILN_RESOLVE(cuEventElapsedTime, "cuEventElapsedTime_v2",
               "cuEventElapsedTime")
  KILN_RESOLVE(cuMemAlloc, "cuMemAlloc_v2")
  KILN_RESOLVE(cuMemFree, "cuMemFree_v2")
  KILN_RESOLVE(cuMemcpyHtoD, "cuMemcpyHtoD_v2")
  KILN_RESOLVE(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")
  KILN_RESOLVE(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")
  KILN_RESOLVE(cuMemcpyAsync, "cuMemcpyAsync")
  KILN_RESOLVE(cuMemsetD32Async, "cuMemsetD32Async")
  KILN_RESOLVE(cuMemsetD16Async, "cuMemsetD16Async")
  KILN_RESOLVE(cuStreamBeginCapture, "cuStreamBeginCapture_v2")
  KILN_RESOLVE(cuStreamEndCapture, "cuStreamEndCapture")
  KILN_RESOLVE(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags")
  KILN_RESOLVE(cuGraphLaunch, "cuGraphLaunch")
  KILN_RESOLVE(cuGraphExecDestroy, "cuGraphExecDestroy")
  KILN_RESOLVE(cuGraphDestroy, "cuGraphDestroy")
#undef KILN_RESOLVE
  if (missing) {
    l.error = lib + " lacks " + missing + " (a driver older than CUDA 11.4)";
    dlclose(h);
    return;
  }
  // Optional: without them every allocation is a cuMemAlloc.
  resolve(h, d.cuMemPoolCreate, "cuMemPoolCreate");
  resolve(h, d.cuMemPoolDestroy, "cuMemPoolDestroy");
  resolve(h, d.cuMemPoolSetAttribute, "cuMemPoolSetAttribute");
  resolve(h, d.cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync");
  resolve(h, d.cuMemFreeAsync, "cuMemFreeAsync");
  resolve(h, d.cuFuncLoad, "cuFuncLoad");
  resolve(h, d.cuFuncGetAttribute, "cuFuncGetAttribute");
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    l.error = "cuInit failed: " + d.errorText(r);
    return; // the library stays loaded: its error strings are ours now
  }
  l.ok = true;
}

} // namespace

const Driver *loadDriver(std::string &error) {
  // One load per library name: the driver stays for the process (sessions
  // may outlive main()); tests switch $KILN_LIBCUDA between cases.
  static std::mutex mutex;
  static auto *loaded = new std::map<std::string, Loaded *>;
  std::string name = driverLibraryName();
  std::lock_guard<std::mutex> lock(mutex);
  Loaded *&l = (*loaded)[name];
  if (!l) {
    l = new Loaded;
    load(*l);
  }
  if (!l->ok) {
    error = l->error;
    return nullptr;
  }
  return &l->driver;
}


void *Symbols::lookup(void *handle, const char *name) {
  return dlsym(handle, name);
}

void *openCudaLibrary(const char *envVar,
                      std::initializer_list<const char *> sonames,
                      std::string &tried) {
  std::vector<std::string> names;
  const char *env = std::getenv(envVar);
  if (env && *env) {
    names.push_back(env);
  } else {
    for (const char *n : sonames)
      names.push_back(n);
    const char *home = std::getenv("CUDA_HOME");
    for (std::string dir : {std::string(home && *home ? home : ""),
                            std::string("/usr/local/cuda")})
      if (!dir.empty())
        for (const char *n : sonames)
          names.push_back(dir + "/lib64/" + n);
  }
  tried.clear();
  for (const std::string &n : names) {
    if (void *h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))
      return h;
    tried += (tried.empty() ? "" : ", ") + n;
  }
  return nullptr;
}

} // namespace cuda
} // namespace kiln
