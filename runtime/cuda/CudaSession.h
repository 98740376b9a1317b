//===- CudaSession.h - Running CUDA artifacts -------------------*- C++ -*-===//
//
// The CUDA half of the runtime (docs/cuda-backend.md, "Runtime"). Runtime.cpp
// loads a "cuda" artifact as it loads a CPU one (mapping, checks, the host
// code dlopen'ed) and hands the rest here:
//
//   CudaModel    the function table of include/kiln/cuda_abi.h, installed
//                into the host code once per model; needs no driver.
//   CudaSession  one device, its primary context, one stream, a memory pool,
//                the module of the "cuda-fatbin" section with every kernel of
//                the kernel table resolved, the weights uploaded, device
//                buffers for the inputs and outputs, and the CUDA graph of
//                the run once captured.
//
// The table's functions find the session of the run in progress through a
// thread-local (set by CudaSession::run), so sessions of one model running
// on several threads stay apart; one session's runs are serialized.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_CUDASESSION_H
#define KILN_RUNTIME_CUDA_CUDASESSION_H

#include "CudaDriver.h"
#include "DeviceMemory.h"

#include "kiln/cuda_abi.h"
#include "kiln/runtime.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln {
namespace cuda {

struct ConvArgs; // Cudnn.h

/// What a session needs of the model (pointers into the mapped artifact,
/// valid while the model lives).
struct ModelDesc {
  std::string path; ///< for messages
  std::string chip; ///< the target's chip, e.g. "sm_80"
  const void *fatbin = nullptr;
  uint64_t fatbinSize = 0;
  /// The kernel table's names (index = the profiling hooks' id) and which
  /// of them are library calls (no function in the fatbin).
  std::vector<std::string> kernels;
  std::vector<bool> libraryKernels;
  std::vector<const void *> weights;
  std::vector<uint64_t> weightBytes;
  std::vector<uint64_t> inputBytes, outputBytes;
  void (*entry)(void **) = nullptr;
};

class CudaModel {
public:
  /// Keeps `desc` and installs the table with `setRuntime` (the host code's
  /// kiln_abi_set_cuda_runtime).
  CudaModel(ModelDesc desc, void (*setRuntime)(const kiln_cuda_runtime_api *));
  ~CudaModel();
  CudaModel(const CudaModel &) = delete;
  CudaModel &operator=(const CudaModel &) = delete;

  const ModelDesc &desc() const { return desc_; }
  const kiln_cuda_runtime_api &api() const { return api_; }

private:
  ModelDesc desc_;
  kiln_cuda_runtime_api api_;
  void (*setRuntime_)(const kiln_cuda_runtime_api *);
};

struct SessionOptions {
  int device = 0;     ///< the CUDA device index
  bool graphs = true; ///< capture the run into a CUDA graph and replay it
  /// A tensor-parallel shard (the artifact's tensor_parallel_ranks/rank):
  /// the session makes an NCCL communicator of `ranks` over MPI.
  int tensorParallelRanks = 1, tensorParallelRank = 0;
};

/// One profiled run's kernel intervals (CLOCK_MONOTONIC ns, from events).
struct RunProfile {
  std::vector<kiln_profile_event> events;
  uint64_t startNs = 0, endNs = 0;
};

class CudaSession {
public:
  /// Opens the device and prepares everything a run needs. On failure
  /// returns null, with `status` and `error` set: KILN_ERROR_DEVICE and
  /// "no CUDA device: ..." when there is no driver or device, else the call
  /// that failed.
  static std::unique_ptr<CudaSession> create(const CudaModel &model,
                                             const SessionOptions &options,
                                             kiln_status &status,
                                             std::string &error);
  ~CudaSession();

  /// One run: copies `inputs` (host, the model's byte sizes) to the device,
  /// runs the code (a graph replay once captured), copies the outputs back
  /// into `outputs` (host). With `profile` set the run is not captured and
  /// each kernel is timed with events. Returns "" or the first error.
  std::string run(const void *const *inputs, void *const *outputs,
                  RunProfile *profile);

  const DeviceMemory &memory() const { return memory_; }
  /// "NVIDIA H200 (sm_90)".
  const std::string &deviceDescription() const { return deviceDesc_; }
  /// The device as a report states it: name, chip, memory, CUDA version.
  const std::string &reportDescription() const { return reportDesc_; }
  /// Runs replayed from the graph, graphs captured, and why graphs are off
  /// ("" while on).
  uint64_t graphReplays() const { return graphReplays_; }
  uint64_t graphCaptures() const { return graphCaptures_; }
  const std::string &graphsOffReason() const { return graphsOff_; }
  bool usesPool() const { return pool_ != nullptr; }

