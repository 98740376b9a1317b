/*===- kiln_abi_cuda.c - The mgpu* shim linked into CUDA host code --------===*
 *
 * kiln-compile links this archive (libkiln_abi_cuda.a) together with
 * libkiln_abi.a into the host shared object of a CUDA artifact. The host
 * code, lowered by upstream MLIR's gpu-to-llvm, calls the C functions of
 * MLIR's CudaRuntimeWrappers.cpp (mgpuModuleLoad, mgpuLaunchKernel,
 * mgpuMemAlloc, ...) and Kiln's library kernels (kiln_rt_cuda_gemm,
 * kiln_rt_cuda_qgemm, kiln_rt_cuda_conv2d). This shim defines all of them
 * with the signatures upstream declares and forwards each to the function
 * table of include/kiln/cuda_abi.h, which the runtime installs with
 * kiln_abi_set_cuda_runtime() right after loading the code. So the code
 * needs no libcuda at link time and the runtime owns every driver call
 * (its pool, its stream, graph capture, error messages).
 *
 * The version and the hooks (kiln_abi_version, kiln_abi_set_profiler, ...)
 * come from libkiln_abi.a: they are not repeated here.
 *
 * Only kiln_abi_set_cuda_runtime is exported (the runtime looks it up). The
 * mgpu* functions are hidden: the host code in the same shared object
 * binds to them at link time, so another definition in the process (e.g.
 * MLIR's own CUDA runtime wrappers loaded globally, or a second model's
 * shim) can never interpose.
 *
 * Before a table is installed (a global constructor of the code runs at
 * dlopen time), mgpuModuleLoad only records the blob and returns a handle
 * of its own; every other call does nothing and returns NULL. Calls that
 * fail are recorded by the runtime (see cuda_abi.h, "Errors").
 *
 *===----------------------------------------------------------------------===*/
#include "kiln/cuda_abi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KILN_EXPORT __attribute__((visibility("default")))
#define KILN_HIDDEN __attribute__((visibility("hidden")))

static const kiln_cuda_runtime_api *cudaApi = 0;

/* The installed table if it reaches `end` (the end of the member about to
 * be called): a runtime built against an older, shorter table lacks the
 * newer members, and their calls are skipped rather than read past it. */
static const kiln_cuda_runtime_api *apiWith(size_t end) {
  const kiln_cuda_runtime_api *api =
      __atomic_load_n(&cudaApi, __ATOMIC_ACQUIRE);
  if (!api || api->struct_size < end)
    return 0;
  return api;
}

#define KILN_API(member)                                                       \
  apiWith(offsetof(kiln_cuda_runtime_api, member) +                            \
          sizeof(((kiln_cuda_runtime_api *)0)->member))

KILN_EXPORT void kiln_abi_set_cuda_runtime(const kiln_cuda_runtime_api *api) {
  if (api && api->abi_version != KILN_CUDA_ABI_VERSION)
    api = 0; /* a table of another ABI is never called */
  __atomic_store_n(&cudaApi, api, __ATOMIC_RELEASE);
}

/* ---- Modules ------------------------------------------------------------*/

/* The handle mgpuModuleLoad returns: the blob the code embeds. The runtime
 * loads the artifact's "cuda-fatbin" section itself; this record only lets
 * the code's module global be non-NULL and tests see what was embedded. */
struct KilnShimModule {
  const void *data;
  size_t size;
  int32_t jit;
  int32_t loads;
};
static struct KilnShimModule shimModule;

KILN_HIDDEN void *mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  shimModule.data = data;
  shimModule.size = gpuBlobSize;
  shimModule.jit = 0;
  __atomic_add_fetch(&shimModule.loads, 1, __ATOMIC_RELAXED);
  return &shimModule;
}

/* The PTX form (gpu-module-to-binary{format=isa}): recorded the same way;
 * the runtime still loads the "cuda-fatbin" section. */
KILN_HIDDEN void *mgpuModuleLoadJIT(void *data, int optLevel,
                                    size_t assemblySize) {
  (void)optLevel;
  shimModule.data = data;
  shimModule.size = assemblySize;
  shimModule.jit = 1;
  __atomic_add_fetch(&shimModule.loads, 1, __ATOMIC_RELAXED);
  return &shimModule;
}

