/*===- TestCudaShim.c - The mgpu* shim forwards to the installed table ----===*
 *
 * Links libkiln_abi_cuda.a, installs a recording table and calls every
 * function the shim defines, checking that each call arrives at the right
 * table entry with its arguments; also what happens before a table is
 * installed (mgpuModuleLoad records, the rest do nothing), with a table of
 * another ABI version (ignored) and with shorter, older tables (the
 * missing entries, gemm, qgemm or conv2d, are skipped). Exit status 0 when
 * all checks pass.
 *
 *===----------------------------------------------------------------------===*/
#include "kiln/cuda_abi.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The shim's functions (upstream's signatures). */
void kiln_abi_set_cuda_runtime(const kiln_cuda_runtime_api *api);
const void *kiln_abi_cuda_loaded_module(size_t *size, int32_t *loads);
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleLoadJIT(void *data, int optLevel, size_t size);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *f, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      void *stream, void **params, void **extra, size_t n);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate(void);
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
void *mgpuMemAlloc(uint64_t size, void *stream, bool hostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t size, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void *stream);
void mgpuSetDefaultDevice(int32_t device);
void kiln_rt_cuda_gemm(void *stream, int32_t dtype, int32_t epilogue,
                       int64_t batch, int64_t bBatch, int64_t m, int64_t n,
                       int64_t k, const void *a, const void *b,
                       const void *bias, void *c);
void kiln_rt_cuda_qgemm(void *stream, int64_t m, int64_t n, int64_t k,
                        const void *a, int32_t aFlags, const void *w,
                        void *c);
void kiln_rt_cuda_conv2d(void *stream, int32_t dtype, int32_t epilogue,
                         int64_t n, int64_t c, int64_t h, int64_t w,
                         int64_t k, int64_t r, int64_t s, int64_t p,
                         int64_t q, int64_t padTop, int64_t padLeft,
                         int64_t padBottom, int64_t padRight, int64_t strideH,
                         int64_t strideW, int64_t dilationH,
                         int64_t dilationW, int64_t groups, const void *x,
                         const void *weight, const void *bias, void *y);

static int failures = 0;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,        \
              #cond);                                                          \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* What the recording table saw last. */
static struct {
  int calls;
  const char *last;
  void *ctx;
  const char *name;
  const void *p0, *p1, *p2;
  intptr_t dims[6];
  int64_t sizes[20];
  int32_t i0, i1;
  uint64_t u0;
  size_t n0;
  const void *params, *extra;
} rec;

#define ENTER(fn)                                                              \
  do {                                                                         \
    ++rec.calls;                                                               \
    rec.last = fn;                                                             \
    rec.ctx = ctx;                                                             \
  } while (0)

static char theFunction, theStream, theEvent, theAlloc;