  // The table's functions (cuda_abi.h) work on the session of this thread's
  // run; public for the trampolines in CudaSession.cpp.
  void *getFunction(const char *name);
  void launch(void *function, intptr_t gx, intptr_t gy, intptr_t gz,
              intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
              void **params, void **extra);
  void synchronize();
  void waitEvent(void *event);
  void *createEvent();
  void destroyEvent(void *event);
  void synchronizeEvent(void *event);
  void recordEvent(void *event);
  void *alloc(uint64_t bytes, int32_t hostShared);
  void free(void *ptr);
  void copy(void *dst, const void *src, size_t bytes);
  void set32(void *dst, uint32_t value, size_t count);
  void set16(void *dst, uint16_t value, size_t count);
  void gemm(int32_t dtype, int32_t epilogue, int64_t batch, int64_t bBatch,
            int64_t m, int64_t n, int64_t k, const void *a, const void *b,
            const void *bias, void *c);
  void qgemm(int64_t m, int64_t n, int64_t k, const void *a, int32_t aFlags,
             const void *w, void *c);
  void conv2d(const ConvArgs &args);
  /// kiln_rt_cuda_all_reduce_*: out = the sum over the group's ranks of
  /// each rank's `in` (count elements of `dtype`), with NCCL on the stream.
  void allReduce(int32_t dtype, const void *in, void *out, int64_t count);
  /// "NCCL 2.27.3, 2 ranks" for a tensor-parallel session, else "".
  const std::string &ncclDescription() const { return ncclDesc_; }
  void profileHook(int32_t kernel, int32_t end);
  void *stream() const { return stream_; }

private:
  CudaSession() = default;
  std::string open(const CudaModel &model, const SessionOptions &options,
                   kiln_status &status);
  /// Records the first error of the run: "<call> failed in kernel <k>:
  /// <name>: <text>". Returns false when `r` is an error.
  bool check(CUresult r, const char *call, const std::string &kernel = "");
  std::string where() const;
  bool failed() const { return !error_.empty(); }
  void runEntry();
  void freeRunLeftovers();
  CUevent timingEvent();

  const Driver *d_ = nullptr;
  const ModelDesc *model_ = nullptr;
  CUdevice device_ = 0;
  int deviceIndex_ = 0;
  bool haveContext_ = false;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUmodule module_ = nullptr;
  CUmemoryPool pool_ = nullptr;
  std::string deviceDesc_, deviceChip_;
  int maxSharedOptin_ = 48 << 10;
  std::unordered_map<std::string, CUfunction> functions_;
  std::unordered_map<CUfunction, std::string> functionNames_;
  std::unordered_set<CUfunction> largeShared_;
  DeviceMemory memory_;
  std::vector<CUdeviceptr> weights_, inputs_, outputs_;
  std::vector<void *> buffers_; // kiln_entry's argument
  CUdeviceptr workspace_ = 0;
  uint64_t workspaceBytes_ = 0;
  // cuDNN (library convolutions): the session's handle, on its stream, and
  // the algorithm chosen per convolution shape (heuristics asked once).
  void *cudnnHandle_ = nullptr;
  // NCCL (tensor-parallel models): the group's communicator on this GPU.
  const struct Nccl *nccl_ = nullptr;
  void *ncclComm_ = nullptr;
  std::string ncclDesc_;
  std::string reportDesc_;
  std::string openNccl(const SessionOptions &options, int deviceCount);
  struct ConvChoice {
    int algo;
    uint64_t workspaceBytes;
  };
  std::unordered_map<std::string, ConvChoice> convChoices_;

  bool graphs_ = true;
  std::string graphsOff_;
  CUgraph graph_ = nullptr;
  CUgraphExec graphExec_ = nullptr;
  std::atomic<uint64_t> graphReplays_{0}, graphCaptures_{0};

  std::mutex runMutex_;
  // State of the run in progress (under runMutex_).
  std::string error_;
  bool capturing_ = false;
  std::string lastKernel_;
  int32_t hookKernel_ = -1;
  std::vector<CUdeviceptr> captureAllocs_;
  bool profiling_ = false;
  struct Mark {
    int32_t kernel;
    CUevent begin, end;
  };
  std::vector<Mark> marks_;
  std::vector<CUevent> eventPool_;
  size_t eventsUsed_ = 0;
  CUevent runStartEvent_ = nullptr;
};

/// The callback the runtime gives kiln_abi_set_profiler for CUDA code.
void profilerCallback(int32_t kernel, int32_t end);

/// The devices the driver reports, one line each ("cuda:0 NVIDIA H200
/// (sm_90, 139 GiB)"); false with `error` ("no CUDA device: ...") when there
/// are none.
bool listDevices(std::vector<std::string> &lines, std::string &error);

} // namespace cuda
} // namespace kiln

#endif // KILN_RUNTIME_CUDA_CUDASESSION_H