KILN_HIDDEN void mgpuModuleUnload(void *module) {
  /* The session owns the real module; a global destructor may run after
   * every session is gone. */
  if (module == &shimModule)
    __atomic_sub_fetch(&shimModule.loads, 1, __ATOMIC_RELAXED);
}

/* For tests: what the code's constructor embedded (NULL/0 before). */
KILN_HIDDEN const void *kiln_abi_cuda_loaded_module(size_t *size,
                                                    int32_t *loads) {
  if (size)
    *size = shimModule.size;
  if (loads)
    *loads = __atomic_load_n(&shimModule.loads, __ATOMIC_RELAXED);
  return shimModule.data;
}

KILN_HIDDEN void *mgpuModuleGetFunction(void *module, const char *name) {
  const kiln_cuda_runtime_api *api = KILN_API(module_get_function);
  (void)module;
  return api ? api->module_get_function(api->ctx, name) : 0;
}

KILN_HIDDEN void mgpuLaunchKernel(void *function, intptr_t gridX,
                                  intptr_t gridY, intptr_t gridZ,
                                  intptr_t blockX, intptr_t blockY,
                                  intptr_t blockZ, int32_t smem, void *stream,
                                  void **params, void **extra,
                                  size_t paramsCount) {
  const kiln_cuda_runtime_api *api = KILN_API(launch_kernel);
  if (api)
    api->launch_kernel(api->ctx, function, gridX, gridY, gridZ, blockX, blockY,
                       blockZ, smem, stream, params, extra, paramsCount);
}

/* ---- Streams and events -------------------------------------------------*/

KILN_HIDDEN void *mgpuStreamCreate(void) {
  const kiln_cuda_runtime_api *api = KILN_API(stream_create);
  return api ? api->stream_create(api->ctx) : 0;
}

KILN_HIDDEN void mgpuStreamDestroy(void *stream) {
  const kiln_cuda_runtime_api *api = KILN_API(stream_destroy);
  if (api)
    api->stream_destroy(api->ctx, stream);
}

KILN_HIDDEN void mgpuStreamSynchronize(void *stream) {
  const kiln_cuda_runtime_api *api = KILN_API(stream_synchronize);
  if (api)
    api->stream_synchronize(api->ctx, stream);
}

KILN_HIDDEN void mgpuStreamWaitEvent(void *stream, void *event) {
  const kiln_cuda_runtime_api *api = KILN_API(stream_wait_event);
  if (api)
    api->stream_wait_event(api->ctx, stream, event);
}

KILN_HIDDEN void *mgpuEventCreate(void) {
  const kiln_cuda_runtime_api *api = KILN_API(event_create);
  return api ? api->event_create(api->ctx) : 0;
}

KILN_HIDDEN void mgpuEventDestroy(void *event) {
  const kiln_cuda_runtime_api *api = KILN_API(event_destroy);
  if (api)
    api->event_destroy(api->ctx, event);
}

KILN_HIDDEN void mgpuEventSynchronize(void *event) {
  const kiln_cuda_runtime_api *api = KILN_API(event_synchronize);
  if (api)
    api->event_synchronize(api->ctx, event);
}

KILN_HIDDEN void mgpuEventRecord(void *event, void *stream) {
  const kiln_cuda_runtime_api *api = KILN_API(event_record);
  if (api)
    api->event_record(api->ctx, event, stream);
}

/* ---- Memory -------------------------------------------------------------*/

KILN_HIDDEN void *mgpuMemAlloc(uint64_t sizeBytes, void *stream,
                               bool isHostShared) {
  const kiln_cuda_runtime_api *api = KILN_API(mem_alloc);
  return api ? api->mem_alloc(api->ctx, sizeBytes, stream,
                              isHostShared ? 1 : 0)
             : 0;
}

KILN_HIDDEN void mgpuMemFree(void *ptr, void *stream) {
  const kiln_cuda_runtime_api *api = KILN_API(mem_free);
  if (api)
    api->mem_free(api->ctx, ptr, stream);
}

KILN_HIDDEN void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                            void *stream) {
  const kiln_cuda_runtime_api *api = KILN_API(memcpy);
  if (api)
    api->memcpy(api->ctx, dst, src, sizeBytes, stream);
}

