/*===- FakeCuda.c - A stand-in libcuda for tests without a GPU ------------===*
 *
 * The driver entry points runtime/cuda/ resolves, implemented on the host:
 * device memory is malloc'ed, copies are memcpy, "kernels" are host
 * functions looked up by name in a fake fatbin ("FAKEBIN:k0_add,k1_relu"),
 * stream capture records the launches and copies into a list that
 * cuGraphLaunch replays, and events carry a fake clock (1 ms per record).
 * The runtime loads it through $KILN_LIBCUDA, so the CUDA session, run,
 * graph capture, profiling and error paths run end to end here.
 *
 * Tests steer and observe it through fake_cuda_state (dlsym it from the same
 * library): device count, pool support, an error to inject into one call
 * (optionally only for one kernel), and counters.
 *
 * The kernels match test/Runtime/TestCudaModel.c: k0_add(x, w, tmp, n):
 * tmp[i] = x[i] + w[i % 4]; k1_relu(tmp, y, n): y[i] = max(tmp[i], 0), all
 * float, n an int64.
 *
 * A real fatbin (its magic 0xba55ed50) loads too: every name resolves to a
 * kernel that does nothing, so a kiln-compile'd CUDA artifact runs through
 * the whole runtime (allocations, launches, graphs) with outputs left as
 * they are, which checks the calls, not the numbers.
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
  OK = 0,
  ERR_INVALID_VALUE = 1,
  ERR_OUT_OF_MEMORY = 2,
  ERR_NOT_INITIALIZED = 3,
  ERR_NO_DEVICE = 100,
  ERR_INVALID_DEVICE = 101,
  ERR_NO_BINARY_FOR_GPU = 209,
  ERR_NOT_FOUND = 500,
  ERR_LAUNCH_FAILED = 719,
  ERR_CAPTURE_UNSUPPORTED = 900,
};

struct FakeCudaState {
  /* Set by tests. */
  int deviceCount;         /* default 1 */
  int poolsSupported;      /* default 1 */
  int initError;           /* cuInit's result */
  char failCall[64];       /* e.g. "cuLaunchKernel": inject failCode */
  char failKernel[64];     /* ...only for this kernel ("" any) */
  int failCode;
  /* Counters. */
  int initialized;
  int kernelsExecuted;     /* launches run (eagerly or by a replay) */
  int launchesCaptured;    /* launches recorded into a graph */
  int graphsInstantiated;
  int graphLaunches;
  int captures;
  int moduleLoads, moduleUnloads;
  int liveAllocations;     /* device allocations not freed */
  int poolAllocations;     /* cuMemAllocFromPoolAsync calls */
  int plainAllocations;    /* cuMemAlloc calls */
  int eventsRecorded;
  int contextsRetained;
  char lastKernel[64];
  int functionsLoaded;     /* cuFuncLoad calls */
};

EXPORT struct FakeCudaState fake_cuda_state = {.deviceCount = 1,
                                               .poolsSupported = 1};
#define S fake_cuda_state

static int inject(const char *call, const char *kernel) {
  if (!S.failCall[0] || strcmp(S.failCall, call) != 0)
    return 0;
  if (S.failKernel[0] && (!kernel || strcmp(S.failKernel, kernel) != 0))
    return 0;
  return S.failCode ? S.failCode : ERR_LAUNCH_FAILED;
}
#define INJECT(call, kernel)                                                   \
  do {                                                                         \
    int e_ = inject(call, kernel);                                             \
    if (e_)                                                                    \
      return e_;                                                               \
  } while (0)

/* ---- Errors and devices -------------------------------------------------*/

