/*===- TestQGemm.c - kiln_abi_qgemm_s32 against a plain loop --------------===*
 *
 * Random shapes (M 1..70: both VNNI kernels, N 1..70, K 1..200, strided rows), both activation
 * modes (u8 as is, i8 shifted by xor 0x80) and both weight signednesses,
 * the columns split into two calls as the parallel blocks do; every int32
 * result must equal the plain loop's. `kiln-test-qgemm amx|vnni|portable`
 * forces one path (KernelPath.h): AMX-INT8 tiles for M >= 4 (VNNI below),
 * the AVX-512 VNNI kernels, or the portable loop; a path this CPU lacks is
 * reported as skipped.
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "KernelPath.h"

void kiln_abi_qgemm_s32(intptr_t, intptr_t, intptr_t, intptr_t, intptr_t,
                        intptr_t, intptr_t, intptr_t, intptr_t, intptr_t,
                        intptr_t, intptr_t, intptr_t, intptr_t);
int kiln_abi_qgemm_has_vnni(void);
int kiln_abi_qgemm_has_amx(void);

int main(int argc, char **argv) {
  static const struct KilnTestPath paths[] = {
      {"amx", "amx"}, {"vnni", "avx512"}, {"portable", "portable"}};
  const struct KilnTestPath *path = kilnTestForcePath(argc, argv, paths, 3);
  int bad = 0;
  srand(1);
  for (int trial = 0; trial < 400; ++trial) {
    int m = 1 + rand() % (trial % 2 ? 9 : 70), n = 1 + rand() % 70,
        k = 1 + rand() % 200;
    int flags = rand() % 4;
    int lda = k + rand() % 3, ldw = k + rand() % 3, ldc = n + rand() % 3;
    uint8_t *a = malloc(m * lda), *w = malloc(n * ldw);
    int32_t *c = malloc(sizeof(int32_t) * m * ldc);
    for (int i = 0; i < m * lda; ++i)
      a[i] = (uint8_t)rand();
    for (int i = 0; i < n * ldw; ++i)
      w[i] = (uint8_t)rand();
    for (int i = 0; i < m * ldc; ++i)
      c[i] = 7; /* the kernel accumulates into C */
    int split = rand() % (n + 1);
    kiln_abi_qgemm_s32((intptr_t)a, 0, lda, (intptr_t)w, 0, ldw, (intptr_t)c,
                       0, ldc, m, k, 0, split, flags);
    kiln_abi_qgemm_s32((intptr_t)a, 0, lda, (intptr_t)w, 0, ldw, (intptr_t)c,
                       0, ldc, m, k, split, n, flags);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        int32_t s = 7;
        for (int p = 0; p < k; ++p) {
          uint8_t x = a[i * lda + p] ^ ((flags & 1) ? 0 : 0x80);
          int32_t y = (flags & 2) ? w[j * ldw + p] : (int8_t)w[j * ldw + p];
          s += (int32_t)x * y;
        }
        if (s != c[i * ldc + j] && bad++ < 5)
          printf("mismatch: M %d N %d K %d flags %d at (%d, %d): %d != %d\n",
                 m, n, k, flags, i, j, c[i * ldc + j], s);
      }
    free(a);
    free(w);
    free(c);
  }
  return kilnTestReportPath("qgemm", path,
                            kiln_abi_qgemm_has_amx()    ? "amx"
                            : kiln_abi_qgemm_has_vnni() ? "vnni"
                                                        : "portable",
                            bad);
}