static void *getFunction(void *ctx, const char *name) {
  ENTER("module_get_function");
  rec.name = name;
  return &theFunction;
}
static void launch(void *ctx, void *f, intptr_t gx, intptr_t gy, intptr_t gz,
                   intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                   void *stream, void **params, void **extra, size_t n) {
  ENTER("launch_kernel");
  rec.p0 = f;
  rec.p1 = stream;
  rec.dims[0] = gx, rec.dims[1] = gy, rec.dims[2] = gz;
  rec.dims[3] = bx, rec.dims[4] = by, rec.dims[5] = bz;
  rec.i0 = smem;
  rec.params = params;
  rec.extra = extra;
  rec.n0 = n;
}
static void *streamCreate(void *ctx) {
  ENTER("stream_create");
  return &theStream;
}
static void streamDestroy(void *ctx, void *s) {
  ENTER("stream_destroy");
  rec.p0 = s;
}
static void streamSync(void *ctx, void *s) {
  ENTER("stream_synchronize");
  rec.p0 = s;
}
static void streamWait(void *ctx, void *s, void *e) {
  ENTER("stream_wait_event");
  rec.p0 = s;
  rec.p1 = e;
}
static void *eventCreate(void *ctx) {
  ENTER("event_create");
  return &theEvent;
}
static void eventDestroy(void *ctx, void *e) {
  ENTER("event_destroy");
  rec.p0 = e;
}
static void eventSync(void *ctx, void *e) {
  ENTER("event_synchronize");
  rec.p0 = e;
}
static void eventRecord(void *ctx, void *e, void *s) {
  ENTER("event_record");
  rec.p0 = e;
  rec.p1 = s;
}
static void *memAlloc(void *ctx, uint64_t size, void *s, int32_t shared) {
  ENTER("mem_alloc");
  rec.u0 = size;
  rec.p0 = s;
  rec.i0 = shared;
  return &theAlloc;
}
static void memFree(void *ctx, void *p, void *s) {
  ENTER("mem_free");
  rec.p0 = p;
  rec.p1 = s;
}
static void memCopy(void *ctx, void *dst, const void *src, size_t n,
                    void *s) {
  ENTER("memcpy");
  rec.p0 = dst;
  rec.p1 = src;
  rec.n0 = n;
  rec.p2 = s;
}
static void memSet32(void *ctx, void *dst, uint32_t v, size_t n, void *s) {
  ENTER("memset32");
  rec.p0 = dst;
  rec.u0 = v;
  rec.n0 = n;
  rec.p1 = s;
}
static void memSet16(void *ctx, void *dst, uint16_t v, size_t n, void *s) {
  ENTER("memset16");
  rec.p0 = dst;
  rec.u0 = v;
  rec.n0 = n;
  rec.p1 = s;
}
static void gemm(void *ctx, void *s, int32_t dtype, int32_t epi, int64_t batch,
                 int64_t bBatch, int64_t m, int64_t n, int64_t k,
                 const void *a, const void *b, const void *bias, void *c) {
  ENTER("gemm");
  rec.p0 = s;
  rec.i0 = dtype;
  rec.i1 = epi;
  rec.sizes[0] = batch, rec.sizes[1] = bBatch, rec.sizes[2] = m;
  rec.sizes[3] = n, rec.sizes[4] = k;
  rec.params = a;
  rec.extra = b;
  rec.p1 = bias;
  rec.p2 = c;
}

static void qgemm(void *ctx, void *s, int64_t m, int64_t n, int64_t k,
                  const void *a, int32_t aFlags, const void *w, void *c) {
  ENTER("qgemm");
  rec.p0 = s;
  rec.i0 = aFlags;
  rec.sizes[0] = m, rec.sizes[1] = n, rec.sizes[2] = k;
  rec.params = a;
  rec.extra = w;
  rec.p2 = c;
}

static void conv2d(void *ctx, void *st, int32_t dtype, int32_t epi,
                   int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                   int64_t r, int64_t s, int64_t p, int64_t q, int64_t pt,
                   int64_t pl, int64_t pb, int64_t pr, int64_t sh, int64_t sw,
                   int64_t dh, int64_t dw, int64_t groups, const void *x,
                   const void *wt, const void *bias, void *y) {
  int64_t v[19] = {n, c, h, w, k, r, s, p, q, pt,
                   pl, pb, pr, sh, sw, dh, dw, groups, 0};
  ENTER("conv2d");
  rec.p0 = st;
  rec.i0 = dtype;
  rec.i1 = epi;
  memcpy(rec.sizes, v, sizeof(v));
  rec.params = x;
  rec.extra = wt;
  rec.p1 = bias;
  rec.p2 = y;
}

static int ctxToken;

static kiln_cuda_runtime_api makeTable(void) {
  kiln_cuda_runtime_api t;
  memset(&t, 0, sizeof(t));
  t.struct_size = sizeof(t);
  t.abi_version = KILN_CUDA_ABI_VERSION;
  t.ctx = &ctxToken;
  t.module_get_function = getFunction;
  t.launch_kernel = launch;
  t.stream_create = streamCreate;
  t.stream_destroy = streamDestroy;
  t.stream_synchronize = streamSync;
  t.stream_wait_event = streamWait;
  t.event_create = eventCreate;
  t.event_destroy = eventDestroy;
  t.event_synchronize = eventSync;
  t.event_record = eventRecord;
  t.mem_alloc = memAlloc;
  t.mem_free = memFree;
  t.memcpy = memCopy;
  t.memset32 = memSet32;
  t.memset16 = memSet16;
  t.gemm = gemm;
  t.qgemm = qgemm;
  t.conv2d = conv2d;
  return t;
}

#define LAST_IS(fn) (rec.last && strcmp(rec.last, fn) == 0 && rec.ctx == &ctxToken)