static const struct {
  int code;
  const char *name, *text;
} errors[] = {
    {OK, "CUDA_SUCCESS", "no error"},
    {ERR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {ERR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {ERR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {ERR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
     "no CUDA-capable device is detected"},
    {ERR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {ERR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {ERR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {ERR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED",
     "unspecified launch failure"},
    {ERR_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
};

EXPORT CUresult cuGetErrorName(CUresult e, const char **s) {
  for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); ++i)
    if (errors[i].code == e) {
      *s = errors[i].name;
      return OK;
    }
  *s = NULL;
  return ERR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **s) {
  for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); ++i)
    if (errors[i].code == e) {
      *s = errors[i].text;
      return OK;
    }
  *s = NULL;
  return ERR_INVALID_VALUE;
}

EXPORT CUresult cuInit(unsigned flags) {
  (void)flags;
  if (S.initError)
    return S.initError;
  S.initialized = 1;
  return OK;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return OK;
}

EXPORT CUresult cuDeviceGetCount(int *n) {
  *n = S.deviceCount;
  return OK;
}

EXPORT CUresult cuDeviceGet(int *d, int ordinal) {
  if (ordinal < 0 || ordinal >= S.deviceCount)
    return ERR_INVALID_DEVICE;
  *d = ordinal;
  return OK;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, int dev) {
  snprintf(name, (size_t)len, "Fake GPU %d", dev);
  return OK;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  (void)dev;
  switch (attr) {
  case 75: *v = 8; return OK;                 /* compute capability major */
  case 76: *v = 0; return OK;                 /* minor */
  case 97: *v = 163 * 1024; return OK;        /* max shared memory opt-in */
  case 115: *v = S.poolsSupported; return OK; /* memory pools */
  default: *v = 0; return OK;
  }
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  (void)dev;
  *bytes = (size_t)80 << 30;
  return OK;
}

static char contexts[8];

EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  INJECT("cuDevicePrimaryCtxRetain", NULL);
  *ctx = &contexts[dev & 7];
  ++S.contextsRetained;
  return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  (void)dev;
  --S.contextsRetained;
  return OK;
}

EXPORT CUresult cuCtxSetCurrent(void *ctx) {
  (void)ctx;
  return OK;
}

/* ---- Modules and kernels ------------------------------------------------*/

typedef void (*KernelFn)(void **params);

static void kAdd(void **p) {
  const float *x = *(float **)p[0], *w = *(float **)p[1];
  float *tmp = *(float **)p[2];
  int64_t n = *(int64_t *)p[3];
  for (int64_t i = 0; i < n; ++i)
    tmp[i] = x[i] + w[i % 4];
}

static void kRelu(void **p) {
  const float *tmp = *(float **)p[0];
  float *y = *(float **)p[1];
  int64_t n = *(int64_t *)p[2];
  for (int64_t i = 0; i < n; ++i)
    y[i] = tmp[i] > 0 ? tmp[i] : 0;
}

struct Function {
  const char *name;
  KernelFn fn; /* NULL: does nothing (a real fatbin's kernel) */
  int numParams;
};
static struct Function functions[] = {{"k0_add", kAdd, 4},
                                      {"k1_relu", kRelu, 3}};

struct Module {
  char names[256];
  int real; /* a real fatbin: any name resolves to a no-op kernel */
  struct Function *noops;
  size_t numNoops;
};

EXPORT CUresult cuModuleLoadData(void **module, const void *image) {
  INJECT("cuModuleLoadData", NULL);
  static const unsigned char fatbinMagic[4] = {0x50, 0xed, 0x55, 0xba};
  int real = memcmp(image, fatbinMagic, 4) == 0;
  if (!real && strncmp((const char *)image, "FAKEBIN:", 8) != 0)
    return ERR_NO_BINARY_FOR_GPU;
  struct Module *m = calloc(1, sizeof(*m));
  m->real = real;
  if (!real)
    snprintf(m->names, sizeof(m->names), ",%s,", (const char *)image + 8);
  *module = m;
  ++S.moduleLoads;
  return OK;
}

EXPORT CUresult cuModuleUnload(void *module) {
  struct Module *m = module;
  for (size_t i = 0; i < m->numNoops; ++i)
    free((void *)(uintptr_t)m->noops[i].name);
  free(m->noops);
  free(module);
  ++S.moduleUnloads;
  return OK;
}

EXPORT CUresult cuModuleGetFunction(void **f, void *module, const char *name) {
  struct Module *m = module;
  if (m->real) {
    for (size_t i = 0; i < m->numNoops; ++i)
      if (strcmp(m->noops[i].name, name) == 0) {
        *f = &m->noops[i];
        return OK;
      }
    /* Handles stay valid: the array is sized once, generously. */
    if (!m->noops)
      m->noops = calloc(4096, sizeof(struct Function));
    if (m->numNoops == 4096)
      return ERR_OUT_OF_MEMORY;
    struct Function *fn = &m->noops[m->numNoops++];
    fn->name = strdup(name);
    *f = fn;
    return OK;
  }
  char key[80];
  snprintf(key, sizeof(key), ",%s,", name);
  if (!strstr(m->names, key))
    return ERR_NOT_FOUND;
  for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); ++i)
    if (strcmp(functions[i].name, name) == 0) {
      *f = &functions[i];
      return OK;
    }
  return ERR_NOT_FOUND;
}

EXPORT CUresult cuFuncLoad(void *f) {
  (void)f;
  INJECT("cuFuncLoad", ((struct Function *)f)->name);
  ++S.functionsLoaded;
  return OK;
}

EXPORT CUresult cuFuncSetAttribute(void *f, int attr, int value) {
  (void)f, (void)attr, (void)value;
  return OK;
}

/* ---- Streams, capture, graphs -------------------------------------------*/

