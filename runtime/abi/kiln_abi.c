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
#include <stdlib.h>

#define KILN_ABI_VERSION 1
#define KILN_EXPORT __attribute__((visibility("default")))

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

extern void omp_set_num_threads(int) __attribute__((weak));
/* In kiln_abi_blas.c, linked only with --kernels=library. */
extern void kiln_abi_blas_set_num_threads(int32_t) __attribute__((weak));

KILN_EXPORT void kiln_abi_set_num_threads(int32_t n) {
  if (n > 0 && omp_set_num_threads)
    omp_set_num_threads(n);
  if (n > 0 && kiln_abi_blas_set_num_threads)
    kiln_abi_blas_set_num_threads(n);
}
