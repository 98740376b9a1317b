/*===- cuda_abi.h - The code ABI of artifacts for target "cuda" -----------===*
 *
 * The contract between the host code kiln-compile emits for a CUDA target
 * and the runtime that runs it (runtime/cuda/). Header-only, no CUDA headers:
 * the compiler, the ABI archive's CUDA shim and the runtime share it.
 *
 * The artifact of a CUDA model (docs/artifact.md, target kind "cuda"):
 *   - section "code" (kind "elf-shared-object"): the host code, compiled for
 *     the build machine, exporting kiln_abi_version() (returns 1),
 *     kiln_entry(void **buffers) and kiln_abi_set_cuda_runtime(); optionally
 *     kiln_abi_set_profiler() as the CPU code.
 *   - section "cuda-fatbin" (kind "cuda-fatbin"): the kernels of
 *     `gpu.module @kiln_kernels`, a fatbin for the target's chip. The runtime
 *     loads it once per session (cuModuleLoadData) and resolves every kernel
 *     of the kernel table there, so a fatbin the device cannot run fails at
 *     session creation with the chip named, before any run. Kernel-table
 *     entries with "library": true (a kiln_rt_cuda_* call, not a function
 *     of the fatbin) are not looked up there.
 *   - header "target": {"kind": "cuda", "chip": "sm_80", "triple": host}
 *     ("cpu" and "features" optional: the host code's).
 *
 * kiln_entry's buffers are DEVICE pointers, in the CPU order (inputs,
 * weights, outputs). The runtime uploads the weights once per session and
 * copies inputs/outputs per run. The host code calls upstream MLIR's mgpu*
 * functions (the names gpu-to-llvm emits: mgpuModuleLoad, mgpuLaunchKernel,
 * mgpuMemAlloc, ...) and Kiln's kiln_rt_cuda_* library kernels; the ABI
 * archive's CUDA shim (runtime/abi/kiln_abi_cuda.c) defines all of them and
 * forwards each to the table below, which the runtime installs with
 * kiln_abi_set_cuda_runtime() right after loading the code. The table is
 * global to the loaded code; `ctx` lets the runtime find itself, and the
 * runtime finds the session of the run in progress through a thread-local
 * (as the profiler does), so concurrent sessions stay apart.
 *
 * The shim exports only kiln_abi_set_cuda_runtime; the mgpu* functions are
 * hidden (bound at link time inside the host code's shared object). The
 * table is version-checked (abi_version) and size-checked (struct_size:
 * members past the end of an older runtime's table are never called).
 *
 * Profiling and kernel names: the runtime sets its callback with
 * kiln_abi_set_profiler for the model's lifetime; the code's
 * kiln_abi_prof_begin/end around each kernel (library calls included) tell
 * it which kernel a failing call belongs to, and in profiled runs record
 * CUDA events on the stream.
 *
 * mgpuModuleLoad may be called from a global constructor while the code is
 * being loaded, before any table is installed: the shim records (data,
 * size) and returns its own handle without calling the runtime; the
 * runtime's module_get_function then resolves a kernel by name in the
 * session's module (loaded from the "cuda-fatbin" section).
 *
 * Errors: a call that fails does not return an error code to the host code
 * (mgpu* return void); the runtime records the first error of the run with
 * the kernel's name and kiln_session_run reports it. Calls after an error
 * in the same run are skipped by the runtime.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_CUDA_ABI_H
#define KILN_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_CUDA_ABI_VERSION 1

/* Epilogues of kiln_rt_cuda_gemm (cuBLASLt's BIAS / RELU_BIAS / GELU_BIAS,
 * or RELU / GELU without a bias) and kiln_rt_cuda_conv2d (NONE, RELU).
 * cuBLASLt's GELU is the tanh approximation, not ONNX Gelu's default erf
 * form. */
typedef enum kiln_cuda_epilogue {
  KILN_CUDA_EPILOGUE_NONE = 0,
  KILN_CUDA_EPILOGUE_RELU = 1,
  KILN_CUDA_EPILOGUE_GELU = 2,
} kiln_cuda_epilogue;

