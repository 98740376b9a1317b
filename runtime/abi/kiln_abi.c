/*===- kiln_abi.c - The support code linked into every compiled model -----===*
 *
 * kiln-compile links this object into the shared object it packs into a
 * model artifact (docs/artifact.md, "Code ABI"). It gives the generated code
 * its allocation hooks (MLIR's memref lowering with generic allocation
 * functions calls _mlir_memref_to_llvm_*), the thread-count setter, and the
 * kernels that library mode (--kernels=library) calls.
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_abi_isa.h"

#define KILN_ABI_VERSION 1
#define KILN_EXPORT __attribute__((visibility("default")))

static int envSet(const char *name) {
  const char *v = getenv(name);
  return v && *v && *v != '0';
}

int kiln_abi_isa_allows(enum KilnIsa isa) {
  static int cap = -1;
  int c = __atomic_load_n(&cap, __ATOMIC_RELAXED);
  if (c < 0) {
    const char *v = getenv("KILN_ISA");
    c = KILN_ISA_AMX;
    if (v && !strcmp(v, "portable"))
      c = KILN_ISA_PORTABLE;
    else if (v && !strcmp(v, "avx2"))
      c = KILN_ISA_AVX2;
    else if (v && !strcmp(v, "avx512"))
      c = KILN_ISA_AVX512;
    if (c > KILN_ISA_AVX512 && envSet("KILN_NO_AMX"))
      c = KILN_ISA_AVX512;
    __atomic_store_n(&cap, c, __ATOMIC_RELAXED);
  }
  return (int)isa <= c;
}

static void *defaultAlloc(size_t size, size_t align) {
  void *p = NULL;
  if (align < sizeof(void *))
    align = sizeof(void *);
  if (posix_memalign(&p, align, size ? size : 1) != 0)
    return NULL;
  return p;
}

static void *(*allocHook)(size_t, size_t) = defaultAlloc;
static void (*freeHook)(void *) = free;

KILN_EXPORT int32_t kiln_abi_version(void) { return KILN_ABI_VERSION; }

KILN_EXPORT void kiln_abi_set_hooks(void *(*alloc)(size_t, size_t),
                                    void (*dealloc)(void *)) {
  allocHook = alloc ? alloc : defaultAlloc;
  freeHook = dealloc ? dealloc : free;
}

/* The generated code aligns the pointers it gets itself (it asks for size +
 * alignment bytes); 64-byte blocks keep vector loads on cache lines anyway. */
KILN_EXPORT void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocHook(size, 64);
}

KILN_EXPORT void *_mlir_memref_to_llvm_aligned_alloc(size_t align,
                                                     size_t size) {
  return allocHook(size, align < 64 ? 64 : align);
}

KILN_EXPORT void _mlir_memref_to_llvm_free(void *ptr) {
  if (ptr)
    freeHook(ptr);
}

/* Kernel profiling (docs/artifact.md, "Kernel profiling"). The code calls
 * kiln_abi_prof_begin(id) / kiln_abi_prof_end(id) around each kernel of its
 * kernel table, on the thread that called kiln_entry. While no profiler is
 * set, each costs a call, a load and a not-taken branch. The runtime sets
 * its callback once a session turns profiling on; the callback finds the
 * run's recorder itself (a thread-local of the runtime), so concurrent runs
 * of other sessions, profiled or not, do not mix. The hooks are hidden: the
 * model's code calls them directly, not through the PLT. */
typedef void (*KilnProfiler)(int32_t id, int32_t end);
static KilnProfiler profiler = 0;

KILN_EXPORT void kiln_abi_set_profiler(KilnProfiler fn) {
  __atomic_store_n(&profiler, fn, __ATOMIC_RELEASE);
}

void kiln_abi_prof_begin(int32_t id) {
  KilnProfiler fn = __atomic_load_n(&profiler, __ATOMIC_RELAXED);
  if (__builtin_expect(fn != 0, 0))
    fn(id, 0);
}

void kiln_abi_prof_end(int32_t id) {
  KilnProfiler fn = __atomic_load_n(&profiler, __ATOMIC_RELAXED);
  if (__builtin_expect(fn != 0, 0))
    fn(id, 1);
}

