//===- Runtime.cpp - The Kiln runtime's C API -----------------------------===//
//
// Loading: the artifact is mapped read-only and checked (Artifact.cpp), the
// code section is copied into a memfd and dlopen'ed through /proc/self/fd
// (a temporary file where memfd_create is missing), and the weights are
// pointers into the mapping (or into the mapped side file).
//
// Running: the arguments are checked against the header, kiln_entry gets
// the buffer array (inputs, weights, outputs), and the code's intermediate
// allocations come back through the hooks installed at load time, which
// account them to the session running on the calling thread.
//
// CUDA artifacts (target kind "cuda") load the same way; their code gets the
// CUDA function table instead of the hooks, and their sessions and runs are
// runtime/cuda/'s (CudaSession.h).
//
//===----------------------------------------------------------------------===//
#include "Artifact.h"
#include "Errors.h"
#include "Profile.h"
#include "kiln/cuda_abi.h"
#include "kiln/distributed.hpp"

extern "C" int32_t kilnRuntimeAllReduce(void *data, int64_t count,
                                        int32_t dtype);
#include "kiln/runtime.h"
#if KILN_WITH_CUDA_RUNTIME
#include "CudaSession.h"
#endif

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <fcntl.h>
#include <new>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unistd.h>
#include <vector>

using namespace kiln;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

namespace {

thread_local std::string tLastError;

kiln_status setError(kiln_status status, const std::string &message) {
  tLastError = message;
  return status;
}

} // namespace

kiln_status kiln::setRuntimeError(kiln_status status,
                                  const std::string &message) {
  return setError(status, message);
}

extern "C" const char *kiln_last_error(void) { return tLastError.c_str(); }

extern "C" const char *kiln_status_string(kiln_status status) {
  switch (status) {
  case KILN_OK: return "KILN_OK";
  case KILN_ERROR_INVALID_ARGUMENT: return "KILN_ERROR_INVALID_ARGUMENT";
  case KILN_ERROR_IO: return "KILN_ERROR_IO";
  case KILN_ERROR_NOT_ARTIFACT: return "KILN_ERROR_NOT_ARTIFACT";
  case KILN_ERROR_VERSION: return "KILN_ERROR_VERSION";
  case KILN_ERROR_TRUNCATED: return "KILN_ERROR_TRUNCATED";
  case KILN_ERROR_CORRUPTED: return "KILN_ERROR_CORRUPTED";
  case KILN_ERROR_BAD_HEADER: return "KILN_ERROR_BAD_HEADER";
  case KILN_ERROR_UNSUPPORTED_TARGET: return "KILN_ERROR_UNSUPPORTED_TARGET";
  case KILN_ERROR_CODE: return "KILN_ERROR_CODE";
  case KILN_ERROR_TENSOR_MISMATCH: return "KILN_ERROR_TENSOR_MISMATCH";
  case KILN_ERROR_OUT_OF_MEMORY: return "KILN_ERROR_OUT_OF_MEMORY";
  case KILN_ERROR_DEVICE: return "KILN_ERROR_DEVICE";
  }
  return "KILN_ERROR_UNKNOWN";
}

//===----------------------------------------------------------------------===//
// The allocator given to the code
//===----------------------------------------------------------------------===//

namespace {

// Live and peak bytes of one owner. Every live allocation holds a reference,
// so an output released after its session is freed still finds its counters.
struct Counters {
  std::atomic<uint64_t> current{0};
  std::atomic<uint64_t> peak{0};
  std::atomic<int64_t> refs{1};

