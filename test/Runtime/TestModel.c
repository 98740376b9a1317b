/*===- TestModel.c - A hand-written model for the runtime's tests ---------===*
 *
 * Stands in for kiln-compile's output: a shared object with the code ABI of
 * docs/artifact.md (kiln_abi.c is linked in whole). TestArtifact.cpp packs it
 * with these tensors:
 *
 *   inputs:  x float32 [4, 8], s int32 [8]
 *   weights: w float32 [4, 8] (w[k] = 0.25 * (k % 8) - 1), b float32 [3]
 *            (1, 2, 3)
 *   outputs: y float32 [4, 8] = x * w + s[j] + b[0]
 *            z int64 [1]      = sum(s)
 *
 * The product goes through a scratch buffer from the allocation hook, as
 * generated code's intermediate tensors do, so the tests see the runtime's
 * accounting at work. Its three loops are kernels 0 (product), 1 (bias) and
 * 2 (sum) of the kernel table TestArtifact.cpp writes, bracketed with the
 * profiling hooks as generated code's kernels are.
 *
 * KILN_TEST_NO_ENTRY builds a variant without kiln_entry (missing symbol);
 * KILN_TEST_ABI_VERSION_2 one that defines the ABI itself with version 2;
 * KILN_TEST_OPENMP one whose product is an OpenMP parallel loop that
 * allocates in every iteration (from the worker threads too), as generated
 * parallel code does.
 *
 *===----------------------------------------------------------------------===*/
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

#ifdef KILN_TEST_ABI_VERSION_2
#include <stdlib.h>
EXPORT int32_t kiln_abi_version(void) { return 2; }
EXPORT void kiln_abi_set_hooks(void *(*a)(size_t, size_t), void (*f)(void *)) {
  (void)a;
  (void)f;
}
EXPORT void kiln_abi_set_num_threads(int32_t n) { (void)n; }
static void *_mlir_memref_to_llvm_alloc(size_t n) { return malloc(n); }
static void _mlir_memref_to_llvm_free(void *p) { free(p); }
static void kiln_abi_prof_begin(int32_t id) { (void)id; }
static void kiln_abi_prof_end(int32_t id) { (void)id; }
#else
void *_mlir_memref_to_llvm_alloc(size_t size);
void _mlir_memref_to_llvm_free(void *ptr);
void kiln_abi_prof_begin(int32_t id);
void kiln_abi_prof_end(int32_t id);
#endif

/* The size of the scratch buffer, exported so the tests can check the
 * accounting against it. */
EXPORT const size_t kiln_test_scratch_bytes = 4096;

#ifndef KILN_TEST_NO_ENTRY
EXPORT void kiln_entry(void **buffers) {
  const float *x = (const float *)buffers[0];
  const int32_t *s = (const int32_t *)buffers[1];
  const float *w = (const float *)buffers[2];
  const float *b = (const float *)buffers[3];
  float *y = (float *)buffers[4];
  int64_t *z = (int64_t *)buffers[5];
  float *tmp = (float *)_mlir_memref_to_llvm_alloc(kiln_test_scratch_bytes);
  kiln_abi_prof_begin(0);
#ifdef KILN_TEST_OPENMP
#pragma omp parallel for schedule(static, 1)
  for (int i = 0; i < 32; ++i) {
    float *cell = (float *)_mlir_memref_to_llvm_alloc(64);
    cell[0] = x[i] * w[i];
    tmp[i] = cell[0];
    _mlir_memref_to_llvm_free(cell);
  }
#else
  for (int i = 0; i < 32; ++i)
    tmp[i] = x[i] * w[i];
#endif
  kiln_abi_prof_end(0);
  kiln_abi_prof_begin(1);
  for (int i = 0; i < 32; ++i)
    y[i] = tmp[i] + (float)s[i % 8] + b[0];
  kiln_abi_prof_end(1);
  kiln_abi_prof_begin(2);
  int64_t sum = 0;
  for (int j = 0; j < 8; ++j)
    sum += s[j];
  z[0] = sum;
  kiln_abi_prof_end(2);
  _mlir_memref_to_llvm_free(tmp);
}
#endif