KILN_HIDDEN void mgpuMemset32(void *dst, unsigned int value, size_t count,
                              void *stream) {
  const kiln_cuda_runtime_api *api = KILN_API(memset32);
  if (api)
    api->memset32(api->ctx, dst, value, count, stream);
}

KILN_HIDDEN void mgpuMemset16(void *dst, unsigned short value, size_t count,
                              void *stream) {
  const kiln_cuda_runtime_api *api = KILN_API(memset16);
  if (api)
    api->memset16(api->ctx, dst, value, count, stream);
}

/* The session picks its device (kiln_session_options); the code's own
 * choice, if it makes one, is ignored. */
KILN_HIDDEN void mgpuSetDefaultDevice(int32_t device) { (void)device; }

/* ---- Library kernels ----------------------------------------------------*/

KILN_HIDDEN void kiln_rt_cuda_gemm(void *stream, int32_t dtype,
                                   int32_t epilogue, int64_t batch,
                                   int64_t bBatch, int64_t m, int64_t n,
                                   int64_t k, const void *a, const void *b,
                                   const void *bias, void *c) {
  const kiln_cuda_runtime_api *api = KILN_API(gemm);
  if (api)
    api->gemm(api->ctx, stream, dtype, epilogue, batch, bBatch, m, n, k, a, b,
              bias, c);
}

KILN_HIDDEN void kiln_rt_cuda_qgemm(void *stream, int64_t m, int64_t n,
                                    int64_t k, const void *a, int32_t aFlags,
                                    const void *w, void *c) {
  const kiln_cuda_runtime_api *api = KILN_API(qgemm);
  if (api)
    api->qgemm(api->ctx, stream, m, n, k, a, aFlags, w, c);
}

KILN_HIDDEN void
kiln_rt_cuda_conv2d(void *stream, int32_t dtype, int32_t epilogue, int64_t n,
                    int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                    int64_t s, int64_t p, int64_t q, int64_t padTop,
                    int64_t padLeft, int64_t padBottom, int64_t padRight,
                    int64_t strideH, int64_t strideW, int64_t dilationH,
                    int64_t dilationW, int64_t groups, const void *x,
                    const void *weight, const void *bias, void *y) {
  const kiln_cuda_runtime_api *api = KILN_API(conv2d);
  if (api)
    api->conv2d(api->ctx, stream, dtype, epilogue, n, c, h, w, k, r, s, p, q,
                padTop, padLeft, padBottom, padRight, strideH, strideW,
                dilationH, dilationW, groups, x, weight, bias, y);
}

/* Tensor parallelism: kiln-cuda-collective-calls (lib/Target/CPU/
 * CollectiveCalls.cpp) turns each kiln.all_reduce into a call taking its
 * two buffers as memref<1xT> descriptors (allocated, aligned, offset, size,
 * stride) and the element count; the runtime sums on the session's stream
 * (mgpuStreamCreate returns it). */
static void allReduce(int32_t dtype, size_t width, char *in, int64_t inOff,
                      char *out, int64_t outOff, int64_t count) {
  const kiln_cuda_runtime_api *api = KILN_API(all_reduce);
  if (api)
    api->all_reduce(api->ctx, api->stream_create(api->ctx), dtype,
                    in + (size_t)inOff * width, out + (size_t)outOff * width,
                    count);
}

#define KILN_ALL_REDUCE(SUFFIX, DTYPE, WIDTH)                                  \
  KILN_HIDDEN void kiln_rt_cuda_all_reduce_##SUFFIX(                          \
      void *inAlloc, char *in, int64_t inOff, int64_t inSize,                 \
      int64_t inStride, void *outAlloc, char *out, int64_t outOff,            \
      int64_t outSize, int64_t outStride, int64_t count) {                    \
    (void)inAlloc;                                                            \
    (void)inSize;                                                             \
    (void)inStride;                                                           \
    (void)outAlloc;                                                           \
    (void)outSize;                                                            \
    (void)outStride;                                                          \
    allReduce(DTYPE, WIDTH, in, inOff, out, outOff, count);                   \
  }
/* kiln_dtype codes (kiln/runtime.h): float32 1, float16 10, bfloat16 16. */
KILN_ALL_REDUCE(f32, 1, 4)
KILN_ALL_REDUCE(f16, 10, 2)
KILN_ALL_REDUCE(bf16, 16, 2)
#undef KILN_ALL_REDUCE