  void add(uint64_t n) {
    uint64_t now = current.fetch_add(n, std::memory_order_relaxed) + n;
    uint64_t p = peak.load(std::memory_order_relaxed);
    while (now > p &&
           !peak.compare_exchange_weak(p, now, std::memory_order_relaxed))
      ;
  }
  void sub(uint64_t n) { current.fetch_sub(n, std::memory_order_relaxed); }
};

void unref(Counters *c) {
  if (c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete c;
}

// All allocations of the process (never freed: static storage).
Counters gProcess;
// The session running on this thread (set by kiln_session_run).
thread_local Counters *tSession = nullptr;

// Stored right before the pointer handed out. `offset` is where that
// pointer lies in the block (a multiple of `align`, the block's alignment):
// what is below the header is the caller's prefix (an output's dims).
struct AllocHeader {
  Counters *owner;
  uint64_t size;
  void *base;
  uint32_t offset;
  uint32_t align;
};
static_assert(sizeof(AllocHeader) <= KILN_ARTIFACT_ALIGNMENT,
              "the header must fit in the alignment padding");

// Freed blocks kept for reuse, by exact (size, alignment). A compiled model
// has static shapes: it asks for the same sizes on every run, and reusing
// the blocks spares the page faults of fresh ones (glibc maps large blocks
// anew on every malloc and unmaps them on free; on the small CNN at batch
// 8 a quarter of the run was the kernel filling such pages). Bounded: at
// most the process's peak of bytes in use, or kCacheLimit if that is more,
// are held (a run that needed them needs them again; ONNX Runtime's arena
// keeps its peak too: ViT-B/16 at batch 8 allocates 2.2 GB per run, and
// with 256 MB held, a third of its run went to the page faults of fresh
// blocks); the accounting above counts only the blocks in use.
constexpr uint64_t kCacheLimit = uint64_t(256) << 20;
struct BlockCache {
  std::mutex mutex;
  std::unordered_map<uint64_t, std::vector<void *>> free;
  uint64_t bytes = 0;
};
BlockCache &blockCache() {
  static BlockCache *cache = new BlockCache; // never destroyed: outlives users
  return *cache;
}
uint64_t cacheKey(uint64_t total, size_t align) {
  return total * 64 + static_cast<uint64_t>(__builtin_ctzll(align));
}

// `prefix` bytes (a multiple of 8) are kept right below the header, for
// the caller: prefixOf finds them.
void *allocFor(Counters *owner, size_t size, size_t align,
               size_t prefix = 0) {
  if (align < KILN_ARTIFACT_ALIGNMENT)
    align = KILN_ARTIFACT_ALIGNMENT;
  if (align & (align - 1)) { // not a power of two: the next one
    size_t p = KILN_ARTIFACT_ALIGNMENT;
    while (p < align)
      p <<= 1;
    align = p;
  }
  if (align > (size_t(1) << 30) || prefix > (size_t(1) << 30))
    return nullptr;
  size_t offset = (sizeof(AllocHeader) + prefix + align - 1) / align * align;
  if (size > SIZE_MAX - offset)
    return nullptr;
  size_t total = size + offset;
  void *base = nullptr;
  {
    BlockCache &cache = blockCache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.free.find(cacheKey(total, align));
    if (it != cache.free.end() && !it->second.empty()) {
      base = it->second.back();
      it->second.pop_back();
      cache.bytes -= total;
    }
  }
  if (!base && posix_memalign(&base, align, total) != 0)
    return nullptr;
  char *user = static_cast<char *>(base) + offset;
  AllocHeader *h = reinterpret_cast<AllocHeader *>(user) - 1;
  h->owner = owner;
  h->size = size;
  h->base = base;
  h->offset = uint32_t(offset);
  h->align = uint32_t(align);
  // The process counter first on allocation and last on free, so that it
  // never holds less than a session's: a session's peak can then never
  // exceed the process peak, even with runs on several threads.
  gProcess.add(size);
  if (owner) {
    owner->refs.fetch_add(1, std::memory_order_relaxed);
    owner->add(size);
  }
  return user;
}

void freeBlock(void *ptr) {
  if (!ptr)
    return;
  AllocHeader *h = static_cast<AllocHeader *>(ptr) - 1;
  if (h->owner) {
    h->owner->sub(h->size);
    unref(h->owner);
  }
  gProcess.sub(h->size);
  uint64_t total = h->size + h->offset;
  {
    BlockCache &cache = blockCache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    uint64_t limit =
        std::max(kCacheLimit, gProcess.peak.load(std::memory_order_relaxed));
    if (cache.bytes + total <= limit) {
      cache.free[cacheKey(total, h->align)].push_back(h->base);
      cache.bytes += total;
      return;
    }
  }
  std::free(h->base);
}

// The caller's prefix of a block from allocFor (`bytes` of it).
void *prefixOf(void *ptr, size_t bytes) {
  return static_cast<char *>(ptr) - sizeof(AllocHeader) - bytes;
}

// The hooks (docs/artifact.md): C linkage types.
extern "C" void *kilnHookAlloc(size_t size, size_t align) {
  return allocFor(tSession, size, align);
}
extern "C" void kilnHookFree(void *ptr) { freeBlock(ptr); }

} // namespace

//===----------------------------------------------------------------------===//
// The profiler given to the code
//===----------------------------------------------------------------------===//

namespace {

uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// A small number per thread that runs sessions (the trace's thread ids).
uint32_t threadNumber() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t number = next.fetch_add(1, std::memory_order_relaxed);
  return number;
}

// The events of the profiled run in progress on this thread. The hooks are
// called on the thread that called kiln_entry, so concurrent runs each have
// their own recorder and the hooks need no lock.
struct Recorder {
  std::vector<uint64_t> open; // start time per kernel id
  std::vector<kiln_profile_event> events;
};
thread_local Recorder *tRecorder = nullptr;

extern "C" void kilnHookProfile(int32_t id, int32_t end) {
  Recorder *r = tRecorder;
  if (!r || id < 0 || size_t(id) >= r->open.size())
    return;
  uint64_t now = monotonicNs();
  if (!end) {
    r->open[size_t(id)] = now;
    return;
  }
  try {
    r->events.push_back({id, 0, 0, r->open[size_t(id)], now});
  } catch (...) {
    // Out of memory: the launch goes unrecorded.
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

struct kiln_model {
  ArtifactHeader header;
  std::string path;
  void *map = nullptr;
  size_t mapSize = 0;
  void *sideMap = nullptr;
  size_t sideSize = 0;
  void *dl = nullptr;
  int32_t (*abiVersion)(void) = nullptr;
  void (*entry)(void **) = nullptr;
  void (*setHooks)(void *(*)(size_t, size_t), void (*)(void *)) = nullptr;
  void (*setNumThreads)(int32_t) = nullptr;
  // Optional (models compiled without the hooks lack it).
  void (*setProfiler)(void (*)(int32_t, int32_t)) = nullptr;
  void (*setAllReduce)(int32_t (*)(void *, int64_t, int32_t)) = nullptr;
  std::mutex profilerMutex;
  int profilingSessions = 0; // the callback is set while > 0
  std::vector<std::vector<const char *>> kernelNodes; // kernel_info's arrays
  std::vector<void *> weightPtrs;
  std::atomic<int64_t> refs{1};
  // Target kind "cuda": the code's table setter and the CUDA half.
  bool isCuda = false;
  void (*setCudaRuntime)(const kiln_cuda_runtime_api *) = nullptr;
#if KILN_WITH_CUDA_RUNTIME
  std::unique_ptr<cuda::CudaModel> cuda;
#endif

  ~kiln_model() {
#if KILN_WITH_CUDA_RUNTIME
    cuda.reset(); // uninstalls its table from the code: before dlclose
#endif
    if (dl)
      dlclose(dl);
    if (map)
      munmap(map, mapSize);
    if (sideMap)
      munmap(sideMap, sideSize);
  }
};

namespace {

void unrefModel(kiln_model *m) {
  if (m && m->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete m;
}

// Maps a whole file read-only; size 0 maps nothing.
kiln_status mapFile(const std::string &path, void *&map, size_t &size) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return setError(KILN_ERROR_IO,
                    path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return setError(KILN_ERROR_IO, path + ": not a regular file");
  }
  size = size_t(st.st_size);
  map = nullptr;
  if (size) {
    map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      map = nullptr;
      close(fd);
      return setError(KILN_ERROR_IO,
                      path + ": cannot map: " + std::strerror(errno));
    }
  }
  close(fd);
  return KILN_OK;
}

bool writeAll(int fd, const unsigned char *data, uint64_t size) {
  while (size) {
    ssize_t n = write(fd, data, size > (1u << 30) ? (1u << 30) : size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= uint64_t(n);
  }
  return true;
}

// dlopen's the code section: from a memfd (no file on disk), or from a
// temporary file removed right after.
kiln_status openCode(kiln_model *m, const unsigned char *code, uint64_t size) {
  std::string where = m->path + ": code section: ";
  int fd = memfd_create("kiln-model", MFD_CLOEXEC);
  if (fd >= 0) {
    if (!writeAll(fd, code, size)) {
      close(fd);
      return setError(KILN_ERROR_IO,
                      where + "cannot write to memfd: " + std::strerror(errno));
    }
    // dlopen reuses a loaded object whose name equals the path, and fd
    // numbers are reused: an earlier model loaded as /proc/self/fd/N (and
    // still loaded, or kept by the loader) would be returned for a new
    // model in the same slot. So pick a number no loaded object is named
    // after, dup'ing the memfd until RTLD_NOLOAD finds nothing.
    std::vector<int> fds = {fd};
    std::string procPath;
    while (true) {
      procPath = "/proc/self/fd/" + std::to_string(fds.back());
      void *old = dlopen(procPath.c_str(), RTLD_LAZY | RTLD_NOLOAD);
      if (!old)
        break;
      dlclose(old);
      int next = fcntl(fd, F_DUPFD_CLOEXEC, 0);
      if (next < 0 || fds.size() > 1024) {
        for (int f : fds)
          close(f);
        if (next >= 0)
          close(next);
        return setError(KILN_ERROR_IO, where + "no free descriptor to load "
                                               "the code from");
      }
      fds.push_back(next);
    }
    dlerror();
    m->dl = dlopen(procPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    for (int f : fds)
      close(f);
    if (!m->dl) {
      const char *e = dlerror();
      return setError(KILN_ERROR_CODE,
                      where + "cannot load it: " + (e ? e : "dlopen failed"));
    }
    return KILN_OK;
  }
  const char *tmpdir = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/kiln-model-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  fd = mkstemp(name.data());
  if (fd < 0)
    return setError(KILN_ERROR_IO, where + "cannot create a temporary file: " +
                                       std::strerror(errno));
  bool ok = writeAll(fd, code, size);
  close(fd);
  if (ok)
    m->dl = dlopen(name.data(), RTLD_NOW | RTLD_LOCAL);
  const char *e = ok && !m->dl ? dlerror() : nullptr;
  unlink(name.data());
  if (!ok)
    return setError(KILN_ERROR_IO, where + "cannot write a temporary file");
  if (!m->dl)
    return setError(KILN_ERROR_CODE,
                    where + "cannot load it: " + (e ? e : "dlopen failed"));
  return KILN_OK;
}

kiln_status findSymbols(kiln_model *m) {
  auto sym = [&](const char *name, void *&out) {
    dlerror();
    out = dlsym(m->dl, name);
    return out != nullptr;
  };
  void *p;
  std::string where = m->path + ": code section: ";
  const char *missing = nullptr;
  if (!sym("kiln_abi_version", p))
    missing = "kiln_abi_version";
  else
    m->abiVersion = reinterpret_cast<int32_t (*)(void)>(p);
  if (!missing && !sym(m->header.entry.c_str(), p))
    missing = m->header.entry.c_str();
  else if (!missing)
    m->entry = reinterpret_cast<void (*)(void **)>(p);
  if (m->isCuda) {
    // CUDA host code: the table setter; the host allocation hooks are
    // optional there (host-side buffers, if the code has any).
    if (!missing && !sym("kiln_abi_set_cuda_runtime", p))
      missing = "kiln_abi_set_cuda_runtime";
    else if (!missing)
      m->setCudaRuntime =
          reinterpret_cast<void (*)(const kiln_cuda_runtime_api *)>(p);
    if (!missing && sym("kiln_abi_set_hooks", p))
      m->setHooks = reinterpret_cast<void (*)(void *(*)(size_t, size_t),
                                              void (*)(void *))>(p);
  } else {
    if (!missing && !sym("kiln_abi_set_hooks", p))
      missing = "kiln_abi_set_hooks";
    else if (!missing)
      m->setHooks = reinterpret_cast<void (*)(void *(*)(size_t, size_t),
                                              void (*)(void *))>(p);
    if (!missing && !sym("kiln_abi_set_num_threads", p))
      missing = "kiln_abi_set_num_threads";
    else if (!missing)
      m->setNumThreads = reinterpret_cast<void (*)(int32_t)>(p);
  }
  if (!missing && sym("kiln_abi_set_all_reduce", p))
    m->setAllReduce =
        reinterpret_cast<void (*)(int32_t (*)(void *, int64_t, int32_t))>(p);
  if (!missing && sym("kiln_abi_set_profiler", p))
    m->setProfiler = reinterpret_cast<void (*)(void (*)(int32_t, int32_t))>(p);
  if (missing)
    return setError(KILN_ERROR_CODE, where + "the shared object does not "
                                             "export " + std::string(missing));
  int32_t v = m->abiVersion();
  if (v != KILN_CODE_ABI_VERSION)
    return setError(KILN_ERROR_CODE,
                    where + "code ABI version " + std::to_string(v) +
                        ", this runtime runs version " +
                        std::to_string(KILN_CODE_ABI_VERSION));
  return KILN_OK;
}

std::string dirName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

kiln_status loadModel(const char *path, kiln_model *m) {
  m->path = path;
  kiln_status st = mapFile(m->path, m->map, m->mapSize);
  if (st != KILN_OK)
    return st;
  static const unsigned char empty[1] = {0};
  const unsigned char *data =
      m->map ? static_cast<const unsigned char *>(m->map) : empty;
  std::string err;
  st = parseArtifact(data, m->mapSize, m->header, err);
  if (st == KILN_OK)
    st = checkHost(m->header, err);
  if (st != KILN_OK)
    return setError(st, m->path + ": " + err);
  const ArtifactHeader &h = m->header;
  m->isCuda = h.targetKind == "cuda";
#if !KILN_WITH_CUDA_RUNTIME
  if (m->isCuda)
    return setError(KILN_ERROR_UNSUPPORTED_TARGET,
                    m->path + ": unsupported target: kind \"cuda\", this "
                              "runtime was built without CUDA support "
                              "(-DKILN_ENABLE_CUDA_RUNTIME=OFF)");
#endif

  const unsigned char *weightsBase;
  if (!h.weightsFile.empty()) {
    std::string side = dirName(m->path) + "/" + h.weightsFile;
    st = mapFile(side, m->sideMap, m->sideSize);
    if (st != KILN_OK)
      return setError(st, m->path + ": side weights file: " + kiln_last_error());
    if (h.weightsOffset > m->sideSize ||
        h.weightsSize > m->sideSize - h.weightsOffset)
      return setError(KILN_ERROR_TRUNCATED,
                      m->path + ": truncated: the side weights file " + side +
                          " has " + std::to_string(m->sideSize) +
                          " bytes, the weights section needs " +
                          std::to_string(h.weightsOffset + h.weightsSize));
    weightsBase = m->sideMap ? static_cast<const unsigned char *>(m->sideMap) +
                                   h.weightsOffset
                             : empty;
  } else {
    weightsBase = data + h.dataOffset + h.weightsOffset;
  }
  for (const WeightDesc &w : h.weights)
    m->weightPtrs.push_back(const_cast<unsigned char *>(weightsBase) +
                            w.offset);

  st = openCode(m, data + h.dataOffset + h.codeOffset, h.codeSize);
  if (st != KILN_OK)
    return st;
  st = findSymbols(m);
  if (st != KILN_OK)
    return st;
  if (m->setHooks)
    m->setHooks(kilnHookAlloc, kilnHookFree);
  // Tensor parallelism: the code's all-reduces go to the process's world.
  if (m->setAllReduce)
    m->setAllReduce(kilnRuntimeAllReduce);
#if KILN_WITH_CUDA_RUNTIME
  if (m->isCuda) {
    // Needs no driver: a model loads (and --info works) on any machine.
    cuda::ModelDesc d;
    d.path = m->path;
    d.chip = h.chip;
    d.fatbin = data + h.dataOffset + h.fatbinOffset;
    d.fatbinSize = h.fatbinSize;
    for (const KernelDesc &k : h.kernels) {
      d.kernels.push_back(k.name);
      d.libraryKernels.push_back(k.library);
    }
    for (size_t i = 0; i < h.weights.size(); ++i) {
      d.weights.push_back(m->weightPtrs[i]);
      d.weightBytes.push_back(h.weights[i].bytes);
    }
    for (const TensorDesc &t : h.inputs)
      d.inputBytes.push_back(t.bytes);
    for (const TensorDesc &t : h.outputs)
      d.outputBytes.push_back(t.bytes);
    d.entry = m->entry;
    m->cuda.reset(new cuda::CudaModel(std::move(d), m->setCudaRuntime));
    // The CUDA callback stays set: it tells the runtime which kernel a
    // failing call belongs to, and records events only in profiled runs.
    // Its cost is a call per hook next to a kernel launch.
    if (m->setProfiler)
      m->setProfiler(cuda::profilerCallback);
  }
#endif
  for (const KernelDesc &k : h.kernels) {
    std::vector<const char *> nodes;
    for (const std::string &n : k.onnxNodes)
      nodes.push_back(n.c_str());
    m->kernelNodes.push_back(std::move(nodes));
  }
  return KILN_OK;
}

} // namespace

extern "C" kiln_status kiln_model_load(const char *path, kiln_model **model) {
  if (!path || !model)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_model_load: path and model must not be NULL");
  *model = nullptr;
  kiln_model *m = new (std::nothrow) kiln_model;
  if (!m)
    return setError(KILN_ERROR_OUT_OF_MEMORY, "kiln_model_load: out of memory");
  kiln_status st;
  try {
    st = loadModel(path, m);
  } catch (const std::bad_alloc &) {
    st = setError(KILN_ERROR_OUT_OF_MEMORY,
                  std::string(path) + ": out of memory while loading");
  }
  if (st != KILN_OK) {
    delete m;
    return st;
  }
  *model = m;
  return KILN_OK;
}

extern "C" void kiln_model_free(kiln_model *model) { unrefModel(model); }

extern "C" size_t kiln_model_num_inputs(const kiln_model *m) {
  return m ? m->header.inputs.size() : 0;
}
extern "C" size_t kiln_model_num_outputs(const kiln_model *m) {
  return m ? m->header.outputs.size() : 0;
}
extern "C" size_t kiln_model_num_weights(const kiln_model *m) {
  return m ? m->header.weights.size() : 0;
}

namespace {
kiln_status tensorInfo(const kiln_model *m, size_t index,
                       kiln_tensor_info *info, bool output) {
  if (!m || !info)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "tensor info: model and info must not be NULL");
  const std::vector<TensorDesc> &list =
      output ? m->header.outputs : m->header.inputs;
  if (index >= list.size())
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    std::string(output ? "output" : "input") + " index " +
                        std::to_string(index) + " out of range (the model has " +
                        std::to_string(list.size()) + ")");
  const TensorDesc &t = list[index];
  info->name = t.name.c_str();
  info->dtype = t.dtype;
  info->rank = int32_t(t.shape.size());
  info->dims = t.shape.data();
  return KILN_OK;
}
} // namespace

extern "C" kiln_status kiln_model_input_info(const kiln_model *m, size_t index,
                                             kiln_tensor_info *info) {
  return tensorInfo(m, index, info, false);
}
extern "C" kiln_status kiln_model_output_info(const kiln_model *m,
                                              size_t index,
                                              kiln_tensor_info *info) {
  return tensorInfo(m, index, info, true);
}
namespace {
const char *dimName(const kiln_model *m, size_t index, int32_t axis,
                    bool output) {
  if (!m || axis < 0)
    return nullptr;
  const std::vector<TensorDesc> &list =
      output ? m->header.outputs : m->header.inputs;
  if (index >= list.size() || size_t(axis) >= list[index].dimExprs.size())
    return nullptr;
  const std::string &name = list[index].dimName(size_t(axis));
  return name.empty() ? nullptr : name.c_str();
}
} // namespace

extern "C" const char *kiln_model_input_dim_name(const kiln_model *m,
                                                 size_t index, int32_t axis) {
  return dimName(m, index, axis, false);
}
extern "C" const char *kiln_model_output_dim_name(const kiln_model *m,
                                                  size_t index, int32_t axis) {
  return dimName(m, index, axis, true);
}
extern "C" int64_t kiln_model_output_alias(const kiln_model *m,
                                           size_t index) {
  if (!m || index >= m->header.outputAliases.size())
    return -1;
  return m->header.outputAliases[index];
}
extern "C" const char *kiln_model_metadata_json(const kiln_model *m) {
  return m ? m->header.json.c_str() : "";
}
extern "C" uint64_t kiln_model_content_hash(const kiln_model *m) {
  return m ? m->header.hash : 0;
}

extern "C" void kiln_model_tensor_parallel(const kiln_model *model,
                                           int64_t *ranks,
                                           int64_t *rank) {
  if (ranks)
    *ranks = model ? std::max<int64_t>(model->header.tensorParallelRanks, 1)
                   : 1;
  if (rank)
    *rank = model ? model->header.tensorParallelRank : 0;
}

//===----------------------------------------------------------------------===//
// Sessions
//===----------------------------------------------------------------------===//

struct kiln_session {
  kiln_model *model = nullptr;
#if KILN_WITH_CUDA_RUNTIME
  std::unique_ptr<cuda::CudaSession> cuda; // CUDA artifacts
#endif
  std::atomic<bool> profiling{false};
  std::unique_ptr<Profile> profile;
  int32_t numThreads = 1;
  Counters *counters = nullptr;
  std::atomic<uint64_t> numRuns{0};
  std::atomic<uint64_t> lastRunNs{0};
  std::atomic<uint64_t> totalRunNs{0};
  std::string device = "cpu"; // kiln_session_device
};

extern "C" void kiln_session_options_init(kiln_session_options *options) {
  if (!options)
    return;
  options->num_threads = 0;
  options->device = nullptr;
  options->cuda_graphs = 1;
}

extern "C" kiln_status kiln_session_create(kiln_model *model,
                                           const kiln_session_options *options,
                                           kiln_session **session) {
  if (!model || !session)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_session_create: model and session must not be NULL");
  *session = nullptr;
  kiln_session_options opts;
  kiln_session_options_init(&opts);
  if (options)
    opts = *options;
  // The device: the artifact's target kind, "cuda:N" picking a CUDA device.
  std::string target = model->isCuda ? "cuda" : "cpu";
  std::string device = opts.device ? opts.device : target;
  // Under a launcher, a rank without an explicit device index takes the
  // GPU of its local rank (one rank per GPU, docs/cluster.md).
  int deviceIndex = 0;
  const kiln::dist::World &world = kiln::dist::World::get();
  if (world.initialized() && world.usesMpi())
    deviceIndex = world.localRank();
  if (device.compare(0, 5, "cuda:") == 0) {
    std::string n = device.substr(5);
    char *end = nullptr;
    long v = n.empty() ? -1 : std::strtol(n.c_str(), &end, 10);
    if (v < 0 || v > 1023 || !end || *end)
      return setError(KILN_ERROR_INVALID_ARGUMENT,
                      "device \"" + device + "\": expected cuda:N with N a "
                                             "device index");
    deviceIndex = int(v);
    device = "cuda";
  }
  if (device != "cpu" && device != "cuda")
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "device \"" + device + "\" is not supported by this "
                                           "runtime (\"cpu\", \"cuda\", "
                                           "\"cuda:N\")");
  // A tensor-parallel shard runs only as its rank of a world of its size
  // (its all-reduces would wait forever, or sum the wrong shards).
  // A one-rank shard runs anywhere (a world of one sums nothing).
  if (model->header.tensorParallelRanks > 1) {
    const kiln::dist::World &w = kiln::dist::World::get();
    int64_t ranks = model->header.tensorParallelRanks;
    int64_t want = model->header.tensorParallelRank;
    if (!w.initialized() || !w.usesMpi() || w.size() != ranks ||
        w.rank() != want)
      return setError(
          KILN_ERROR_INVALID_ARGUMENT,
          model->path + ": rank " + std::to_string(want) + " of a " +
              std::to_string(ranks) +
              "-rank tensor-parallel model; this process is " +
              (w.initialized() && w.usesMpi()
                   ? "rank " + std::to_string(w.rank()) + " of " +
                         std::to_string(w.size())
                   : std::string("not started by mpirun (or the tool did "
                                 "not join the MPI world)")) +
              ": run it as `mpirun -n " + std::to_string(ranks) +
              " kiln-run model.rank{rank}.kiln`");
  }
  if (device != target)
    return setError(KILN_ERROR_UNSUPPORTED_TARGET,
                    model->path + ": the artifact is compiled for target \"" +
                        target + "\" and cannot run on device \"" +
                        (opts.device ? opts.device : "") + "\"");
  if (model->isCuda && !model->header.symbols.empty())
    return setError(KILN_ERROR_UNSUPPORTED_TARGET,
                    model->path + ": symbolic dims (\"symbols\") in a cuda "
                                  "artifact: not supported yet (CUDA runs "
                                  "static shapes only)");
  if (opts.num_threads < 0)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "num_threads " + std::to_string(opts.num_threads) +
                        " is negative (0 means the hardware concurrency)");
  kiln_session *s = new (std::nothrow) kiln_session;
  Counters *c = new (std::nothrow) Counters;
  if (!s || !c) {
    delete s;
    delete c;
    return setError(KILN_ERROR_OUT_OF_MEMORY,
                    "kiln_session_create: out of memory");
  }
  s->counters = c;
  try {
    s->profile.reset(new Profile(model->header.kernels.size()));
  } catch (const std::bad_alloc &) {
    delete s;
    delete c;
    return setError(KILN_ERROR_OUT_OF_MEMORY,
                    "kiln_session_create: out of memory");
  }
  s->numThreads = opts.num_threads;
  if (s->numThreads == 0) {
    unsigned hw = std::thread::hardware_concurrency();
    s->numThreads = hw ? int32_t(hw) : 1;
  }
#if KILN_WITH_CUDA_RUNTIME
  if (model->isCuda) {
    cuda::SessionOptions co;
    co.device = deviceIndex;
    co.tensorParallelRanks = int(model->header.tensorParallelRanks);
    co.tensorParallelRank = int(model->header.tensorParallelRank);
    co.graphs = opts.cuda_graphs != 0;
    kiln_status st = KILN_OK;
    std::string err;
    try {
      s->cuda = cuda::CudaSession::create(*model->cuda, co, st, err);
    } catch (const std::bad_alloc &) {
      st = KILN_ERROR_OUT_OF_MEMORY;
      err = "kiln_session_create: out of memory";
    }
    if (!s->cuda) {
      delete s;
      delete c;
      return setError(st, err);
    }
    s->device = "cuda:" + std::to_string(deviceIndex) + " " +
                s->cuda->reportDescription();
    // A tensor-parallel shard's collectives: NCCL's version and group.
    if (!s->cuda->ncclDescription().empty())
      s->device += ", NCCL " + s->cuda->ncclDescription();
  }
#else
  (void)deviceIndex;
#endif
  model->refs.fetch_add(1, std::memory_order_relaxed);
  s->model = model;
  *session = s;
  return KILN_OK;
}