int main(void) {
  static char blob[] = "fatbin bytes";
  char x, y, z;
  void *params[2] = {&x, &y};

  /* Before a table: the module load is recorded, the rest is inert. */
  void *module = mgpuModuleLoad(blob, sizeof(blob));
  CHECK(module != NULL);
  size_t size = 0;
  int32_t loads = 0;
  CHECK(kiln_abi_cuda_loaded_module(&size, &loads) == blob);
  CHECK(size == sizeof(blob) && loads == 1);
  CHECK(mgpuModuleGetFunction(module, "k0") == NULL);
  CHECK(mgpuStreamCreate() == NULL);
  CHECK(mgpuMemAlloc(16, NULL, false) == NULL);
  mgpuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL, 2);
  CHECK(rec.calls == 0);

  /* A table of another ABI version is never called. */
  kiln_cuda_runtime_api table = makeTable();
  kiln_cuda_runtime_api other = table;
  other.abi_version = KILN_CUDA_ABI_VERSION + 1;
  kiln_abi_set_cuda_runtime(&other);
  CHECK(mgpuStreamCreate() == NULL && rec.calls == 0);

  kiln_abi_set_cuda_runtime(&table);
  CHECK(mgpuModuleGetFunction(module, "k3_matmul_add") == &theFunction);
  CHECK(LAST_IS("module_get_function") &&
        strcmp(rec.name, "k3_matmul_add") == 0);

  mgpuLaunchKernel(&theFunction, 7, 8, 9, 32, 4, 2, 49152, &theStream, params,
                   (void **)&z, 2);
  CHECK(LAST_IS("launch_kernel") && rec.p0 == &theFunction &&
        rec.p1 == &theStream);
  CHECK(rec.dims[0] == 7 && rec.dims[1] == 8 && rec.dims[2] == 9 &&
        rec.dims[3] == 32 && rec.dims[4] == 4 && rec.dims[5] == 2);
  CHECK(rec.i0 == 49152 && rec.params == (const void *)params &&
        rec.extra == (const void *)&z && rec.n0 == 2);

  CHECK(mgpuStreamCreate() == &theStream && LAST_IS("stream_create"));
  mgpuStreamSynchronize(&theStream);
  CHECK(LAST_IS("stream_synchronize") && rec.p0 == &theStream);
  mgpuStreamWaitEvent(&theStream, &theEvent);
  CHECK(LAST_IS("stream_wait_event") && rec.p0 == &theStream &&
        rec.p1 == &theEvent);
  mgpuStreamDestroy(&theStream);
  CHECK(LAST_IS("stream_destroy") && rec.p0 == &theStream);
  CHECK(mgpuEventCreate() == &theEvent && LAST_IS("event_create"));
  mgpuEventRecord(&theEvent, &theStream);
  CHECK(LAST_IS("event_record") && rec.p0 == &theEvent &&
        rec.p1 == &theStream);
  mgpuEventSynchronize(&theEvent);
  CHECK(LAST_IS("event_synchronize") && rec.p0 == &theEvent);
  mgpuEventDestroy(&theEvent);
  CHECK(LAST_IS("event_destroy") && rec.p0 == &theEvent);

  CHECK(mgpuMemAlloc(1ull << 33, &theStream, true) == &theAlloc);
  CHECK(LAST_IS("mem_alloc") && rec.u0 == (1ull << 33) &&
        rec.p0 == &theStream && rec.i0 == 1);
  mgpuMemAlloc(64, &theStream, false);
  CHECK(rec.i0 == 0);
  mgpuMemFree(&theAlloc, &theStream);
  CHECK(LAST_IS("mem_free") && rec.p0 == &theAlloc && rec.p1 == &theStream);
  mgpuMemcpy(&x, &y, 12345, &theStream);
  CHECK(LAST_IS("memcpy") && rec.p0 == &x && rec.p1 == &y &&
        rec.n0 == 12345 && rec.p2 == &theStream);
  mgpuMemset32(&x, 0xdeadbeefu, 77, &theStream);
  CHECK(LAST_IS("memset32") && rec.p0 == &x && rec.u0 == 0xdeadbeefu &&
        rec.n0 == 77 && rec.p1 == &theStream);
  mgpuMemset16(&y, 0xbeef, 5, &theStream);
  CHECK(LAST_IS("memset16") && rec.p0 == &y && rec.u0 == 0xbeef &&
        rec.n0 == 5 && rec.p1 == &theStream);

  kiln_rt_cuda_gemm(&theStream, 10, KILN_CUDA_EPILOGUE_GELU, 4, 1, 128, 256,
                    64, &x, &y, &z, &theAlloc);
  CHECK(LAST_IS("gemm") && rec.p0 == &theStream && rec.i0 == 10 &&
        rec.i1 == KILN_CUDA_EPILOGUE_GELU);
  CHECK(rec.sizes[0] == 4 && rec.sizes[1] == 1 && rec.sizes[2] == 128 &&
        rec.sizes[3] == 256 && rec.sizes[4] == 64);
  CHECK(rec.params == &x && rec.extra == &y &&
        rec.p1 == &z && rec.p2 == &theAlloc);

  kiln_rt_cuda_qgemm(&theStream, 3, 8, 12, &x, 7, &y, &z);
  CHECK(LAST_IS("qgemm") && rec.p0 == &theStream && rec.i0 == 7);
  CHECK(rec.sizes[0] == 3 && rec.sizes[1] == 8 && rec.sizes[2] == 12);
  CHECK(rec.params == &x && rec.extra == &y && rec.p2 == &z);

  /* Every argument of the convolution in its place (all distinct). */
  kiln_rt_cuda_conv2d(&theStream, 16, KILN_CUDA_EPILOGUE_RELU, 2, 3, 4, 5, 6,
                      7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, &x, &y,
                      &z, &theAlloc);
  CHECK(LAST_IS("conv2d") && rec.p0 == &theStream && rec.i0 == 16 &&
        rec.i1 == KILN_CUDA_EPILOGUE_RELU);
  for (int i = 0; i < 18; ++i)
    CHECK(rec.sizes[i] == i + 2);
  CHECK(rec.params == &x && rec.extra == &y && rec.p1 == &z &&
        rec.p2 == &theAlloc);

  /* The session picks the device: no call. */
  int before = rec.calls;
  mgpuSetDefaultDevice(3);
  CHECK(rec.calls == before);

  /* An older, shorter table (up to memset16): gemm is skipped. */
  kiln_cuda_runtime_api old = table;
  old.struct_size = (uint32_t)offsetof(kiln_cuda_runtime_api, gemm);
  kiln_abi_set_cuda_runtime(&old);
  before = rec.calls;
  kiln_rt_cuda_gemm(&theStream, 1, 0, 1, 1, 1, 1, 1, &x, &y, NULL, &z);
  CHECK(rec.calls == before);
  mgpuMemset16(&y, 1, 1, &theStream);
  CHECK(rec.calls == before + 1 && LAST_IS("memset16"));

  /* A table that ends with gemm (before qgemm was appended): qgemm is
   * skipped, gemm still reaches it. */
  old.struct_size = (uint32_t)offsetof(kiln_cuda_runtime_api, qgemm);
  kiln_abi_set_cuda_runtime(&old);
  before = rec.calls;
  kiln_rt_cuda_qgemm(&theStream, 4, 4, 4, &x, 0, &y, &z);
  CHECK(rec.calls == before);
  kiln_rt_cuda_gemm(&theStream, 1, 0, 1, 1, 1, 1, 1, &x, &y, NULL, &z);
  CHECK(rec.calls == before + 1 && LAST_IS("gemm"));

  /* A table that ends with qgemm (a runtime before conv2d): qgemm is
   * called, conv2d skipped. */
  old.struct_size = (uint32_t)offsetof(kiln_cuda_runtime_api, conv2d);
  kiln_abi_set_cuda_runtime(&old);
  before = rec.calls;
  kiln_rt_cuda_conv2d(&theStream, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
                      1, 1, 1, 1, 1, &x, &y, NULL, &z);
  CHECK(rec.calls == before);
  kiln_rt_cuda_qgemm(&theStream, 4, 4, 4, &x, 0, &y, &z);
  CHECK(rec.calls == before + 1 && LAST_IS("qgemm"));

  /* Uninstalled: inert again; the module handle stays valid. */
  kiln_abi_set_cuda_runtime(NULL);
  before = rec.calls;
  CHECK(mgpuModuleGetFunction(module, "k0") == NULL && rec.calls == before);
  mgpuModuleUnload(module);
  CHECK(kiln_abi_cuda_loaded_module(NULL, &loads) == blob && loads == 0);
  CHECK(mgpuModuleLoadJIT(blob, 3, sizeof(blob)) == module);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("cuda shim: all checks passed\n");
  return 0;
}