enum OpKind { OP_KERNEL, OP_COPY, OP_SET32, OP_SET16 };
struct Op {
  enum OpKind kind;
  struct Function *f;
  uint64_t args[8];
  void *dst;
  const void *src;
  size_t n;
  uint32_t value;
};

struct Graph {
  struct Op *ops;
  size_t numOps, capOps;
  void **deferredFrees;
  size_t numFrees, capFrees;
  /* Pool allocations made while capturing and not freed in the capture. A
   * real driver allocates a graph's memory when it first launches, so a
   * graph destroyed without being instantiated never held any: the fake,
   * which allocates at once, frees these then. */
  void **captured;
  size_t numCaptured, capCaptured;
  int instantiated;
};

static void push(void ***list, size_t *num, size_t *cap, void *p) {
  if (*num == *cap) {
    *cap = *cap ? 2 * *cap : 8;
    *list = realloc(*list, *cap * sizeof(void *));
  }
  (*list)[(*num)++] = p;
}

struct Stream {
  int capturing;
  struct Graph *graph;
};

EXPORT CUresult cuStreamCreate(void **stream, unsigned flags) {
  (void)flags;
  INJECT("cuStreamCreate", NULL);
  *stream = calloc(1, sizeof(struct Stream));
  return OK;
}

EXPORT CUresult cuStreamDestroy_v2(void *stream) {
  free(stream);
  return OK;
}

EXPORT CUresult cuStreamSynchronize(void *stream) {
  struct Stream *s = stream;
  if (s && s->capturing)
    return ERR_CAPTURE_UNSUPPORTED;
  INJECT("cuStreamSynchronize", NULL);
  return OK;
}

EXPORT CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  (void)stream, (void)event, (void)flags;
  return OK;
}

EXPORT CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
  (void)mode;
  struct Stream *s = stream;
  INJECT("cuStreamBeginCapture", NULL);
  s->capturing = 1;
  s->graph = calloc(1, sizeof(struct Graph));
  ++S.captures;
  return OK;
}

EXPORT CUresult cuStreamEndCapture(void *stream, void **graph) {
  struct Stream *s = stream;
  if (!s->capturing)
    return ERR_INVALID_VALUE;
  s->capturing = 0;
  *graph = s->graph;
  s->graph = NULL;
  INJECT("cuStreamEndCapture", NULL);
  return OK;
}

static void run(struct Op *op) {
  switch (op->kind) {
  case OP_KERNEL: {
    void *params[8];
    for (int i = 0; i < op->f->numParams; ++i)
      params[i] = &op->args[i];
    if (op->f->fn)
      op->f->fn(params);
    ++S.kernelsExecuted;
    snprintf(S.lastKernel, sizeof(S.lastKernel), "%s", op->f->name);
    break;
  }
  case OP_COPY: memcpy(op->dst, op->src, op->n); break;
  case OP_SET32:
    for (size_t i = 0; i < op->n; ++i)
      ((uint32_t *)op->dst)[i] = op->value;
    break;
  case OP_SET16:
    for (size_t i = 0; i < op->n; ++i)
      ((uint16_t *)op->dst)[i] = (uint16_t)op->value;
    break;
  }
}

/* Runs an operation, or records it while the stream captures. */
static void submit(struct Stream *s, struct Op *op) {
  if (s && s->capturing) {
    struct Graph *g = s->graph;
    if (g->numOps == g->capOps) {
      g->capOps = g->capOps ? 2 * g->capOps : 16;
      g->ops = realloc(g->ops, g->capOps * sizeof(struct Op));
    }
    g->ops[g->numOps++] = *op;
    if (op->kind == OP_KERNEL)
      ++S.launchesCaptured;
    return;
  }
  run(op);
}

EXPORT CUresult cuGraphInstantiateWithFlags(void **exec, void *graph,
                                            unsigned long long flags) {
  (void)flags;
  INJECT("cuGraphInstantiate", NULL);
  *exec = graph;
  ((struct Graph *)graph)->instantiated = 1;
  ++S.graphsInstantiated;
  return OK;
}

EXPORT CUresult cuGraphLaunch(void *exec, void *stream) {
  (void)stream;
  struct Graph *g = exec;
  INJECT("cuGraphLaunch", NULL);
  for (size_t i = 0; i < g->numOps; ++i)
    run(&g->ops[i]);
  ++S.graphLaunches;
  return OK;
}

EXPORT CUresult cuGraphExecDestroy(void *exec) {
  (void)exec; /* the graph itself, freed by cuGraphDestroy */
  return OK;
}

EXPORT CUresult cuGraphDestroy(void *graph) {
  struct Graph *g = graph;
  for (size_t i = 0; i < g->numFrees; ++i) {
    free(g->deferredFrees[i]);
    --S.liveAllocations;
  }
  for (size_t i = 0; !g->instantiated && i < g->numCaptured; ++i) {
    free(g->captured[i]);
    --S.liveAllocations;
  }
  free(g->deferredFrees);
  free(g->captured);
  free(g->ops);
  free(g);
  return OK;
}

EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz,
                               unsigned smem, void *stream, void **params,
                               void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem,
      (void)extra;
  struct Function *fn = f;
  INJECT("cuLaunchKernel", fn->name);
  struct Op op = {.kind = OP_KERNEL, .f = fn};
  for (int i = 0; i < fn->numParams; ++i)
    memcpy(&op.args[i], params[i], 8);
  submit(stream, &op);
  return OK;
}

/* ---- Events -------------------------------------------------------------*/

struct Event {
  float ms;
};
static float fakeClockMs = 0;

EXPORT CUresult cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  *e = calloc(1, sizeof(struct Event));
  return OK;
}

EXPORT CUresult cuEventDestroy_v2(void *e) {
  free(e);
  return OK;
}

EXPORT CUresult cuEventRecord(void *e, void *stream) {
  (void)stream;
  INJECT("cuEventRecord", NULL);
  fakeClockMs += 1.0f;
  ((struct Event *)e)->ms = fakeClockMs;
  ++S.eventsRecorded;
  return OK;
}

EXPORT CUresult cuEventSynchronize(void *e) {
  (void)e;
  return OK;
}

EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *start, void *end) {
  *ms = ((struct Event *)end)->ms - ((struct Event *)start)->ms;
  return OK;
}

/* ---- Memory -------------------------------------------------------------*/

static CUresult allocate(CUdeviceptr *p, size_t n) {
  void *m = malloc(n ? n : 1);
  if (!m)
    return ERR_OUT_OF_MEMORY;
  memset(m, 0xcd, n); /* device memory starts as garbage */
  *p = (CUdeviceptr)(uintptr_t)m;
  ++S.liveAllocations;
  return OK;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  INJECT("cuMemAlloc", NULL);
  ++S.plainAllocations;
  return allocate(p, n);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  --S.liveAllocations;
  return OK;
}

EXPORT CUresult cuMemPoolCreate(void **pool, const void *props) {
  (void)props;
  static char thePool;
  *pool = &thePool;
  return OK;
}

EXPORT CUresult cuMemPoolDestroy(void *pool) {
  (void)pool;
  return OK;
}

EXPORT CUresult cuMemPoolSetAttribute(void *pool, int attr, void *value) {
  (void)pool, (void)attr, (void)value;
  return OK;
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, void *pool,
                                        void *stream) {
  (void)pool;
  INJECT("cuMemAllocFromPoolAsync", NULL);
  ++S.poolAllocations;
  CUresult r = allocate(p, n);
  struct Stream *s = stream;
  if (r == OK && s && s->capturing)
    push(&s->graph->captured, &s->graph->numCaptured,
         &s->graph->capCaptured, (void *)(uintptr_t)*p);
  return r;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, void *stream) {
  struct Stream *s = stream;
  if (s && s->capturing) {
    /* A graph's allocation: it lives as long as the graph. */
    struct Graph *g = s->graph;
    void *m = (void *)(uintptr_t)p;
    for (size_t i = 0; i < g->numCaptured; ++i)
      if (g->captured[i] == m) {
        g->captured[i] = g->captured[--g->numCaptured];
        break;
      }
    push(&g->deferredFrees, &g->numFrees, &g->capFrees, m);
    return OK;
  }
  return cuMemFree_v2(p);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  INJECT("cuMemcpyHtoD", NULL);
  memcpy((void *)(uintptr_t)dst, src, n);
  return OK;
}

static CUresult copyAsync(void *dst, const void *src, size_t n, void *stream) {
  struct Op op = {.kind = OP_COPY, .dst = dst, .src = src, .n = n};
  submit(stream, &op);
  return OK;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src,
                                     size_t n, void *stream) {
  INJECT("cuMemcpyHtoDAsync", NULL);
  return copyAsync((void *)(uintptr_t)dst, src, n, stream);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n,
                                     void *stream) {
  INJECT("cuMemcpyDtoHAsync", NULL);
  return copyAsync(dst, (const void *)(uintptr_t)src, n, stream);
}

EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n,
                              void *stream) {
  INJECT("cuMemcpyAsync", NULL);
  return copyAsync((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n,
                   stream);
}

EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned v, size_t n,
                                 void *stream) {
  struct Op op = {
      .kind = OP_SET32, .dst = (void *)(uintptr_t)dst, .n = n, .value = v};
  submit(stream, &op);
  return OK;
}

EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n,
                                 void *stream) {
  struct Op op = {
      .kind = OP_SET16, .dst = (void *)(uintptr_t)dst, .n = n, .value = v};
  submit(stream, &op);
  return OK;
}