extern "C" void kiln_session_free(kiln_session *session) {
  if (!session)
    return;
  kiln_session_set_profiling(session, 0);
#if KILN_WITH_CUDA_RUNTIME
  session->cuda.reset(); // while the model (its fatbin, its code) lives
#endif
  unref(session->counters);
  unrefModel(session->model);
  delete session;
}

extern "C" const kiln_model *kiln_session_model(const kiln_session *session) {
  return session ? session->model : nullptr;
}

extern "C" const char *kiln_session_device(const kiln_session *session) {
  return session ? session->device.c_str() : "";
}

extern "C" const char *kiln_session_cuda_graphs(const kiln_session *session) {
  thread_local std::string text;
  text.clear();
#if KILN_WITH_CUDA_RUNTIME
  if (session && session->cuda) {
    const cuda::CudaSession &c = *session->cuda;
    text = c.graphsOffReason().empty()
               ? "on (" + std::to_string(c.graphCaptures()) + " capture" +
                     (c.graphCaptures() == 1 ? "" : "s") + ", " +
                     std::to_string(c.graphReplays()) + " replay" +
                     (c.graphReplays() == 1 ? "" : "s") + ")"
               : "off: " + c.graphsOffReason();
  }
#else
  (void)session;
#endif
  return text.c_str();
}