extern void omp_set_num_threads(int) __attribute__((weak));
/* In kiln_abi_blas.c, linked only with --kernels=library. */
extern void kiln_abi_blas_set_num_threads(int32_t) __attribute__((weak));

KILN_EXPORT void kiln_abi_set_num_threads(int32_t n) {
  if (n > 0 && omp_set_num_threads)
    omp_set_num_threads(n);
  if (n > 0 && kiln_abi_blas_set_num_threads)
    kiln_abi_blas_set_num_threads(n);
}

/* Tensor parallelism (docs/cluster.md): kiln-cpu-collective-calls turns each
 * kiln.all_reduce into a call to kiln_abi_all_reduce_sum_<type>(in, out,
 * count), which copies in to out and has the runtime sum out over the ranks
 * (MPI_Allreduce; f16 and bf16 summed in f32). The runtime sets the hook
 * when it loads the model; it refuses to run a tensor-parallel artifact
 * outside a world of the right size, so a missing hook is a broken
 * embedding of the code, reported and fatal. dtype: 0 f32, 1 f16, 2 bf16. */
typedef int32_t (*KilnAllReduce)(void *data, int64_t count, int32_t dtype);
static KilnAllReduce allReduceHook = 0;

KILN_EXPORT void kiln_abi_set_all_reduce(KilnAllReduce fn) {
  __atomic_store_n(&allReduceHook, fn, __ATOMIC_RELEASE);
}

static void allReduceSum(const void *in, void *out, intptr_t count,
                         int32_t dtype, size_t width) {
  KilnAllReduce fn = __atomic_load_n(&allReduceHook, __ATOMIC_ACQUIRE);
  if (count > 0)
    memcpy(out, in, (size_t)count * width);
  if (!fn || fn(out, count, dtype) != 0) {
    fprintf(stderr, "kiln: the model's all-reduce failed (%s): run a "
                    "tensor-parallel artifact through the Kiln runtime "
                    "under mpirun\n",
            fn ? "the runtime reported an error" : "no runtime hook");
    abort();
  }
}

void kiln_abi_all_reduce_sum_f32(const void *in, void *out, intptr_t count) {
  allReduceSum(in, out, count, 0, 4);
}
void kiln_abi_all_reduce_sum_f16(const void *in, void *out, intptr_t count) {
  allReduceSum(in, out, count, 1, 2);
}
void kiln_abi_all_reduce_sum_bf16(const void *in, void *out, intptr_t count) {
  allReduceSum(in, out, count, 2, 2);
}

/* memref.copy between views that are not both contiguous lowers to this
 * call (MLIR's runner-utils name and signature). Descriptors are MLIR's
 * ranked memref layout: allocated, aligned, offset, sizes[rank],
 * strides[rank]. */
struct KilnUnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

struct KilnDescriptorHead {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
};

KILN_EXPORT void memrefCopy(int64_t elementSize, struct KilnUnrankedMemRef *src,
                            struct KilnUnrankedMemRef *dst) {
  int64_t rank = src->rank;
  struct KilnDescriptorHead *s = (struct KilnDescriptorHead *)src->descriptor;
  struct KilnDescriptorHead *d = (struct KilnDescriptorHead *)dst->descriptor;
  const int64_t *sizes = s->sizesAndStrides;
  const int64_t *srcStrides = s->sizesAndStrides + rank;
  const int64_t *dstStrides = d->sizesAndStrides + rank;
  char *srcBase = s->aligned + s->offset * elementSize;
  char *dstBase = d->aligned + d->offset * elementSize;
  if (rank == 0) {
    memcpy(dstBase, srcBase, (size_t)elementSize);
    return;
  }
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  int64_t index[rank];
  memset(index, 0, sizeof(index));
  int64_t srcOffset = 0, dstOffset = 0;
  for (;;) {
    memcpy(dstBase + dstOffset * elementSize, srcBase + srcOffset * elementSize,
           (size_t)elementSize);
    int64_t axis = rank - 1;
    for (; axis >= 0; --axis) {
      ++index[axis];
      srcOffset += srcStrides[axis];
      dstOffset += dstStrides[axis];
      if (index[axis] < sizes[axis])
        break;
      srcOffset -= srcStrides[axis] * sizes[axis];
      dstOffset -= dstStrides[axis] * sizes[axis];
      index[axis] = 0;
    }
    if (axis < 0)
      return;
  }
}
