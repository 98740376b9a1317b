/*===- TestBf16Gemm.c - kiln_abi_bf16gemm_f32 against a double loop -------===*
 *
 * Random shapes (M 1..70: whole and partial 16-row tiles, one and two of
 * them; N 1..70; K 1..150, odd ones included: a half-filled pair of k),
 * strided rows, the columns split into two calls as the parallel blocks do,
 * C accumulated into (not overwritten). Products of bf16 values are exact
 * in f32, so the only error is the f32 summation's: every result must be
 * within (K + 2) * 2^-23 * sum |a * b| of the double-precision sum.
 * `kiln-test-bf16gemm amx|portable` forces one path (KernelPath.h); a path
 * this CPU lacks is reported as skipped.
 *
 *===----------------------------------------------------------------------===*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "KernelPath.h"

void kiln_abi_bf16gemm_f32(intptr_t, intptr_t, intptr_t, intptr_t, intptr_t,
                           intptr_t, intptr_t, intptr_t, intptr_t, intptr_t,
                           intptr_t, intptr_t, intptr_t);
int kiln_abi_bf16gemm_has_amx(void);

static uint16_t randomBf16(void) {
  /* A value in about [-4, 4]: random sign, exponent 2^-6..2^1, mantissa. */
  uint32_t sign = (uint32_t)(rand() & 1) << 15;
  uint32_t exponent = (uint32_t)(121 + rand() % 8) << 7;
  return (uint16_t)(sign | exponent | (uint32_t)(rand() & 0x7f));
}

static double toDouble(uint16_t v) {
  uint32_t bits = (uint32_t)v << 16;
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

int main(int argc, char **argv) {
  static const struct KilnTestPath paths[] = {{"amx", "amx"},
                                              {"portable", "portable"}};
  const struct KilnTestPath *path = kilnTestForcePath(argc, argv, paths, 2);
  int bad = 0;
  srand(3);
  for (int trial = 0; trial < 300; ++trial) {
    int m = 1 + rand() % 70, n = 1 + rand() % 70, k = 1 + rand() % 150;
    int lda = k + rand() % 3, ldb = n + rand() % 3, ldc = n + rand() % 3;
    uint16_t *a = malloc(sizeof(uint16_t) * m * lda);
    uint16_t *b = malloc(sizeof(uint16_t) * k * ldb);
    float *c = malloc(sizeof(float) * m * ldc);
    for (int i = 0; i < m * lda; ++i)
      a[i] = randomBf16();
    for (int i = 0; i < k * ldb; ++i)
      b[i] = randomBf16();
    for (int i = 0; i < m * ldc; ++i)
      c[i] = 0.5f; /* the kernel accumulates into C */
    int split = rand() % (n + 1);
    kiln_abi_bf16gemm_f32((intptr_t)a, 0, lda, (intptr_t)b, 0, ldb,
                          (intptr_t)c, 0, ldc, m, k, 0, split);
    kiln_abi_bf16gemm_f32((intptr_t)a, 0, lda, (intptr_t)b, 0, ldb,
                          (intptr_t)c, 0, ldc, m, k, split, n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double sum = 0.5, magnitude = 0.5;
        for (int p = 0; p < k; ++p) {
          double prod = toDouble(a[i * lda + p]) * toDouble(b[p * ldb + j]);
          sum += prod;
          magnitude += fabs(prod);
        }
        double tolerance = (k + 2) * ldexp(1.0, -23) * magnitude;
        if (fabs(c[i * ldc + j] - sum) > tolerance && bad++ < 5)
          printf("mismatch: M %d N %d K %d at (%d, %d): %.9g != %.9g\n", m, n,
                 k, i, j, c[i * ldc + j], sum);
      }
    free(a);
    free(b);
    free(c);
  }
  return kilnTestReportPath("bf16gemm", path,
                            kiln_abi_bf16gemm_has_amx() ? "amx" : "portable",
                            bad);
}