extern "C" kiln_status kiln_list_cuda_devices(const char **text) {
  if (!text)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_list_cuda_devices: text must not be NULL");
  *text = "";
#if KILN_WITH_CUDA_RUNTIME
  thread_local std::string listed;
  std::vector<std::string> lines;
  std::string err;
  if (!cuda::listDevices(lines, err))
    return setError(KILN_ERROR_DEVICE, err);
  listed.clear();
  for (const std::string &l : lines)
    listed += l + "\n";
  *text = listed.c_str();
  return KILN_OK;
#else
  return setError(KILN_ERROR_DEVICE,
                  "no CUDA device: this runtime was built without CUDA "
                  "support (-DKILN_ENABLE_CUDA_RUNTIME=OFF)");
#endif
}

extern "C" int32_t kiln_session_num_threads(const kiln_session *session) {
  return session ? session->numThreads : 0;
}

namespace {

std::string shapeString(const int64_t *dims, int32_t rank) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string dtypeString(int32_t dtype) {
  const char *name = kiln_dtype_name(dtype);
  return name ? name : "dtype code " + std::to_string(dtype);
}

// The model's shape of `d`, symbolic dims by name ("[batch, 784]").
std::string modelShapeString(const TensorDesc &d) {
  std::string s = "[";
  for (size_t i = 0; i < d.shape.size(); ++i)
    s += (i ? ", " : "") + (d.dimName(i).empty() ? std::to_string(d.shape[i])
                                                 : d.dimName(i));
  return s + "]";
}

std::string tensorName(const char *what, size_t index, const TensorDesc &d) {
  return std::string(what) + " " + std::to_string(index) + " '" + d.name +
         "'";
}

kiln_status checkDtype(const std::string &named, const TensorDesc &d,
                       const kiln_tensor &t) {
  if (t.dtype != d.dtype)
    return setError(KILN_ERROR_TENSOR_MISMATCH,
                    named + ": dtype " + dtypeString(t.dtype) +
                        " given, the model expects " + dtypeString(d.dtype));
  return KILN_OK;
}

kiln_status shapeMismatch(const std::string &named, const kiln_tensor &t,
                          const std::string &expected) {
  std::string given = t.rank < 0 || (t.rank > 0 && !t.dims)
                          ? "rank " + std::to_string(t.rank) + " (no dims)"
                          : shapeString(t.dims, t.rank);
  return setError(KILN_ERROR_TENSOR_MISMATCH,
                  named + ": shape " + given + " given, the model expects " +
                      expected);
}

bool sameRank(const TensorDesc &d, const kiln_tensor &t) {
  return t.rank == int32_t(d.shape.size()) && t.rank >= 0 &&
         (t.rank == 0 || t.dims);
}

// The data pointer: NULL only where allowed (or nothing to point at), and
// aligned to the element size.
kiln_status checkData(const std::string &named, const TensorDesc &d,
                      const kiln_tensor &t, uint64_t bytes,
                      bool allowNullData) {
  if (!t.data) {
    if (allowNullData || bytes == 0)
      return KILN_OK;
    return setError(KILN_ERROR_INVALID_ARGUMENT, named + ": data is NULL");
  }
  size_t elem = kiln_dtype_size(d.dtype);
  if (reinterpret_cast<uintptr_t>(t.data) % elem != 0)
    return setError(KILN_ERROR_TENSOR_MISMATCH,
                    named + ": data is not aligned to its element size (" +
                        std::to_string(elem) + " bytes)");
  return KILN_OK;
}

std::string symbolValues(const ArtifactHeader &h,
                         const std::vector<int64_t> &values);

// A tensor against fully known dims (`dims`, d.shape.size() of them) and
// byte size. The messages are made only on a mismatch: with `symbols` (a
// dynamic artifact's values), the expected shape also shows the model's
// symbolic one ("[3, 8] ([n, m * 2] for n=3, m=4)").
kiln_status checkTensor(const char *what, size_t index, const TensorDesc &d,
                        const kiln_tensor &t, const int64_t *dims,
                        uint64_t bytes, const ArtifactHeader &h,
                        const std::vector<int64_t> *symbols) {
  bool same = t.dtype == d.dtype && sameRank(d, t);
  for (int32_t i = 0; same && i < t.rank; ++i)
    same = t.dims[i] == dims[size_t(i)];
  std::string named;
  if (!same) {
    named = tensorName(what, index, d);
    kiln_status st = checkDtype(named, d, t);
    if (st != KILN_OK)
      return st;
    std::string expected = shapeString(dims, int32_t(d.shape.size()));
    if (symbols && d.isSymbolic())
      expected += " (" + modelShapeString(d) + " for " +
                  symbolValues(h, *symbols) + ")";
    return shapeMismatch(named, t, expected);
  }
  size_t elem = kiln_dtype_size(d.dtype);
  if (t.data && reinterpret_cast<uintptr_t>(t.data) % elem == 0)
    return KILN_OK;
  return checkData(tensorName(what, index, d), d, t, bytes, false);
}

// A run's shapes of a dynamic artifact, on the caller's stack (a session
// runs on several threads at once): the symbols' values, bound from the
// inputs, and every output's dims and bytes.
struct RunShapes {
  std::vector<int64_t> symbols;
  std::vector<int64_t> outputDims; // all outputs' dims, one after another
  std::vector<size_t> outputStart; // output i's first entry in outputDims
  std::vector<uint64_t> outputBytes;
};

std::string symbolValues(const ArtifactHeader &h,
                         const std::vector<int64_t> &values) {
  std::string s;
  for (size_t i = 0; i < h.symbols.size() && i < values.size(); ++i)
    s += (i ? ", " : "") + h.symbols[i] + "=" + std::to_string(values[i]);
  return s;
}

// Checks the inputs of a dynamic artifact and binds each symbol from the
// first input dim that names it; every other use must agree.
kiln_status bindInputs(const ArtifactHeader &h, const kiln_tensor *inputs,
                       RunShapes &r) {
  size_t n = h.symbols.size();
  r.symbols.assign(n, -1);
  std::vector<std::pair<size_t, size_t>> from(n); // (input, axis)
  for (size_t i = 0; i < h.inputs.size(); ++i) {
    const TensorDesc &d = h.inputs[i];
    const kiln_tensor &t = inputs[i];
    std::string named = tensorName("input", i, d);
    kiln_status st = checkDtype(named, d, t);
    if (st != KILN_OK)
      return st;
    if (!sameRank(d, t))
      return shapeMismatch(named, t, modelShapeString(d));
    uint64_t elements = 1;
    bool tooLarge = false;
    for (size_t axis = 0; axis < d.shape.size(); ++axis) {
      int64_t v = t.dims[axis];
      int64_t symbol;
      if (axis >= d.dimExprs.size() || !d.dimExprs[axis].isSymbol(symbol)) {
        if (v != d.shape[axis])
          return shapeMismatch(named, t, modelShapeString(d));
      } else if (r.symbols[size_t(symbol)] < 0) {
        const std::string &name = h.symbols[size_t(symbol)];
        if (v < 0)
          return setError(KILN_ERROR_TENSOR_MISMATCH,
                          named + ": dim " + std::to_string(axis) + " ('" +
                              name + "') is " + std::to_string(v) +
                              ", not a size");
        r.symbols[size_t(symbol)] = v;
        from[size_t(symbol)] = {i, axis};
      } else if (v != r.symbols[size_t(symbol)]) {
        size_t s = size_t(symbol);
        return setError(
            KILN_ERROR_TENSOR_MISMATCH,
            "input '" + d.name + "' dim " + std::to_string(axis) + " is " +
                std::to_string(v) + " but '" + h.symbols[s] + "' is " +
                std::to_string(r.symbols[s]) + " (from input '" +
                h.inputs[from[s].first].name + "' dim " +
                std::to_string(from[s].second) + ")");
      }
      if (v > 0 && elements > UINT64_MAX / uint64_t(v))
        tooLarge = true;
      elements *= uint64_t(v < 0 ? 0 : v);
    }
    size_t elem = kiln_dtype_size(d.dtype);
    if (tooLarge || elements > UINT64_MAX / elem)
      return setError(KILN_ERROR_TENSOR_MISMATCH,
                      named + ": shape " + shapeString(t.dims, t.rank) +
                          " is too large");
    st = checkData(named, d, t, elements * elem, false);
    if (st != KILN_OK)
      return st;
  }
  return KILN_OK;
}

// What the model's shapes assume of the symbols (e.g. a position table
// sliced by the sequence length must have enough rows).
kiln_status checkConstraints(const ArtifactHeader &h, const RunShapes &r) {
  for (const ShapeConstraint &c : h.constraints) {
    std::string why;
    if (!c.check(r.symbols.data(), r.symbols.size(), why))
      return setError(KILN_ERROR_TENSOR_MISMATCH,
                      "the inputs' shapes break the model's constraint '" +
                          c.text + "' (" + why + " for " +
                          symbolValues(h, r.symbols) + ")");
  }
  return KILN_OK;
}

// The outputs' dims and bytes of a dynamic artifact from the symbols.
kiln_status evaluateOutputs(const ArtifactHeader &h, RunShapes &r) {
  size_t total = 0;
  for (const TensorDesc &d : h.outputs)
    total += d.shape.size();
  r.outputDims.resize(total);
  r.outputStart.resize(h.outputs.size());
  r.outputBytes.resize(h.outputs.size());
  size_t at = 0;
  for (size_t i = 0; i < h.outputs.size(); ++i) {
    const TensorDesc &d = h.outputs[i];
    r.outputStart[i] = at;
    uint64_t elements = 1;
    bool tooLarge = false;
    for (size_t axis = 0; axis < d.shape.size(); ++axis, ++at) {
      int64_t v = d.shape[axis];
      if (axis < d.dimExprs.size() && !d.dimExprs[axis].empty()) {
        std::string why;
        if (!d.dimExprs[axis].evaluate(r.symbols.data(), r.symbols.size(), v,
                                       why))
          return setError(KILN_ERROR_TENSOR_MISMATCH,
                          "output '" + d.name + "': dim " +
                              std::to_string(axis) + " \"" +
                              d.dimExprs[axis].text + "\" " + why + " for " +
                              symbolValues(h, r.symbols));
      }
      r.outputDims[at] = v;
      if (v > 0 && elements > UINT64_MAX / uint64_t(v))
        tooLarge = true;
      elements *= uint64_t(v);
    }
    size_t elem = kiln_dtype_size(d.dtype);
    if (tooLarge || elements > UINT64_MAX / elem ||
        elements * elem > uint64_t(SIZE_MAX) / 2)
      return setError(KILN_ERROR_TENSOR_MISMATCH,
                      "output '" + d.name + "': shape " +
                          shapeString(r.outputDims.data() + r.outputStart[i],
                                      int32_t(d.shape.size())) +
                          " (" + modelShapeString(d) + " for " +
                          symbolValues(h, r.symbols) + ") is too large");
    r.outputBytes[i] = elements * elem;
  }
  return KILN_OK;
}

// Restores the thread's session pointer however kiln_session_run leaves.
struct SessionScope {
  Counters *saved;
  explicit SessionScope(Counters *c) : saved(tSession) { tSession = c; }
  ~SessionScope() { tSession = saved; }
};

} // namespace

