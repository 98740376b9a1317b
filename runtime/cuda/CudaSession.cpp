//===- CudaSession.cpp - Running CUDA artifacts ----------------------------===//
//
// See CudaSession.h. Every driver call is checked; the first failure of a
// run is kept with the kernel it happened in and the calls after it are
// skipped (the host code cannot see errors: the mgpu* functions return
// void), and CudaSession::run returns it.
//
// Graphs: with SessionOptions::graphs the first run is captured
// (cuStreamBeginCapture in relaxed mode, so the lazy cuBLASLt set-up may
// allocate) and replayed with cuGraphLaunch; that run and later ones replay
// it. The inputs and outputs live in device buffers the session owns, copied
// outside the graph, so every replay reads and writes the same addresses.
// stream_synchronize and event_synchronize are no-ops while capturing (the
// run synchronizes at its end). A capture that fails (an operation a graph
// cannot hold) turns graphs off for the session and the run is done again
// eagerly; graphsOffReason() says why.
//
//===----------------------------------------------------------------------===//
#include "CudaSession.h"
#include "Nccl.h"
#include "kiln/distributed.hpp"

#include "CublasLt.h"
#include "Cudnn.h"

#include <cstring>
#include <algorithm>
#include <ctime>
#include <limits>

namespace kiln {
namespace cuda {

namespace {

thread_local CudaSession *tSession = nullptr;

uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

CUdeviceptr dptr(const void *p) {
  return CUdeviceptr(reinterpret_cast<uintptr_t>(p));
}
void *hptr(CUdeviceptr p) { return reinterpret_cast<void *>(uintptr_t(p)); }

// The cuBLASLt workspace: 32 MiB covers its heuristics' choices on
// Ampere/Hopper (NVIDIA recommends 32 MiB for Hopper).
constexpr uint64_t kWorkspaceBytes = uint64_t(32) << 20;

// The largest cuDNN workspace a convolution may take from the pool (per
// call, freed right after it): heuristics' choices above it are skipped.
constexpr uint64_t kMaxConvWorkspaceBytes = uint64_t(256) << 20;

// "<call> failed: <status>" -> "<call> failed in kernel <k>: <status>".
std::string inKernel(const std::string &err, const std::string &kernel) {
  size_t at = err.find(" failed: ");
  return at == std::string::npos
             ? err + " (in kernel " + kernel + ")"
             : err.substr(0, at) + " failed in kernel " + kernel + ": " +
                   err.substr(at + 9);
}

// The trampolines of the table: `ctx` is the CudaModel; the session is the
// one running on this thread (none: the call is outside a run and ignored).
#define KILN_SESSION_OR(ret)                                                   \
  CudaSession *s = tSession;                                                   \
  (void)ctx;                                                                   \
  if (!s)                                                                      \
    return ret;

void *tGetFunction(void *ctx, const char *name) {
  KILN_SESSION_OR(nullptr)
  return s->getFunction(name);
}
void tLaunch(void *ctx, void *f, intptr_t gx, intptr_t gy, intptr_t gz,
             intptr_t bx, intptr_t by, intptr_t bz, int32_t smem, void *,
             void **params, void **extra, size_t) {
  KILN_SESSION_OR()
  s->launch(f, gx, gy, gz, bx, by, bz, smem, params, extra);
}
void *tStreamCreate(void *ctx) {
  KILN_SESSION_OR(nullptr)
  return s->stream();
}
void tStreamDestroy(void *, void *) {} // the session's stream stays
void tStreamSynchronize(void *ctx, void *) {
  KILN_SESSION_OR()
  s->synchronize();
}
void tStreamWaitEvent(void *ctx, void *, void *event) {
  KILN_SESSION_OR()
  s->waitEvent(event);
}
void *tEventCreate(void *ctx) {
  KILN_SESSION_OR(nullptr)
  return s->createEvent();
}
void tEventDestroy(void *ctx, void *event) {
  KILN_SESSION_OR()
  s->destroyEvent(event);
}
void tEventSynchronize(void *ctx, void *event) {
  KILN_SESSION_OR()
  s->synchronizeEvent(event);
}
void tEventRecord(void *ctx, void *event, void *) {
  KILN_SESSION_OR()
  s->recordEvent(event);
}
void *tMemAlloc(void *ctx, uint64_t bytes, void *, int32_t hostShared) {
  KILN_SESSION_OR(nullptr)
  return s->alloc(bytes, hostShared);
}
void tMemFree(void *ctx, void *ptr, void *) {
  KILN_SESSION_OR()
  s->free(ptr);
}
void tMemcpy(void *ctx, void *dst, const void *src, size_t bytes, void *) {
  KILN_SESSION_OR()
  s->copy(dst, src, bytes);
}
void tMemset32(void *ctx, void *dst, uint32_t value, size_t count, void *) {
  KILN_SESSION_OR()
  s->set32(dst, value, count);
}
void tMemset16(void *ctx, void *dst, uint16_t value, size_t count, void *) {
  KILN_SESSION_OR()
  s->set16(dst, value, count);
}
void tGemm(void *ctx, void *, int32_t dtype, int32_t epilogue, int64_t batch,
           int64_t bBatch, int64_t m, int64_t n, int64_t k, const void *a,
           const void *b, const void *bias, void *c) {
  KILN_SESSION_OR()
  s->gemm(dtype, epilogue, batch, bBatch, m, n, k, a, b, bias, c);
}
void tQGemm(void *ctx, void *, int64_t m, int64_t n, int64_t k, const void *a,
            int32_t aFlags, const void *w, void *c) {
  KILN_SESSION_OR()
  s->qgemm(m, n, k, a, aFlags, w, c);
}
void tConv2d(void *ctx, void *, int32_t dtype, int32_t epilogue, int64_t n,
             int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s_,
             int64_t p, int64_t q, int64_t padTop, int64_t padLeft,
             int64_t padBottom, int64_t padRight, int64_t strideH,
             int64_t strideW, int64_t dilationH, int64_t dilationW,
             int64_t groups, const void *x, const void *weight,
             const void *bias, void *y) {
  KILN_SESSION_OR()
  s->conv2d(ConvArgs{dtype, epilogue, n, c, h, w, k, r, s_, p, q, padTop,
                     padLeft, padBottom, padRight, strideH, strideW,
                     dilationH, dilationW, groups, x, weight, bias, y});
}
void tAllReduce(void *ctx, void *, int32_t dtype, const void *in, void *out,
                int64_t count) {
  KILN_SESSION_OR()
  s->allReduce(dtype, in, out, count);
}
#undef KILN_SESSION_OR

std::string chipOf(int major, int minor) {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

} // namespace

void profilerCallback(int32_t kernel, int32_t end) {
  if (CudaSession *s = tSession)
    s->profileHook(kernel, end);
}

//===----------------------------------------------------------------------===//
// CudaModel
//===----------------------------------------------------------------------===//

CudaModel::CudaModel(ModelDesc desc,
                     void (*setRuntime)(const kiln_cuda_runtime_api *))
    : desc_(std::move(desc)), setRuntime_(setRuntime) {
  std::memset(&api_, 0, sizeof(api_));
  api_.struct_size = sizeof(api_);
  api_.abi_version = KILN_CUDA_ABI_VERSION;
  api_.ctx = this;
  api_.module_get_function = tGetFunction;
  api_.launch_kernel = tLaunch;
  api_.stream_create = tStreamCreate;
  api_.stream_destroy = tStreamDestroy;
  api_.stream_synchronize = tStreamSynchronize;
  api_.stream_wait_event = tStreamWaitEvent;
  api_.event_create = tEventCreate;
  api_.event_destroy = tEventDestroy;
  api_.event_synchronize = tEventSynchronize;
  api_.event_record = tEventRecord;
  api_.mem_alloc = tMemAlloc;
  api_.mem_free = tMemFree;
  api_.memcpy = tMemcpy;
  api_.memset32 = tMemset32;
  api_.memset16 = tMemset16;
  api_.gemm = tGemm;
  api_.qgemm = tQGemm;
  api_.conv2d = tConv2d;
  api_.all_reduce = tAllReduce;
  if (setRuntime_)
    setRuntime_(&api_);
}

CudaModel::~CudaModel() {
  // The code may stay loaded (dlclose is a request): never leave it a
  // pointer to a freed table.
  if (setRuntime_)
    setRuntime_(nullptr);
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

bool listDevices(std::vector<std::string> &lines, std::string &error) {
  std::string why;
  const Driver *d = loadDriver(why);
  if (!d) {
    error = "no CUDA device: " + why;
    return false;
  }
  int count = 0;
  CUresult r = d->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    error = "no CUDA device: cuDeviceGetCount failed: " + d->errorText(r);
    return false;
  }
  if (count == 0) {
    error = "no CUDA device: the driver reports zero devices";
    return false;
  }
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    char name[256] = {0};
    int major = 0, minor = 0;
    size_t total = 0;
    if (d->cuDeviceGet(&dev, i) != CUDA_SUCCESS)
      continue;
    d->cuDeviceGetName(name, sizeof(name) - 1, dev);
    d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                            dev);
    d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                            dev);
    d->cuDeviceTotalMem(&total, dev);
    lines.push_back("cuda:" + std::to_string(i) + " " + name + " (" +
                    chipOf(major, minor) + ", " +
                    std::to_string(total >> 20) + " MiB)");
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Session creation
//===----------------------------------------------------------------------===//

std::unique_ptr<CudaSession>
CudaSession::create(const CudaModel &model, const SessionOptions &options,
                    kiln_status &status, std::string &error) {
  std::unique_ptr<CudaSession> s(new CudaSession);
  status = KILN_OK;
  error = s->open(model, options, status);
  if (!error.empty()) {
    if (status == KILN_OK)
      status = KILN_ERROR_DEVICE;
    return nullptr;
  }
  return s;
}

std::string CudaSession::open(const CudaModel &model,
                              const SessionOptions &options,
                              kiln_status &status) {
  model_ = &model.desc();
  const ModelDesc &m = *model_;
  std::string why;
  d_ = loadDriver(why);
  if (!d_)
    return "no CUDA device: " + why;
  const Driver &d = *d_;
  auto fail = [&](const char *call, CUresult r) {
    return std::string(call) + " failed: " + d.errorText(r);
  };
  int count = 0;
  CUresult r = d.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    return "no CUDA device: " + fail("cuDeviceGetCount", r);
  if (count == 0)
    return "no CUDA device: the driver reports zero devices";
  if (options.device < 0 || options.device >= count) {
    status = KILN_ERROR_INVALID_ARGUMENT;
    return "device cuda:" + std::to_string(options.device) +
           " does not exist (this machine has " + std::to_string(count) +
           " CUDA device" + (count == 1 ? ")" : "s: cuda:0..cuda:" +
                                                    std::to_string(count - 1) +
                                                    ")");
  }
  deviceIndex_ = options.device;
  if ((r = d.cuDeviceGet(&device_, deviceIndex_)) != CUDA_SUCCESS)
    return fail("cuDeviceGet", r);
  char name[256] = {0};
  if ((r = d.cuDeviceGetName(name, sizeof(name) - 1, device_)) !=
      CUDA_SUCCESS)
    return fail("cuDeviceGetName", r);
  int major = 0, minor = 0, pools = 0, optin = 0;
  if ((r = d.cuDeviceGetAttribute(
           &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_)) !=
          CUDA_SUCCESS ||
      (r = d.cuDeviceGetAttribute(
           &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_)) !=
          CUDA_SUCCESS)
    return fail("cuDeviceGetAttribute (compute capability)", r);
  if (d.cuDeviceGetAttribute(&optin,
                             CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                             device_) == CUDA_SUCCESS &&
      optin > 0)
    maxSharedOptin_ = optin;
  deviceChip_ = chipOf(major, minor);
  deviceDesc_ = std::string(name) + " (" + deviceChip_ + ")";
  // What a measurement states of the device (kiln_session_device): also its
  // memory and the driver's CUDA version.
  reportDesc_ = std::string(name) + " (" + deviceChip_;
  size_t totalBytes = 0;
  if (d.cuDeviceTotalMem(&totalBytes, device_) == CUDA_SUCCESS &&
      totalBytes > 0)
    reportDesc_ += ", " + std::to_string(totalBytes >> 20) + " MiB";
  int driver = 0;
  if (d.cuDriverGetVersion(&driver) == CUDA_SUCCESS && driver > 0)
    reportDesc_ += ", CUDA " + std::to_string(driver / 1000) + "." +
                   std::to_string(driver % 1000 / 10);
  reportDesc_ += ")";
  std::string onDevice = "device cuda:" + std::to_string(deviceIndex_) + " " +
                         deviceDesc_;

  if ((r = d.cuDevicePrimaryCtxRetain(&context_, device_)) != CUDA_SUCCESS)
    return fail("cuDevicePrimaryCtxRetain", r) + " (" + onDevice + ")";
  haveContext_ = true;
  if ((r = d.cuCtxSetCurrent(context_)) != CUDA_SUCCESS)
    return fail("cuCtxSetCurrent", r);
  if ((r = d.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
    return fail("cuStreamCreate", r);
  if (options.tensorParallelRanks >= 1) {
    std::string e = openNccl(options, count);
    if (!e.empty()) {
      status = KILN_ERROR_DEVICE;
      return e;
    }
  }

  // The pool: a session's own, so its memory is not shared with other
  // libraries' stream-ordered allocations; it keeps what it has (release
  // threshold: all) so later runs allocate without going to the OS.
  graphs_ = options.graphs;
  if (!options.graphs)
    graphsOff_ = "turned off by the session options";
  if (d.cuMemPoolCreate && d.cuMemAllocFromPoolAsync && d.cuMemFreeAsync &&
      d.cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                             device_) == CUDA_SUCCESS &&
      pools) {
    CUmemPoolProps props;
    std::memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device_;
    if ((r = d.cuMemPoolCreate(&pool_, &props)) != CUDA_SUCCESS)
      pool_ = nullptr; // cuMemAlloc then, as without pool support
    else if (d.cuMemPoolSetAttribute) {
      uint64_t keep = std::numeric_limits<uint64_t>::max();
      d.cuMemPoolSetAttribute(pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    }
  }
  if (!pool_ && graphs_) {
    // cuMemAlloc cannot be captured into a graph.
    graphs_ = false;
    graphsOff_ = "the device or driver has no stream-ordered memory pools";
  }

  bool allLibrary =
      !m.kernels.empty() && m.libraryKernels.size() == m.kernels.size() &&
      std::all_of(m.libraryKernels.begin(), m.libraryKernels.end(),
                  [](bool library) { return library; });
  if ((!m.fatbin || m.fatbinSize == 0) && !allLibrary)
    return m.path + ": the artifact has no cuda-fatbin section";
  // Every kernel a library call: nothing to load.
  if (!m.fatbin || m.fatbinSize == 0) {
  } else if ((r = d.cuModuleLoadData(&module_, m.fatbin)) != CUDA_SUCCESS) {
    module_ = nullptr;
    return "cuModuleLoadData failed: the cuda-fatbin section (chip " + m.chip +
           ") cannot be loaded on " + onDevice + ": " + d.errorText(r);
  }
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    if (i < m.libraryKernels.size() && m.libraryKernels[i])
      continue;
    CUfunction f = nullptr;
    r = d.cuModuleGetFunction(&f, module_, m.kernels[i].c_str());
    if (r != CUDA_SUCCESS || !f)
      return "kernel '" + m.kernels[i] +
             "' of the kernel table is not in the cuda-fatbin section (chip " +
             m.chip + ", " + onDevice + "): cuModuleGetFunction: " +
             d.errorText(r);
    // Loaded now: with CUDA's lazy loading (the default since 12.2) the
    // first launch would load it, inside the first run's graph capture.
    int threads = 0;
    r = d.cuFuncLoad ? d.cuFuncLoad(f)
        : d.cuFuncGetAttribute
            ? d.cuFuncGetAttribute(&threads,
                                   CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f)
            : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
      return "kernel '" + m.kernels[i] + "' cannot be loaded on " + onDevice +
             ": " + fail(d.cuFuncLoad ? "cuFuncLoad" : "cuFuncGetAttribute",
                         r);
    functions_[m.kernels[i]] = f;
    functionNames_[f] = m.kernels[i];
  }
  // cuDNN's handle now, outside any capture, when the table names a cuDNN
  // call (kiln-compile's k<N>_cudnn_conv*). A missing cuDNN is reported by
  // the call, in the run, with the kernel named.
  for (size_t i = 0; i < m.kernels.size() && !cudnnHandle_; ++i) {
    if (i >= m.libraryKernels.size() || !m.libraryKernels[i] ||
        m.kernels[i].find("cudnn") == std::string::npos)
      continue;
    Cudnn *dnn = nullptr;
    if (Cudnn::load(dnn).empty())
      (void)dnn->createHandle(stream_, cudnnHandle_);
    break;
  }

  auto residentAlloc = [&](uint64_t bytes, CUdeviceptr &out,
                           const std::string &what) -> std::string {
    CUresult rr = d.cuMemAlloc(&out, bytes ? bytes : 1);
    if (rr != CUDA_SUCCESS) {
      out = 0;
      if (rr == CUDA_ERROR_OUT_OF_MEMORY)
        status = KILN_ERROR_OUT_OF_MEMORY;
      return "cuMemAlloc failed for " + what + " (" + std::to_string(bytes) +
             " bytes): " + d.errorText(rr);
    }
    memory_.add(out, bytes, /*resident=*/true);
    return "";
  };
  std::string err;
  for (size_t i = 0; i < m.weights.size(); ++i) {
    CUdeviceptr p;
    err = residentAlloc(m.weightBytes[i], p, "weight " + std::to_string(i));
    if (!err.empty())
      return err;
    weights_.push_back(p);
    if (m.weightBytes[i] &&
        (r = d.cuMemcpyHtoD(p, m.weights[i], m.weightBytes[i])) !=
            CUDA_SUCCESS)
      return "cuMemcpyHtoD failed uploading weight " + std::to_string(i) +
             ": " + d.errorText(r);
  }
  for (size_t i = 0; i < m.inputBytes.size(); ++i) {
    CUdeviceptr p;
    if (!(err = residentAlloc(m.inputBytes[i], p,
                              "input " + std::to_string(i)))
             .empty())
      return err;
    inputs_.push_back(p);
  }
  for (size_t i = 0; i < m.outputBytes.size(); ++i) {
    CUdeviceptr p;
    if (!(err = residentAlloc(m.outputBytes[i], p,
                              "output " + std::to_string(i)))
             .empty())
      return err;
    outputs_.push_back(p);
  }
  for (CUdeviceptr p : inputs_)
    buffers_.push_back(hptr(p));
  for (CUdeviceptr p : weights_)
    buffers_.push_back(hptr(p));
  for (CUdeviceptr p : outputs_)
    buffers_.push_back(hptr(p));
  return "";
}

CudaSession::~CudaSession() {
  if (!d_)
    return;
  const Driver &d = *d_;
  if (haveContext_)
    d.cuCtxSetCurrent(context_);
  if (stream_)
    d.cuStreamSynchronize(stream_);
  if (ncclComm_)
    nccl_->commDestroy(ncclComm_);
  if (graphExec_)
    d.cuGraphExecDestroy(graphExec_);
  if (graph_)
    d.cuGraphDestroy(graph_);
  for (CUevent e : eventPool_)
    d.cuEventDestroy(e);
  if (runStartEvent_)
    d.cuEventDestroy(runStartEvent_);
  for (auto *list : {&weights_, &inputs_, &outputs_})
    for (CUdeviceptr p : *list)
      d.cuMemFree(p);
  if (workspace_)
    d.cuMemFree(workspace_);
  if (cudnnHandle_) {
    Cudnn *dnn = nullptr;
    if (Cudnn::load(dnn).empty())
      dnn->destroyHandle(cudnnHandle_);
  }
  if (module_)
    d.cuModuleUnload(module_);
  if (pool_)
    d.cuMemPoolDestroy(pool_);
  if (stream_)
    d.cuStreamDestroy(stream_);
  if (haveContext_)
    d.cuDevicePrimaryCtxRelease(device_);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

std::string CudaSession::where() const {
  if (hookKernel_ >= 0 && size_t(hookKernel_) < model_->kernels.size())
    return "in kernel " + model_->kernels[size_t(hookKernel_)];
  if (!lastKernel_.empty())
    return "after kernel " + lastKernel_;
  return "before the first kernel";
}

bool CudaSession::check(CUresult r, const char *call,
                        const std::string &kernel) {
  if (r == CUDA_SUCCESS)
    return true;
  if (error_.empty())
    error_ = std::string(call) + " failed " +
             (kernel.empty() ? where() : "in kernel " + kernel) + ": " +
             d_->errorText(r);
  return false;
}

//===----------------------------------------------------------------------===//
// The table's functions
//===----------------------------------------------------------------------===//

void *CudaSession::getFunction(const char *name) {
  if (failed() || !name)
    return nullptr;
  auto it = functions_.find(name);
  if (it != functions_.end())
    return it->second;
  // A kernel the table does not list (code compiled without the profiling
  // hooks has no table): resolved on first use.
  CUfunction f = nullptr;
  if (!check(d_->cuModuleGetFunction(&f, module_, name), "cuModuleGetFunction",
             std::string(name) + " (chip " + model_->chip + ", device " +
                 deviceDesc_ + ")"))
    return nullptr;
  functions_[name] = f;
  functionNames_[f] = name;
  return f;
}

void CudaSession::launch(void *function, intptr_t gx, intptr_t gy,
                         intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz,
                         int32_t smem, void **params, void **extra) {
  if (failed())
    return;
  CUfunction f = static_cast<CUfunction>(function);
  auto nameIt = functionNames_.find(f);
  std::string name =
      nameIt != functionNames_.end() ? nameIt->second : "<unknown kernel>";
  if (!f) {
    error_ = "cuLaunchKernel failed " + where() + ": no function (NULL)";
    return;
  }
  // An empty grid has nothing to do (a kernel over an empty tensor); CUDA
  // would call it an invalid value.
  if (gx == 0 || gy == 0 || gz == 0)
    return;
  const intptr_t limit = std::numeric_limits<unsigned>::max();
  for (intptr_t v : {gx, gy, gz, bx, by, bz})
    if (v < 1 || v > limit) {
      error_ = "cuLaunchKernel failed in kernel " + name + ": grid (" +
               std::to_string(gx) + ", " + std::to_string(gy) + ", " +
               std::to_string(gz) + ") or block (" + std::to_string(bx) +
               ", " + std::to_string(by) + ", " + std::to_string(bz) +
               ") out of range";
      return;
    }
  if (smem < 0) {
    error_ = "cuLaunchKernel failed in kernel " + name +
             ": negative shared memory size " + std::to_string(smem);
    return;
  }
  // Above 48 KiB a kernel must opt in to its dynamic shared memory.
  if (smem > (48 << 10) && !largeShared_.count(f)) {
    if (smem > maxSharedOptin_) {
      error_ = "cuLaunchKernel failed in kernel " + name + ": " +
               std::to_string(smem) + " bytes of shared memory, the device (" +
               deviceDesc_ + ") allows " + std::to_string(maxSharedOptin_);
      return;
    }
    if (!check(d_->cuFuncSetAttribute(
                   f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
               "cuFuncSetAttribute", name))
      return;
    largeShared_.insert(f);
  }
  lastKernel_ = name;
  check(d_->cuLaunchKernel(f, unsigned(gx), unsigned(gy), unsigned(gz),
                           unsigned(bx), unsigned(by), unsigned(bz),
                           unsigned(smem), stream_, params, extra),
        "cuLaunchKernel", name);
}

void CudaSession::synchronize() {
  if (failed() || capturing_)
    return; // while capturing, the run synchronizes at its end
  check(d_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void CudaSession::waitEvent(void *event) {
  if (failed())
    return;
  check(d_->cuStreamWaitEvent(stream_, static_cast<CUevent>(event), 0),
        "cuStreamWaitEvent");
}

void *CudaSession::createEvent() {
  if (failed())
    return nullptr;
  CUevent e = nullptr;
  if (!check(d_->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate"))
    return nullptr;
  return e;
}

void CudaSession::destroyEvent(void *event) {
  if (event && !failed())
    check(d_->cuEventDestroy(static_cast<CUevent>(event)), "cuEventDestroy");
}

void CudaSession::synchronizeEvent(void *event) {
  if (failed() || capturing_)
    return;
  check(d_->cuEventSynchronize(static_cast<CUevent>(event)),
        "cuEventSynchronize");
}

void CudaSession::recordEvent(void *event) {
  if (failed())
    return;
  check(d_->cuEventRecord(static_cast<CUevent>(event), stream_),
        "cuEventRecord");
}

void *CudaSession::alloc(uint64_t bytes, int32_t hostShared) {
  if (failed())
    return nullptr;
  if (hostShared) {
    error_ = "mgpuMemAlloc failed " + where() +
             ": host-shared allocations are not supported by Kiln's CUDA "
             "runtime";
    return nullptr;
  }
  CUdeviceptr p = 0;
  uint64_t n = bytes ? bytes : 1;
  bool ok =
      pool_ ? check(d_->cuMemAllocFromPoolAsync(&p, n, pool_, stream_),
                    "cuMemAllocFromPoolAsync")
            : check(d_->cuMemAlloc(&p, n), "cuMemAlloc");
  if (!ok)
    return nullptr;
  memory_.add(p, bytes);
  if (capturing_)
    captureAllocs_.push_back(p);
  return hptr(p);
}

void CudaSession::free(void *ptr) {
  if (!ptr || failed())
    return;
  CUdeviceptr p = dptr(ptr);
  if (memory_.remove(p) < 0) {
    error_ = "mgpuMemFree failed " + where() +
             ": the pointer was not allocated by this session's run (or is "
             "freed twice)";
    return;
  }
  if (pool_)
    check(d_->cuMemFreeAsync(p, stream_), "cuMemFreeAsync");
  else
    check(d_->cuMemFree(p), "cuMemFree");
}

void CudaSession::copy(void *dst, const void *src, size_t bytes) {
  if (failed() || bytes == 0)
    return;
  check(d_->cuMemcpyAsync(dptr(dst), dptr(src), bytes, stream_),
        "cuMemcpyAsync");
}

void CudaSession::set32(void *dst, uint32_t value, size_t count) {
  if (failed() || count == 0)
    return;
  check(d_->cuMemsetD32Async(dptr(dst), value, count, stream_),
        "cuMemsetD32Async");
}

void CudaSession::set16(void *dst, uint16_t value, size_t count) {
  if (failed() || count == 0)
    return;
  check(d_->cuMemsetD16Async(dptr(dst), value, count, stream_),
        "cuMemsetD16Async");
}

void CudaSession::gemm(int32_t dtype, int32_t epilogue, int64_t batch,
                       int64_t bBatch, int64_t m, int64_t n, int64_t k,
                       const void *a, const void *b, const void *bias,
                       void *c) {
  if (failed())
    return;
  std::string kernel =
      hookKernel_ >= 0 && size_t(hookKernel_) < model_->kernels.size()
          ? model_->kernels[size_t(hookKernel_)]
          : std::string("kiln_rt_cuda_gemm");
  GemmArgs args{dtype, epilogue, batch, bBatch, m, n, k, a, b, bias, c};
  GemmPlan plan;
  std::string err = planGemm(args, plan);
  if (!err.empty()) {
    error_ = "kiln_rt_cuda_gemm failed in kernel " + kernel + ": " + err;
    return;
  }
  CublasLt *lt = nullptr;
  err = CublasLt::load(lt);
  if (!err.empty()) {
    error_ = "kiln_rt_cuda_gemm failed in kernel " + kernel + ": " + err;
    return;
  }
  if (!workspace_) {
    // Outside the pool: it lives as long as the session, and cuMemAlloc is
    // allowed while capturing in relaxed mode.
    CUdeviceptr p = 0;
    if (!check(d_->cuMemAlloc(&p, kWorkspaceBytes), "cuMemAlloc", kernel))
      return;
    workspace_ = p;
    workspaceBytes_ = kWorkspaceBytes;
    memory_.add(p, kWorkspaceBytes, /*resident=*/true);
  }
  lastKernel_ = kernel;
  err = lt->run(args, plan, stream_, hptr(workspace_), workspaceBytes_);
  if (!err.empty())
    error_ = inKernel(err, kernel);
}

void CudaSession::conv2d(const ConvArgs &args) {
  if (failed())
    return;
  std::string kernel =
      hookKernel_ >= 0 && size_t(hookKernel_) < model_->kernels.size()
          ? model_->kernels[size_t(hookKernel_)]
          : std::string("kiln_rt_cuda_conv2d");
  ConvPlan plan;
  std::string err = planConv(args, plan);
  if (!err.empty()) {
    error_ = "kiln_rt_cuda_conv2d failed in kernel " + kernel + ": " + err;
    return;
  }
  Cudnn *dnn = nullptr;
  err = Cudnn::load(dnn);
  if (!err.empty()) {
    error_ = "kiln_rt_cuda_conv2d failed in kernel " + kernel + ": " + err;
    return;
  }
  if (!cudnnHandle_) {
    // Usually made at session creation (open); here when that failed or a
    // kernel's name did not say cuDNN. Relaxed capture mode allows the
    // allocations cudnnCreate may make.
    err = dnn->createHandle(stream_, cudnnHandle_);
    if (!err.empty()) {
      error_ = inKernel(err, kernel);
      return;
    }
  }
  // The heuristics once per shape: host work only, but not free, and eager
  // runs (graphs off, profiling) repeat every call.
  std::string key;
  for (int64_t v : {int64_t(args.dtype), args.n, args.c, args.h, args.w,
                    args.k, args.r, args.s, args.padTop, args.padLeft,
                    args.strideH, args.strideW, args.dilationH,
                    args.dilationW, args.groups})
    key += std::to_string(v) + ",";
  auto it = convChoices_.find(key);
  if (it == convChoices_.end()) {
    ConvChoice choice{0, 0};
    err = dnn->selectAlgorithm(cudnnHandle_, plan, kMaxConvWorkspaceBytes,
                               choice.algo, choice.workspaceBytes);
    if (!err.empty()) {
      error_ = inKernel(err, kernel);
      return;
    }
    it = convChoices_.emplace(key, choice).first;
  }
  // The workspace from the session's pool, stream-ordered, so a captured
  // graph holds it as an allocation node (no cudaMalloc in the run).
  void *workspace = nullptr;
  if (it->second.workspaceBytes) {
    workspace = alloc(it->second.workspaceBytes, 0);
    if (!workspace)
      return; // alloc recorded the error
  }
  lastKernel_ = kernel;
  err = dnn->run(cudnnHandle_, args, plan, it->second.algo, workspace,
                 it->second.workspaceBytes);
  if (workspace)
    free(workspace);
  if (!err.empty() && !failed())
    error_ = inKernel(err, kernel);
}

void CudaSession::qgemm(int64_t m, int64_t n, int64_t k, const void *a,
                        int32_t aFlags, const void *w, void *c) {
  if (failed())
    return;
  std::string kernel =
      hookKernel_ >= 0 && size_t(hookKernel_) < model_->kernels.size()
          ? model_->kernels[size_t(hookKernel_)]
          : std::string("kiln_rt_cuda_qgemm");
  QGemmArgs args{m, n, k, a, aFlags, w, c};
  std::string err = checkQGemm(args);
  if (err.empty()) {
    CublasLt *lt = nullptr;
    err = CublasLt::load(lt);
    if (err.empty()) {
      if (!workspace_) {
        CUdeviceptr p = 0;
        if (!check(d_->cuMemAlloc(&p, kWorkspaceBytes), "cuMemAlloc",
                   kernel))
          return;
        workspace_ = p;
        workspaceBytes_ = kWorkspaceBytes;
        memory_.add(p, kWorkspaceBytes, /*resident=*/true);
      }
      lastKernel_ = kernel;
      err = lt->runQGemm(args, stream_, hptr(workspace_), workspaceBytes_);
      if (!err.empty()) {
        size_t at = err.find(" failed: ");
        error_ = at == std::string::npos
                     ? err + " (in kernel " + kernel + ")"
                     : err.substr(0, at) + " failed in kernel " + kernel +
                           ": " + err.substr(at + 9);
        return;
      }
      return;
    }
  }
  error_ = "kiln_rt_cuda_qgemm failed in kernel " + kernel + ": " + err;
}

/// The group's communicator: one rank per GPU (two ranks of a node on one
/// GPU would share its memory and serialize on it: refused), the unique id
/// from rank 0 over MPI.
std::string CudaSession::openNccl(const SessionOptions &options,
                                  int deviceCount) {
  dist::World &world = dist::World::get();
  bool alone = options.tensorParallelRanks == 1; // a one-rank shard
  if (!alone &&
      (!world.initialized() || world.size() != options.tensorParallelRanks))
    return "a tensor-parallel model of " +
           std::to_string(options.tensorParallelRanks) +
           " ranks needs a world of that many MPI ranks";
  if (!alone && world.localSize() > deviceCount)
    return std::to_string(world.localSize()) + " ranks of a tensor-parallel "
           "model on " + world.hostname() + ", which has " +
           std::to_string(deviceCount) +
           " CUDA device(s): each rank needs a GPU of its own";
  const Nccl *nccl = nullptr;
  std::string e = Nccl::load(nccl);
  if (!e.empty())
    return e;
  NcclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::string idBytes;
  int r = 0;
  if (alone || world.rank() == 0) {
    r = nccl->getUniqueId(&id);
    idBytes.assign(id.internal, sizeof(id.internal));
  }
  // Every rank joins the broadcast, also when rank 0 failed (an empty id).
  if (!alone)
    idBytes = world.broadcast(r == 0 ? idBytes : std::string());
  if (r != 0)
    return std::string("ncclGetUniqueId failed: ") + nccl->errorString(r);
  if (idBytes.size() != sizeof(id.internal))
    return "rank 0 could not make an NCCL unique id";
  std::memcpy(id.internal, idBytes.data(), sizeof(id.internal));
  r = nccl->commInitRank(&ncclComm_, options.tensorParallelRanks, id,
                         options.tensorParallelRank);
  if (r != 0) {
    ncclComm_ = nullptr;
    return std::string("ncclCommInitRank failed: ") + nccl->errorString(r);
  }
  nccl_ = nccl;
  ncclDesc_ = nccl->versionString() + ", " +
              std::to_string(options.tensorParallelRanks) + " ranks";
  return "";
}

void CudaSession::allReduce(int32_t dtype, const void *in, void *out,
                            int64_t count) {
  if (failed())
    return;
  std::string kernel =
      hookKernel_ >= 0 && size_t(hookKernel_) < model_->kernels.size()
          ? model_->kernels[size_t(hookKernel_)]
          : std::string("kiln_rt_cuda_all_reduce");
  int type = ncclTypeOf(dtype);
  if (!ncclComm_ || type < 0 || count < 0) {
    error_ = "kiln_rt_cuda_all_reduce failed in kernel " + kernel + ": " +
             (!ncclComm_ ? "the session has no NCCL communicator (the "
                           "artifact is not a tensor-parallel shard)"
                         : "an element type or count NCCL cannot sum");
    return;
  }
  size_t width = dtype == KILN_DTYPE_FLOAT32 ? 4 : 2;
  if (in != out && count > 0)
    copy(out, in, size_t(count) * width);
  if (failed())
    return;
  lastKernel_ = kernel;
  int r = nccl_->allReduce(out, out, size_t(count), type, kNcclSum,
                           ncclComm_, stream_);
  if (r != 0)
    error_ = "ncclAllReduce failed in kernel " + kernel + ": " +
             nccl_->errorString(r);
}

CUevent CudaSession::timingEvent() {
  if (eventsUsed_ < eventPool_.size())
    return eventPool_[eventsUsed_++];
  CUevent e = nullptr;
  if (!check(d_->cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate"))
    return nullptr;
  eventPool_.push_back(e);
  ++eventsUsed_;
  return e;
}

void CudaSession::profileHook(int32_t kernel, int32_t end) {
  hookKernel_ = end ? -1 : kernel;
  if (!profiling_ || failed() || kernel < 0)
    return;
  CUevent e = timingEvent();
  if (!e || !check(d_->cuEventRecord(e, stream_), "cuEventRecord"))
    return;
  if (!end) {
    marks_.push_back({kernel, e, nullptr});
    return;
  }
  // The innermost open mark of this kernel.
  for (size_t i = marks_.size(); i-- > 0;)
    if (marks_[i].kernel == kernel && !marks_[i].end) {
      marks_[i].end = e;
      return;
    }
}

//===----------------------------------------------------------------------===//
// Runs
//===----------------------------------------------------------------------===//

void CudaSession::freeRunLeftovers() {
  // After a failed run the code's later frees were skipped: give the pool
  // blocks back so the session stays usable.
  for (CUdeviceptr p : memory_.livePoolBlocks()) {
    memory_.remove(p);
    if (pool_)
      d_->cuMemFreeAsync(p, stream_);
    else
      d_->cuMemFree(p);
  }
}

std::string CudaSession::run(const void *const *inputs, void *const *outputs,
                             RunProfile *profile) {
  std::lock_guard<std::mutex> lock(runMutex_);
  const Driver &d = *d_;
  const ModelDesc &m = *model_;
  struct Scope {
    CudaSession *saved = tSession;
    explicit Scope(CudaSession *s) { tSession = s; }
    ~Scope() { tSession = saved; }
  } scope(this);
  error_.clear();
  lastKernel_.clear();
  hookKernel_ = -1;
  marks_.clear();
  eventsUsed_ = 0;
  profiling_ = profile != nullptr;
  capturing_ = false;

  check(d.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  for (size_t i = 0; i < inputs_.size() && !failed(); ++i)
    if (m.inputBytes[i])
      check(d.cuMemcpyHtoDAsync(inputs_[i], inputs[i], m.inputBytes[i],
                                stream_),
            "cuMemcpyHtoDAsync (input)");

  uint64_t startNs = monotonicNs();
  if (profiling_ && !failed()) {
    if (!runStartEvent_)
      check(d.cuEventCreate(&runStartEvent_, CU_EVENT_DEFAULT),
            "cuEventCreate");
    if (!failed())
      check(d.cuEventRecord(runStartEvent_, stream_), "cuEventRecord");
  }

  if (!failed()) {
    if (graphs_ && !profiling_ && !graphExec_)
      runEntry(); // captures, then replays (or falls back to eager)
    else if (graphs_ && !profiling_) {
      if (check(d.cuGraphLaunch(graphExec_, stream_), "cuGraphLaunch"))
        ++graphReplays_;
    } else {
      m.entry(buffers_.data());
    }
  }

  for (size_t i = 0; i < outputs_.size() && !failed(); ++i)
    if (m.outputBytes[i])
      check(d.cuMemcpyDtoHAsync(outputs[i], outputs_[i], m.outputBytes[i],
                                stream_),
            "cuMemcpyDtoHAsync (output)");
  // The errors of asynchronous work surface here; they belong to some
  // kernel of the run, the last one launched at the latest.
  CUresult sync = d.cuStreamSynchronize(stream_);
  if (sync != CUDA_SUCCESS && error_.empty())
    error_ = "cuStreamSynchronize failed at the end of the run (" + where() +
             "; an asynchronous error of this or an earlier kernel): " +
             d.errorText(sync);
  uint64_t endNs = monotonicNs();

  if (profile && error_.empty()) {
    profile->startNs = startNs;
    profile->endNs = endNs;
    profile->events.clear();
    for (const Mark &mk : marks_) {
      if (!mk.end)
        continue;
      float startMs = 0, durMs = 0;
      if (!check(d.cuEventElapsedTime(&startMs, runStartEvent_, mk.begin),
                 "cuEventElapsedTime") ||
          !check(d.cuEventElapsedTime(&durMs, mk.begin, mk.end),
                 "cuEventElapsedTime"))
        break;
      uint64_t s = startNs + uint64_t(double(startMs) * 1e6);
      uint64_t e = s + uint64_t(double(durMs) * 1e6);
      profile->events.push_back({mk.kernel, 0, 0, s, e});
    }
  }
  profiling_ = false;
  if (!error_.empty()) {
    freeRunLeftovers();
    d.cuStreamSynchronize(stream_);
  }
  return error_;
}

void CudaSession::runEntry() {
  const Driver &d = *d_;
  captureAllocs_.clear();
  if (!check(d.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED),
             "cuStreamBeginCapture"))
    return;
  capturing_ = true;
  model_->entry(buffers_.data());
  capturing_ = false;
  CUgraph graph = nullptr;
  CUresult endResult = d.cuStreamEndCapture(stream_, &graph);
  std::string reason;
  if (!error_.empty())
    reason = error_;
  else if (endResult != CUDA_SUCCESS)
    reason = "cuStreamEndCapture failed: " + d.errorText(endResult);
  CUgraphExec exec = nullptr;
  if (reason.empty()) {
    CUresult r = d.cuGraphInstantiateWithFlags(&exec, graph, 0);
    if (r != CUDA_SUCCESS)
      reason = "cuGraphInstantiate failed: " + d.errorText(r);
  }
  if (!reason.empty()) {
    // Nothing of the captured run executed: forget its allocations, turn
    // graphs off and run eagerly, where a real error shows as itself.
    if (graph)
      d.cuGraphDestroy(graph);
    for (CUdeviceptr p : captureAllocs_)
      memory_.remove(p);
    captureAllocs_.clear();
    graphs_ = false;
    graphsOff_ = "capture failed: " + reason;
    error_.clear();
    lastKernel_.clear();
    hookKernel_ = -1;
    model_->entry(buffers_.data());
    return;
  }
  // The graph owns the captured allocations; what the run left live is
  // live in every replay too, and what it freed is free again.
  graph_ = graph;
  graphExec_ = exec;
  ++graphCaptures_;
  if (check(d.cuGraphLaunch(graphExec_, stream_), "cuGraphLaunch"))
    ++graphReplays_;
}

} // namespace cuda
} // namespace kiln
