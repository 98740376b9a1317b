/*===- TestCudaModel.c - A stand-in for the host code of a CUDA model -----===*
 *
 * Built as kiln-compile builds a CUDA artifact's code section (libkiln_abi
 * and libkiln_abi_cuda linked in whole), and calling the mgpu* functions as
 * the host code upstream's gpu-to-llvm lowers does: the module is loaded by
 * a global constructor, each launch fetches its function by name, and the
 * run allocates an intermediate from the stream, synchronizes and destroys
 * its stream. Between the profiling hooks like compiled code.
 *
 * The model: x float32 [2, 4], weight w float32 [4] -> y float32 [2, 4],
 * y = relu(x + w), as k0_add then k1_relu (FakeCuda.c runs them on the
 * host). KILN_TEST_CUDA_GEMM adds a float16 call to kiln_rt_cuda_gemm
 * after the kernels, for the library path's errors (the stand-in cuBLASLt
 * refuses float16). KILN_TEST_CUDA_QGEMM adds a kiln_rt_cuda_qgemm call
 * instead, which overwrites y: C int32 [2, 4] = A [2, 4] x W [4, 4]^T with
 * A the first 8 bytes of x and W the 16 bytes of w, read as int8 (the
 * stand-in cuBLASLt computes it), checking the call's path through the
 * shim, the session and cuBLASLt with numbers. KILN_TEST_CUDA_CONV makes
 * k1_relu work in place and y a library convolution of it
 * (kiln_rt_cuda_conv2d, kernel 2): relu(x + w) as x' [2, 1, 2, 2] (NCHW),
 * w as the filter [1, 1, 2, 2] and w[0] as the bias, pads 1, strides 2,
 * ReLU epilogue -> y [2, 1, 2, 2]. KILN_TEST_CUDA_ALLREDUCE sums y over
 * the ranks of a tensor-parallel group afterwards (kiln_rt_cuda_all_reduce,
 * NCCL; TestCudaAllReduce.cpp runs it under mpirun on FakeNccl.c).
 *
 *===----------------------------------------------------------------------===*/
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

void *mgpuModuleLoad(void *data, size_t size);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *f, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      void *stream, void **params, void **extra, size_t n);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuMemAlloc(uint64_t size, void *stream, bool hostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
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
void kiln_rt_cuda_all_reduce_f32(void *inAlloc, void *in, int64_t inOff,
                                 int64_t inSize, int64_t inStride,
                                 void *outAlloc, void *out, int64_t outOff,
                                 int64_t outSize, int64_t outStride,
                                 int64_t count);
void kiln_abi_prof_begin(int32_t id);
void kiln_abi_prof_end(int32_t id);

/* What the compiler embeds (the runtime loads the artifact's section). */
static char embedded[] = "FAKEBIN:k0_add,k1_relu";
static void *module;

__attribute__((constructor)) static void loadModule(void) {
  module = mgpuModuleLoad(embedded, sizeof(embedded));
}

__attribute__((destructor)) static void unloadModule(void) {
  mgpuModuleUnload(module);
}

EXPORT void kiln_entry(void **buffers) {
  float *x = buffers[0], *w = buffers[1], *y = buffers[2];
  int64_t n = 8;
  void *stream = mgpuStreamCreate();
  float *tmp = mgpuMemAlloc(n * sizeof(float), stream, false);
  mgpuMemset32(tmp, 0, (size_t)n, stream);

  kiln_abi_prof_begin(0);
  void *add = mgpuModuleGetFunction(module, "k0_add");
  void *addParams[] = {&x, &w, &tmp, &n};
  mgpuLaunchKernel(add, 1, 1, 1, 8, 1, 1, 0, stream, addParams, NULL, 4);
  kiln_abi_prof_end(0);

  kiln_abi_prof_begin(1);
  void *relu = mgpuModuleGetFunction(module, "k1_relu");
#ifdef KILN_TEST_CUDA_CONV
  void *reluParams[] = {&tmp, &tmp, &n};
#else
  void *reluParams[] = {&tmp, &y, &n};
#endif
  mgpuLaunchKernel(relu, 1, 1, 1, 8, 1, 1, 0, stream, reluParams, NULL, 3);
  kiln_abi_prof_end(1);

#ifdef KILN_TEST_CUDA_GEMM
  kiln_abi_prof_begin(2);
  /* float16: FakeCublasLt.c refuses it (float32 only). */
  kiln_rt_cuda_gemm(stream, 10, 0, 1, 1, 2, 4, 4, x, w, NULL, y);
  kiln_abi_prof_end(2);
#endif
#ifdef KILN_TEST_CUDA_QGEMM
  kiln_abi_prof_begin(2);
  kiln_rt_cuda_qgemm(stream, 2, 4, 4, x, 0, w, y);
  kiln_abi_prof_end(2);
#endif
#ifdef KILN_TEST_CUDA_ALLREDUCE
  /* A tensor-parallel shard's all-reduce of y over the ranks, in place
   * (buffers as memref<1xf32> descriptors, as the compiled host code). */
  kiln_abi_prof_begin(2);
  kiln_rt_cuda_all_reduce_f32(y, y, 0, 1, 1, y, y, 0, 1, 1, 8);
  kiln_abi_prof_end(2);
#endif
#ifdef KILN_TEST_CUDA_CONV
  kiln_abi_prof_begin(2);
  kiln_rt_cuda_conv2d(stream, 1 /* float32 */, 1 /* relu */, 2, 1, 2, 2, 1,
                      2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 1, 1, 1, tmp, w, w, y);
  kiln_abi_prof_end(2);
#endif

  mgpuMemFree(tmp, stream);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}