extern "C" kiln_status kiln_session_run(kiln_session *session,
                                        const kiln_tensor *inputs,
                                        size_t numInputs, kiln_tensor *outputs,
                                        size_t numOutputs) {
  if (!session)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_session_run: session is NULL");
  const kiln_model *m = session->model;
  const ArtifactHeader &h = m->header;
  if (numInputs != h.inputs.size())
    return setError(KILN_ERROR_TENSOR_MISMATCH,
                    std::to_string(numInputs) + " inputs given, the model has " +
                        std::to_string(h.inputs.size()));
  if (numOutputs != h.outputs.size())
    return setError(KILN_ERROR_TENSOR_MISMATCH,
                    std::to_string(numOutputs) +
                        " outputs given, the model has " +
                        std::to_string(h.outputs.size()));
  if ((numInputs && !inputs) || (numOutputs && !outputs))
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_session_run: inputs/outputs array is NULL");
  // A dynamic artifact's shapes come from this run's inputs: bound,
  // checked and evaluated here, in locals (runs may be concurrent).
  bool dynamic = !h.symbols.empty();
  RunShapes shapes;
  try {
    if (dynamic) {
      kiln_status st = bindInputs(h, inputs, shapes);
      if (st == KILN_OK)
        st = checkConstraints(h, shapes);
      if (st == KILN_OK)
        st = evaluateOutputs(h, shapes);
      if (st != KILN_OK)
        return st;
    }
  } catch (const std::bad_alloc &) {
    return setError(KILN_ERROR_OUT_OF_MEMORY, "kiln_session_run: out of memory");
  }
  auto outputDims = [&](size_t i) {
    return dynamic ? shapes.outputDims.data() + shapes.outputStart[i]
                   : h.outputs[i].shape.data();
  };
  auto outputBytes = [&](size_t i) {
    return dynamic ? shapes.outputBytes[i] : h.outputs[i].bytes;
  };
  for (size_t i = 0; !dynamic && i < numInputs; ++i) {
    const TensorDesc &d = h.inputs[i];
    kiln_status st = checkTensor("input", i, d, inputs[i], d.shape.data(),
                                 d.bytes, h, nullptr);
    if (st != KILN_OK)
      return st;
  }
  // Outputs with data == NULL are the runtime's to allocate: only their
  // data pointer is looked at.
  for (size_t i = 0; i < numOutputs; ++i) {
    if (!outputs[i].data)
      continue;
    kiln_status st =
        checkTensor("output", i, h.outputs[i], outputs[i], outputDims(i),
                    outputBytes(i), h, dynamic ? &shapes.symbols : nullptr);
    if (st != KILN_OK)
      return st;
    // The code writes an aliased output in its input's buffer: given, it
    // must be that buffer (the caller's state updated in place).
    int64_t alias = i < h.outputAliases.size() ? h.outputAliases[i] : -1;
    if (alias >= 0 && outputs[i].data != inputs[size_t(alias)].data)
      return setError(KILN_ERROR_TENSOR_MISMATCH,
                      "output '" + h.outputs[i].name + "' aliases input '" +
                          h.inputs[size_t(alias)].name +
                          "' (the artifact's \"aliases\"): give it the "
                          "input's buffer, or NULL to have it allocated");
  }

  SessionScope scope(session->counters);
  std::vector<void *> buffers;
  std::vector<size_t> allocated;
  try {
    buffers.reserve(numInputs + m->weightPtrs.size() + numOutputs + 1);
    allocated.reserve(numOutputs);
  } catch (const std::bad_alloc &) {
    return setError(KILN_ERROR_OUT_OF_MEMORY, "kiln_session_run: out of memory");
  }
  for (size_t i = 0; i < numInputs; ++i)
    buffers.push_back(inputs[i].data);
  for (void *w : m->weightPtrs)
    buffers.push_back(w);
  for (size_t i = 0; i < numOutputs; ++i) {
    kiln_tensor &t = outputs[i];
    if (!t.data) {
      // The dims live in the same block, below the data: valid until
      // kiln_tensor_release, whatever happens to the session or model.
      const TensorDesc &d = h.outputs[i];
      size_t rank = d.shape.size();
      t.data = allocFor(session->counters, outputBytes(i),
                        KILN_ARTIFACT_ALIGNMENT, rank * sizeof(int64_t));
      if (!t.data) {
        for (size_t j : allocated) {
          freeBlock(outputs[j].data);
          outputs[j].data = nullptr;
        }
        return setError(KILN_ERROR_OUT_OF_MEMORY,
                        "output '" + d.name + "': cannot allocate " +
                            std::to_string(outputBytes(i)) + " bytes");
      }
      int64_t *dims =
          static_cast<int64_t *>(prefixOf(t.data, rank * sizeof(int64_t)));
      if (rank)
        std::memcpy(dims, outputDims(i), rank * sizeof(int64_t));
      t.dtype = d.dtype;
      t.rank = int32_t(rank);
      t.dims = dims;
      allocated.push_back(i);
      // An aliased output allocated here starts as a copy of its input,
      // which the code then updates in place: the caller's input is only
      // read, as without aliasing.
      int64_t alias = i < h.outputAliases.size() ? h.outputAliases[i] : -1;
      if (alias >= 0) {
        if (outputBytes(i))
          std::memcpy(t.data, inputs[size_t(alias)].data, outputBytes(i));
        buffers[size_t(alias)] = t.data;
      }
    }
    buffers.push_back(t.data);
  }
  // kiln_entry reads the symbols' values from the buffer after the outputs.
  if (dynamic)
    buffers.push_back(shapes.symbols.data());

#if KILN_WITH_CUDA_RUNTIME
  if (session->cuda) {
    bool profiled = session->profiling.load(std::memory_order_acquire);
    std::vector<const void *> in(numInputs);
    std::vector<void *> out(numOutputs);
    for (size_t i = 0; i < numInputs; ++i)
      in[i] = inputs[i].data;
    for (size_t i = 0; i < numOutputs; ++i)
      out[i] = outputs[i].data;
    cuda::RunProfile profile;
    auto start = std::chrono::steady_clock::now();
    std::string err = session->cuda->run(in.data(), out.data(),
                                         profiled ? &profile : nullptr);
    auto end = std::chrono::steady_clock::now();
    if (!err.empty()) {
      for (size_t j : allocated) {
        freeBlock(outputs[j].data);
        outputs[j].data = nullptr;
      }
      return setError(KILN_ERROR_DEVICE, m->path + ": " + err);
    }
    if (profiled)
      session->profile->addRun(profile.events, profile.startNs, profile.endNs,
                               threadNumber());
    uint64_t ns = uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - start)
            .count());
    session->lastRunNs.store(ns, std::memory_order_relaxed);
    session->totalRunNs.fetch_add(ns, std::memory_order_relaxed);
    session->numRuns.fetch_add(1, std::memory_order_relaxed);
    return KILN_OK;
  }
