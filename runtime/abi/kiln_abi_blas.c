/*===- kiln_abi_blas.c - Library-mode kernels for compiled models ---------===*
 *
 * With `kiln-compile --kernels=library`, the bufferized linalg.matmul,
 * linalg.batch_matmul and linalg.conv_2d_nchw_fchw ops on float32 become
 * calls to these functions (lib/Target/CPU/LibraryCalls.cpp), which run
 * OpenBLAS's SGEMM. Every memref arrives as (aligned base pointer, offset,
 * sizes, strides) in elements, so views with any strides are accepted: a
 * unit-stride dimension maps onto BLAS's leading dimension (transposed when
 * the rows are the unit-stride ones), anything else takes the plain loops.
 * C is accumulated into (beta = 1), as linalg's semantics are C += A * B.
 *
 *===----------------------------------------------------------------------===*/
#include <cblas.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KILN_EXPORT __attribute__((visibility("default")))

/* How BLAS reads a rows x cols matrix with element strides (s0, s1): row
 * major (NoTrans, leading dim s0), or the transpose of a row-major matrix
 * (Trans, leading dim s1). 0 when neither stride is a unit one. */
static int blasLayout(int64_t rows, int64_t cols, int64_t s0, int64_t s1,
                      enum CBLAS_TRANSPOSE *trans, int64_t *ld) {
  if (s1 == 1 && (rows == 1 || s0 >= cols)) {
    *trans = CblasNoTrans;
    *ld = rows == 1 ? (cols > 0 ? cols : 1) : s0;
    return 1;
  }
  if (s0 == 1 && (cols == 1 || s1 >= rows)) {
    *trans = CblasTrans;
    *ld = cols == 1 ? (rows > 0 ? rows : 1) : s1;
    return 1;
  }
  return 0;
}

/* One GEMM C[M,N] += A[M,K] * B[K,N] with element strides. */
static void gemm(const float *a, int64_t as0, int64_t as1, const float *b,
                 int64_t bs0, int64_t bs1, float *c, int64_t cs0, int64_t cs1,
                 int64_t m, int64_t n, int64_t k) {
  if (m == 0 || n == 0 || k == 0)
    return;
  enum CBLAS_TRANSPOSE ta, tb, tc;
  int64_t lda, ldb, ldc;
  if (blasLayout(m, k, as0, as1, &ta, &lda) &&
      blasLayout(k, n, bs0, bs1, &tb, &ldb) &&
      blasLayout(m, n, cs0, cs1, &tc, &ldc) && tc == CblasNoTrans) {
    cblas_sgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, 1.0f, a,
                (int)lda, b, (int)ldb, 1.0f, c, (int)ldc);
    return;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      float av = a[i * as0 + p * as1];
      for (int64_t j = 0; j < n; ++j)
        c[i * cs0 + j * cs1] += av * b[p * bs0 + j * bs1];
    }
}

KILN_EXPORT void kiln_abi_sgemm(intptr_t a, int64_t aoff, int64_t as0,
                                int64_t as1, intptr_t b, int64_t boff,
                                int64_t bs0, int64_t bs1, intptr_t c,
                                int64_t coff, int64_t cs0, int64_t cs1,
                                int64_t m, int64_t n, int64_t k) {
  gemm((const float *)a + aoff, as0, as1, (const float *)b + boff, bs0, bs1,
       (float *)c + coff, cs0, cs1, m, n, k);
}

KILN_EXPORT void
kiln_abi_sgemm_batched(int64_t batch, intptr_t a, int64_t aoff, int64_t abs,
                       int64_t as0, int64_t as1, intptr_t b, int64_t boff,
                       int64_t bbs, int64_t bs0, int64_t bs1, intptr_t c,
                       int64_t coff, int64_t cbs, int64_t cs0, int64_t cs1,
                       int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < batch; ++i)
    gemm((const float *)a + aoff + i * abs, as0, as1,
         (const float *)b + boff + i * bbs, bs0, bs1,
         (float *)c + coff + i * cbs, cs0, cs1, m, n, k);
}

/* out[N,F,OH,OW] += conv(in[N,C,H,W], filter[F,C,KH,KW]) (input already
 * padded), through im2col and one SGEMM per image. All three contiguous. */
KILN_EXPORT void kiln_abi_conv2d_nchw_f32(
    intptr_t in, int64_t inoff, int64_t n, int64_t c, int64_t h, int64_t w,
    intptr_t filter, int64_t filteroff, int64_t f, int64_t kh, int64_t kw,
    intptr_t out, int64_t outoff, int64_t oh, int64_t ow, int64_t sh,
    int64_t sw, int64_t dh, int64_t dw) {
  const float *input = (const float *)in + inoff;
  const float *weights = (const float *)filter + filteroff;
  float *output = (float *)out + outoff;
  int64_t ckk = c * kh * kw, spatial = oh * ow;
  int direct = kh == 1 && kw == 1 && sh == 1 && sw == 1 && oh == h && ow == w;
  float *col = direct ? NULL : (float *)malloc(sizeof(float) * ckk * spatial);
  for (int64_t img = 0; img < n; ++img) {
    const float *x = input + img * c * h * w;
    const float *cols = x;
    if (!direct) {
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            float *row = col + ((ch * kh + i) * kw + j) * spatial;
            for (int64_t y = 0; y < oh; ++y) {
              const float *src = x + (ch * h + y * sh + i * dh) * w + j * dw;
              float *dst = row + y * ow;
              if (sw == 1)
                memcpy(dst, src, sizeof(float) * ow);
              else
                for (int64_t xx = 0; xx < ow; ++xx)
                  dst[xx] = src[xx * sw];
            }
          }
      cols = col;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)f,
                (int)spatial, (int)ckk, 1.0f, weights, (int)ckk, cols,
                (int)spatial, 1.0f, output + img * f * spatial, (int)spatial);
  }
  free(col);
}

extern void openblas_set_num_threads(int);
extern void kmp_set_blocktime(int) __attribute__((weak));

/* OpenBLAS runs its own threads beside OpenMP's: OpenMP workers that spin
 * for the default 200 ms after a parallel loop would take the cores the
 * SGEMM threads need, so in library mode they go to sleep at once. */
KILN_EXPORT void kiln_abi_blas_set_num_threads(int32_t threads) {
  if (threads > 0)
    openblas_set_num_threads(threads);
  if (kmp_set_blocktime)
    kmp_set_blocktime(0);
}
