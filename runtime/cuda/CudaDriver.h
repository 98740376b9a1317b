//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The few driver API types, constants and entry points the CUDA runtime
// uses, declared here so the runtime builds without a CUDA toolkit, and
// resolved from libcuda.so.1 with dlopen/dlsym at the first session, so
// kiln-run starts (and runs CPU artifacts) on machines without a driver.
// The values are the ones of cuda.h (CUDA 12/13); CudaConstantsTest checks
// them against the toolkit's headers where a toolkit is installed.
//
// $KILN_LIBCUDA names another library to load instead (tests point it at a
// missing file, or at the fake driver of test/Runtime/FakeCuda.c).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_CUDADRIVER_H
#define KILN_RUNTIME_CUDA_CUDADRIVER_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>

namespace kiln {
namespace cuda {

// Driver API types (opaque handles, as in cuda.h).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
using CUmemoryPool = struct CUmemPoolHandle_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901;

constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned CU_EVENT_DEFAULT = 0x0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
constexpr int CU_STREAM_CAPTURE_MODE_RELAXED = 2;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115;
constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr int CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4;
constexpr int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
constexpr int CU_MEM_HANDLE_TYPE_NONE = 0;
constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 1;

// cuda.h's CUmemPoolProps (88 bytes; "reserved" must be zero).
struct CUmemPoolProps {
  int allocType;
  int handleTypes;
  struct {
    int type;
    int id;
  } location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};
static_assert(sizeof(CUmemPoolProps) == 88, "cuda.h's CUmemPoolProps layout");

/// The entry points, resolved by name (the versioned names cuda.h's macros
/// pick: cuMemAlloc is cuMemAlloc_v2, ...).
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph,
                                          unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  // Stream-ordered allocation (CUDA 11.2+); null when the driver lacks it.
  CUresult (*cuMemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
  CUresult (*cuMemPoolDestroy)(CUmemoryPool);
  CUresult (*cuMemPoolSetAttribute)(CUmemoryPool, int, void *);
  CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool,
                                      CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  // Loading a function now rather than at its first launch (CUDA 12.4+;
  // cuFuncGetAttribute, which also loads it, where cuFuncLoad is missing).
  CUresult (*cuFuncLoad)(CUfunction);
  CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);

  /// "CUDA_ERROR_X: description" for a result (its number when the driver
  /// knows no name).
  std::string errorText(CUresult r) const;
};

/// Opens a CUDA library (cuBLASLt, cuDNN) with dlopen: `$envVar` alone when
/// set; else each of `sonames` on the loader's path, then in the toolkit's
/// usual folders ($CUDA_HOME/lib64, /usr/local/cuda/lib64). Returns the
/// handle, or null with `tried` listing every name tried.
void *openCudaLibrary(const char *envVar,
                      std::initializer_list<const char *> sonames,
                      std::string &tried);

/// A library's loader run once per process (cuBLASLt, cuDNN, NCCL): the
/// first call runs `load(loaded)` under a lock ("" or why not, `loaded` set
/// on success); every call returns that and sets `out` to what it loaded.
template <typename T, typename Load>
std::string loadOnce(T *&out, Load load) {
  static std::mutex mutex;
  static T *loaded = nullptr;
  static std::string error;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried) {
    tried = true;
    error = load(loaded);
    if (!error.empty())
      loaded = nullptr;
  }
  out = loaded;
  return error;
}

/// Resolves entry points of a library openCudaLibrary opened, keeping the
/// first one it lacks: `Symbols sym{h}; sym(api->create, "cudnnCreate");
/// ... if (sym.missing) ...`.
struct Symbols {
  void *handle;
  const char *missing = nullptr;
  template <typename Fn> void operator()(Fn &fn, const char *name) {
    void *p = lookup(handle, name);
    if (!p && !missing)
      missing = name;
    fn = reinterpret_cast<Fn>(p);
  }
  static void *lookup(void *handle, const char *name);
};

/// The library $KILN_LIBCUDA names, or "libcuda.so.1".
std::string driverLibraryName();

/// The driver of driverLibraryName(): loaded, resolved and cuInit'ed once
/// per name and kept for the process. Returns null with `error` set
/// ("libcuda.so.1 not found (...)", "cuInit failed: ...") when there is
/// none.
const Driver *loadDriver(std::string &error);

} // namespace cuda
} // namespace kiln

#endif // KILN_RUNTIME_CUDA_CUDADRIVER_H