#endif
  m->setNumThreads(session->numThreads);
  // Profiled: the hooks record into this thread's recorder, added to the
  // session's profile after the run.
  bool profiling = session->profiling.load(std::memory_order_acquire);
  thread_local Recorder recorder;
  if (profiling) {
    try {
      recorder.open.assign(h.kernels.size(), 0);
      recorder.events.clear();
      recorder.events.reserve(h.kernels.size());
    } catch (const std::bad_alloc &) {
      profiling = false;
    }
  }
  struct RecorderScope {
    Recorder *saved = tRecorder;
    explicit RecorderScope(Recorder *r) { tRecorder = r; }
    ~RecorderScope() { tRecorder = saved; }
  } recorderScope(profiling ? &recorder : nullptr);
  uint64_t runStart = profiling ? monotonicNs() : 0;
  auto start = std::chrono::steady_clock::now();
  m->entry(buffers.data());
  auto end = std::chrono::steady_clock::now();
  if (profiling)
    session->profile->addRun(recorder.events, runStart, monotonicNs(),
                             threadNumber());
  uint64_t ns = uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(end - start)
          .count());
  session->lastRunNs.store(ns, std::memory_order_relaxed);
  session->totalRunNs.fetch_add(ns, std::memory_order_relaxed);
  session->numRuns.fetch_add(1, std::memory_order_relaxed);
  return KILN_OK;
}