typedef struct kiln_cuda_runtime_api {
  uint32_t struct_size; /* sizeof(kiln_cuda_runtime_api) of the runtime */
  uint32_t abi_version; /* KILN_CUDA_ABI_VERSION */
  void *ctx;            /* the runtime's; passed back to every call */

  /* Modules and launches (mgpuModuleGetFunction, mgpuLaunchKernel). `name`
   * is the kernel's name in the kernel table. Returns NULL (and records the
   * error) when the session's module has no such kernel. */
  void *(*module_get_function)(void *ctx, const char *name);
  void (*launch_kernel)(void *ctx, void *function, intptr_t grid_x,
                        intptr_t grid_y, intptr_t grid_z, intptr_t block_x,
                        intptr_t block_y, intptr_t block_z,
                        int32_t shared_mem_bytes, void *stream, void **params,
                        void **extra, size_t param_count);

  /* Streams and events (mgpuStream*, mgpuEvent*). stream_create returns the
   * session's stream (one per session; the run is captured into a CUDA
   * graph on it), stream_destroy of it is a no-op, and stream_synchronize
   * is deferred to the end of the run while a graph is being captured. */
  void *(*stream_create)(void *ctx);
  void (*stream_destroy)(void *ctx, void *stream);
  void (*stream_synchronize)(void *ctx, void *stream);
  void (*stream_wait_event)(void *ctx, void *stream, void *event);
  void *(*event_create)(void *ctx);
  void (*event_destroy)(void *ctx, void *event);
  void (*event_synchronize)(void *ctx, void *event);
  void (*event_record)(void *ctx, void *event, void *stream);

  /* Device memory (mgpuMemAlloc/Free/Memcpy/Memset*): stream-ordered, from
   * the session's pool (cuMemAllocFromPoolAsync), with peak accounting. */
  void *(*mem_alloc)(void *ctx, uint64_t size_bytes, void *stream,
                     int32_t host_shared);
  void (*mem_free)(void *ctx, void *ptr, void *stream);
  void (*memcpy)(void *ctx, void *dst, const void *src, size_t size_bytes,
                 void *stream);
  void (*memset32)(void *ctx, void *dst, uint32_t value, size_t count,
                   void *stream);
  void (*memset16)(void *ctx, void *dst, uint16_t value, size_t count,
                   void *stream);

  /* Library kernels (--kernels=library): a row-major dense GEMM through
   * cuBLASLt. C[b] = epilogue(A[b] * B[b or 0] + bias); A is [batch, m, k],
   * B is [b_batch, k, n] with b_batch 1 (shared) or batch, bias is [n] or
   * NULL, C is [batch, m, n]; dtype is a kiln_dtype code (float32, float16,
   * bfloat16; fp32 accumulation) of A, B, bias and C alike. */
  void (*gemm)(void *ctx, void *stream, int32_t dtype, int32_t epilogue,
               int64_t batch, int64_t b_batch, int64_t m, int64_t n,
               int64_t k, const void *a, const void *b, const void *bias,
               void *c);

  /* Library int8 GEMM (--kernels=library, kiln.quantized_matmul's
   * contraction) through cuBLASLt's IMMA kernels: C[i, j] = sum_p A[i, p] *
   * W[j, p] in int32, row-major; A is [m, k] and W [n, k] (the weight stored
   * transposed: cuBLASLt's "TN" int8 layout), both signed int8; C is [m, n]
   * int32, overwritten. a_flags: KILN_CUDA_QGEMM_A_INT8, the only value
   * (IMMA has no unsigned operand: the compiler shifts a uint8 activation
   * to int8 and corrects the sum by 128 * rowsum(W)). n and k must be
   * multiples of 4 and the pointers 4-byte aligned (cuBLASLt's IMMA
   * requirements). Appended after gemm: a runtime whose table ends before
   * it (struct_size) never gets the call. */
  void (*qgemm)(void *ctx, void *stream, int64_t m, int64_t n, int64_t k,
                const void *a, int32_t a_flags, const void *w, void *c);

  /* Library kernels (--kernels=library): a 2-D convolution through cuDNN
   * (appended after qgemm: a runtime whose struct_size ends before it never
   * has it called). y = epilogue(conv(x, w) + bias), cross-correlation as
   * ONNX Conv: x is NCHW [n, c, h, w], w is OIHW [k, c / groups, r, s],
   * bias is [k] or NULL, y is NCHW [n, k, p, q] with
   * p = (h + pad_top + pad_bottom - dilation_h * (r - 1) - 1) / stride_h + 1
   * (q alike); the runtime checks p and q against that. cuDNN pads
   * symmetrically: pad_top != pad_bottom or pad_left != pad_right is
   * refused (the compiler does not emit such calls). dtype is a kiln_dtype
   * code (float32, float16, bfloat16; fp32 accumulation) of x, w, bias and
   * y alike; epilogue is KILN_CUDA_EPILOGUE_NONE or _RELU. */
  void (*conv2d)(void *ctx, void *stream, int32_t dtype, int32_t epilogue,
                 int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                 int64_t r, int64_t s, int64_t p, int64_t q, int64_t pad_top,
                 int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
                 int64_t stride_h, int64_t stride_w, int64_t dilation_h,
                 int64_t dilation_w, int64_t groups, const void *x,
                 const void *weight, const void *bias, void *y);

  /* Tensor parallelism (appended after conv2d): out = the sum over the
   * group's ranks of every rank's in (count elements; dtype float32,
   * float16 or bfloat16), with NCCL on the session's stream (in is copied
   * to out first when they differ). A session of a tensor-parallel shard
   * made its communicator when it opened (MPI carries NCCL's unique id);
   * any other session records an error. */
  void (*all_reduce)(void *ctx, void *stream, int32_t dtype, const void *in,
                     void *out, int64_t count);
} kiln_cuda_runtime_api;

