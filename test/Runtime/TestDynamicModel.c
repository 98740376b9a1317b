/*===- TestDynamicModel.c - A hand-written model with symbolic dims -------===*
 *
 * Stands in for a kiln-compile output with symbolic dims (docs/artifact.md,
 * "Symbolic dims"); TestArtifact.cpp packs it with these tensors:
 *
 *   symbols: n, m
 *   inputs:  x float32 ["n", "m"], b float32 [1, "m"]
 *   weights: w float32 [1] (2.5)
 *   outputs: y     float32 ["n", "m * 2"]         = concat(x + b, x + b + w)
 *                                                   over the last axis
 *            even  float32 ["(n + 1) / 2", "m"]   = rows 0, 2, 4... of x
 *            count int64   [1]                    = n * m
 *
 * kiln_entry reads n and m from the buffer after the outputs (buffers[6]).
 * x + b goes through a scratch buffer of n * m floats from the allocation
 * hook, so the runtime's accounting sees a size that changes per run.
 *
 *===----------------------------------------------------------------------===*/
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

void *_mlir_memref_to_llvm_alloc(size_t size);
void _mlir_memref_to_llvm_free(void *ptr);

EXPORT void kiln_entry(void **buffers) {
  const float *x = (const float *)buffers[0];
  const float *b = (const float *)buffers[1];
  const float *w = (const float *)buffers[2];
  float *y = (float *)buffers[3];
  float *even = (float *)buffers[4];
  int64_t *count = (int64_t *)buffers[5];
  const int64_t *symbols = (const int64_t *)buffers[6];
  int64_t n = symbols[0], m = symbols[1];
  float *sum =
      (float *)_mlir_memref_to_llvm_alloc((size_t)(n * m) * sizeof(float));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      sum[i * m + j] = x[i * m + j] + b[j];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      y[i * 2 * m + j] = sum[i * m + j];
      y[i * 2 * m + m + j] = sum[i * m + j] + w[0];
    }
  for (int64_t k = 0; 2 * k < n; ++k)
    for (int64_t j = 0; j < m; ++j)
      even[k * m + j] = x[2 * k * m + j];
  count[0] = n * m;
  _mlir_memref_to_llvm_free(sum);
}