extern "C" void kiln_tensor_release(kiln_tensor *tensor) {
  if (!tensor)
    return;
  freeBlock(tensor->data);
  tensor->data = nullptr;
}

extern "C" kiln_status kiln_session_get_stats(const kiln_session *session,
                                              kiln_session_stats *stats) {
  if (!session || !stats)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_session_get_stats: session and stats must not be "
                    "NULL");
  stats->num_runs = session->numRuns.load(std::memory_order_relaxed);
  stats->last_run_ns = session->lastRunNs.load(std::memory_order_relaxed);
  stats->total_run_ns = session->totalRunNs.load(std::memory_order_relaxed);
  stats->peak_bytes = session->counters->peak.load(std::memory_order_relaxed);
  stats->current_bytes =
      session->counters->current.load(std::memory_order_relaxed);
  stats->process_peak_bytes = gProcess.peak.load(std::memory_order_relaxed);
  stats->process_current_bytes =
      gProcess.current.load(std::memory_order_relaxed);
  stats->device_peak_bytes = 0;
  stats->device_current_bytes = 0;
  stats->device_pool_peak_bytes = 0;
#if KILN_WITH_CUDA_RUNTIME
  if (session->cuda) {
    const cuda::DeviceMemory &dm = session->cuda->memory();
    stats->device_peak_bytes = dm.peak();
    stats->device_current_bytes = dm.current();
    stats->device_pool_peak_bytes = dm.poolPeak();
  }