/* a_flags of qgemm. */
#define KILN_CUDA_QGEMM_A_INT8 0

/* Exported by CUDA host code (defined in the shim). */
typedef void (*kiln_abi_set_cuda_runtime_fn)(const kiln_cuda_runtime_api *);

/* The library-kernel entry point the host code calls (defined in the shim,
 * forwarding to api->gemm): */
/* void kiln_rt_cuda_gemm(void *stream, int32_t dtype, int32_t epilogue,
 *                        int64_t batch, int64_t b_batch, int64_t m,
 *                        int64_t n, int64_t k, const void *a, const void *b,
 *                        const void *bias, void *c); */
/* and, forwarding to api->qgemm:
 * void kiln_rt_cuda_qgemm(void *stream, int64_t m, int64_t n, int64_t k,
 *                         const void *a, int32_t a_flags, const void *w,
 *                         void *c); */
/* and, forwarding to api->all_reduce, one per element type, each taking
 * its two buffers as MLIR's memref<1xT> descriptors (allocated and aligned
 * pointers, offset, size, stride; the aligned pointer plus the offset is
 * the data) and the element count:
 * void kiln_rt_cuda_all_reduce_f32(void *in_alloc, void *in, int64_t in_off,
 *                                  int64_t in_size, int64_t in_stride,
 *                                  void *out_alloc, void *out,
 *                                  int64_t out_off, int64_t out_size,
 *                                  int64_t out_stride, int64_t count);
 *   (_f16, _bf16 alike) */
/* and, forwarding to api->conv2d: */
/* void kiln_rt_cuda_conv2d(void *stream, int32_t dtype, int32_t epilogue,
 *                          int64_t n, int64_t c, int64_t h, int64_t w,
 *                          int64_t k, int64_t r, int64_t s, int64_t p,
 *                          int64_t q, int64_t pad_top, int64_t pad_left,
 *                          int64_t pad_bottom, int64_t pad_right,
 *                          int64_t stride_h, int64_t stride_w,
 *                          int64_t dilation_h, int64_t dilation_w,
 *                          int64_t groups, const void *x,
 *                          const void *weight, const void *bias, void *y); */

#ifdef __cplusplus
}
#endif

#endif /* KILN_CUDA_ABI_H */