#endif
  return KILN_OK;
}

//===----------------------------------------------------------------------===//
// Kernel profiling
//===----------------------------------------------------------------------===//

extern "C" size_t kiln_model_num_kernels(const kiln_model *m) {
  return m ? m->header.kernels.size() : 0;
}

extern "C" kiln_status kiln_model_kernel_info(const kiln_model *m,
                                              size_t kernel,
                                              kiln_kernel_info *info) {
  if (!m || !info)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_model_kernel_info: model and info must not be NULL");
  if (kernel >= m->header.kernels.size())
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kernel " + std::to_string(kernel) +
                        " out of range (the model has " +
                        std::to_string(m->header.kernels.size()) + ")");
  const KernelDesc &k = m->header.kernels[kernel];
  info->name = k.name.c_str();
  info->category = k.category.c_str();
  info->num_onnx_nodes = k.onnxNodes.size();
  info->onnx_nodes = m->kernelNodes[kernel].data();
  return KILN_OK;
}

extern "C" kiln_status kiln_session_set_profiling(kiln_session *session,
                                                  int enabled) {
  if (!session)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_session_set_profiling: session is NULL");
  kiln_model *m = session->model;
  std::lock_guard<std::mutex> lock(m->profilerMutex);
  bool on = enabled != 0;
  if (session->profiling.load(std::memory_order_relaxed) == on)
    return KILN_OK;
  // The code calls the runtime only while some session of the model
  // profiles: otherwise its hooks are a load and a branch.
  m->profilingSessions += on ? 1 : -1;
  // CUDA code keeps its callback (set at load); the session's flag decides.
  if (m->setProfiler && !m->isCuda)
    m->setProfiler(m->profilingSessions > 0 ? kilnHookProfile : nullptr);
  session->profiling.store(on, std::memory_order_release);
  return KILN_OK;
}

extern "C" kiln_status kiln_session_reset_profile(kiln_session *session) {
  if (!session)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_session_reset_profile: session is NULL");
  session->profile->reset();
  return KILN_OK;
}

extern "C" kiln_status kiln_session_kernel_stats(const kiln_session *session,
                                                 size_t kernel,
                                                 kiln_kernel_stats *stats) {
  if (!session || !stats)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_session_kernel_stats: session and stats must not "
                    "be NULL");
  if (!session->profile->kernelStats(kernel, *stats))
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kernel " + std::to_string(kernel) +
                        " out of range (the model has " +
                        std::to_string(session->model->header.kernels.size()) +
                        ")");
  return KILN_OK;
}

extern "C" kiln_status
kiln_session_profile_summary(const kiln_session *session,
                             kiln_profile_summary *summary) {
  if (!session || !summary)
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_session_profile_summary: session and summary must "
                    "not be NULL");
  session->profile->summary(*summary);
  return KILN_OK;
}

extern "C" kiln_status kiln_session_profile_events(
    const kiln_session *session, size_t first, size_t capacity,
    kiln_profile_event *events, size_t *count) {
  if (!session || !count || (capacity && !events))
    return setError(KILN_ERROR_INVALID_ARGUMENT,
                    "kiln_session_profile_events: session, events and count "
                    "must not be NULL");
  *count = session->profile->events(first, capacity, events);
  return KILN_OK;
}
