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
 * Threads: OpenBLAS runs single-threaded, and the work is split here over
 * the OpenMP threads the generated code runs on (libomp: this file is built
 * with -fopenmp and uses only `omp parallel` and omp_get_*, which libomp
 * implements for GCC's ABI too). OpenBLAS's own pthread pool beside the
 * OpenMP team oversubscribed the cores (both pools spin), and its threading
 * of one small GEMM at a time cost more than it saved: here every thread
 * runs whole sub-GEMMs (row or column blocks, batch entries, image rows of a
 * convolution with their own im2col) and the team is forked once per call.
 *
 *===----------------------------------------------------------------------===*/
#include <cblas.h>
#include <omp.h>
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

/* One GEMM C[M,N] += A[M,K] * B[K,N] with element strides, on the calling
 * thread. */
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

/* Below this many multiply-adds a GEMM runs on one thread: forking the team
 * and splitting the packing costs more than the second core gives back. */
#define KILN_MIN_PARALLEL_MACS (1 << 17)

/* Threads for `macs` multiply-adds: 1 inside a parallel region (the team is
 * busy) or for small work, else the team's size. */
static int threadsFor(double macs) {
  if (omp_in_parallel() || macs < KILN_MIN_PARALLEL_MACS)
    return 1;
  int threads = omp_get_max_threads();
  return threads > 1 ? threads : 1;
}

/* [begin, end) of part `part` of `parts` of [0, size), in multiples of
 * `align` (the last part takes the rest). */
static void splitRange(int64_t size, int parts, int part, int64_t align,
                       int64_t *begin, int64_t *end) {
  int64_t chunk = (size + parts - 1) / parts;
  chunk = (chunk + align - 1) / align * align;
  *begin = part * chunk < size ? part * chunk : size;
  *end = *begin + chunk < size ? *begin + chunk : size;
}

/* `batch` GEMMs C_i[M,N] += A_i * B_i (batch strides abs, bbs, cbs; 0 for a
 * shared operand), split over the threads: whole batch entries when there
 * are at least as many as threads, else each GEMM in row or column blocks
 * (the longer side; columns in multiples of 16, the width of OpenBLAS's
 * AVX-512 kernels). */
static void gemmBatch(int64_t batch, const float *a, int64_t abs, int64_t as0,
                      int64_t as1, const float *b, int64_t bbs, int64_t bs0,
                      int64_t bs1, float *c, int64_t cbs, int64_t cs0,
                      int64_t cs1, int64_t m, int64_t n, int64_t k) {
  if (batch <= 0 || m == 0 || n == 0 || k == 0)
    return;
  int threads = threadsFor((double)batch * m * n * k);
  if (threads == 1) {
    for (int64_t i = 0; i < batch; ++i)
      gemm(a + i * abs, as0, as1, b + i * bbs, bs0, bs1, c + i * cbs, cs0,
           cs1, m, n, k);
    return;
  }
  /* Parts per GEMM, so that batch * parts covers the threads. */
  int parts = batch >= threads ? 1 : (int)((threads + batch - 1) / batch);
  int splitRows = m >= n;
  int64_t tasks = batch * parts;
#pragma omp parallel num_threads(threads)
  {
    int self = omp_get_thread_num(), team = omp_get_num_threads();
    for (int64_t task = self; task < tasks; task += team) {
      int64_t i = task / parts, begin, end;
      int part = (int)(task % parts);
      if (splitRows) {
        splitRange(m, parts, part, 1, &begin, &end);
        gemm(a + i * abs + begin * as0, as0, as1, b + i * bbs, bs0, bs1,
             c + i * cbs + begin * cs0, cs0, cs1, end - begin, n, k);
      } else {
        splitRange(n, parts, part, 16, &begin, &end);
        gemm(a + i * abs, as0, as1, b + i * bbs + begin * bs1, bs0, bs1,
             c + i * cbs + begin * cs1, cs0, cs1, m, end - begin, k);
      }
    }
  }
}

KILN_EXPORT void kiln_abi_sgemm(intptr_t a, int64_t aoff, int64_t as0,
                                int64_t as1, intptr_t b, int64_t boff,
                                int64_t bs0, int64_t bs1, intptr_t c,
                                int64_t coff, int64_t cs0, int64_t cs1,
                                int64_t m, int64_t n, int64_t k) {
  gemmBatch(1, (const float *)a + aoff, 0, as0, as1, (const float *)b + boff,
            0, bs0, bs1, (float *)c + coff, 0, cs0, cs1, m, n, k);
}

KILN_EXPORT void
kiln_abi_sgemm_batched(int64_t batch, intptr_t a, int64_t aoff, int64_t abs,
                       int64_t as0, int64_t as1, intptr_t b, int64_t boff,
                       int64_t bbs, int64_t bs0, int64_t bs1, intptr_t c,
                       int64_t coff, int64_t cbs, int64_t cs0, int64_t cs1,
                       int64_t m, int64_t n, int64_t k) {
  gemmBatch(batch, (const float *)a + aoff, abs, as0, as1,
            (const float *)b + boff, bbs, bs0, bs1, (float *)c + coff, cbs,
            cs0, cs1, m, n, k);
}

/* Rows [y0, y1) of one image's im2col: col[(ch, i, j), (y - y0, x)] =
 * x[ch, y * sh + i * dh - top, x * sw + j * dw - left], zero outside the
 * h x w input (the convolution's zero padding), a (c*kh*kw) x ((y1-y0)*ow)
 * row-major matrix. */
static void im2colRows(const float *x, int64_t c, int64_t h, int64_t w,
                       int64_t kh, int64_t kw, int64_t ow, int64_t sh,
                       int64_t sw, int64_t dh, int64_t dw, int64_t top,
                       int64_t left, int64_t y0, int64_t y1, float *col) {
  int64_t cols = (y1 - y0) * ow;
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        float *row = col + ((ch * kh + i) * kw + j) * cols;
        /* Output columns [x0, x1) read inside the input row. */
        int64_t shift = j * dw - left, x0 = 0, x1 = ow;
        if (shift < 0)
          x0 = (-shift + sw - 1) / sw;
        if ((ow - 1) * sw + shift >= w)
          x1 = w - shift <= 0 ? 0 : (w - shift + sw - 1) / sw;
        if (x1 < x0)
          x1 = x0;
        for (int64_t y = y0; y < y1; ++y) {
          float *dst = row + (y - y0) * ow;
          int64_t yy = y * sh + i * dh - top;
          if (yy < 0 || yy >= h) {
            memset(dst, 0, sizeof(float) * ow);
            continue;
          }
          const float *src = x + (ch * h + yy) * w + shift;
          for (int64_t xx = 0; xx < x0; ++xx)
            dst[xx] = 0.0f;
          if (sw == 1)
            memcpy(dst + x0, src + x0, sizeof(float) * (x1 - x0));
          else
            for (int64_t xx = x0; xx < x1; ++xx)
              dst[xx] = src[xx * sw];
          for (int64_t xx = x1; xx < ow; ++xx)
            dst[xx] = 0.0f;
        }
      }
}

/* out[N,F,OH,OW] (+)= conv(in[N,C,H,W], filter[F,C,KH,KW]), all contiguous,
 * as GEMMs filter[F, C*KH*KW] x im2col. `top`/`left` rows and columns of
 * zero padding are read around the input (the bottom and right ones follow
 * from the output size). The output starts as it is (init 0: accumulate,
 * linalg's semantics), as zeros (1), or as bias[F] broadcast (2). Then,
 * when `epilogue` is set, result = [relu](out [+ residual]) (flags 1 add
 * the residual, 2 relu; result may be out or residual itself), elementwise.
 *
 * The work is split in tasks of whole output rows of one image (all the
 * rows when there are at least as many images as threads); each task
 * copies its own im2col block into its thread's buffer, runs its GEMM and
 * its part of the epilogue, so the copy is parallel and each block is still
 * in cache when the next step reads it. A 1x1, stride-1 convolution without
 * padding reads the input rows in place. */
KILN_EXPORT void kiln_abi_conv2d_nchw_f32(
    intptr_t in, int64_t inoff, int64_t n, int64_t c, int64_t h, int64_t w,
    intptr_t filter, int64_t filteroff, int64_t f, int64_t kh, int64_t kw,
    intptr_t out, int64_t outoff, int64_t oh, int64_t ow, int64_t sh,
    int64_t sw, int64_t dh, int64_t dw, int64_t top, int64_t left,
    int64_t init, intptr_t bias, int64_t biasoff, int64_t epilogue,
    intptr_t residual, int64_t residualoff, intptr_t result,
    int64_t resultoff) {
  const float *input = (const float *)in + inoff;
  const float *weights = (const float *)filter + filteroff;
  const float *biases = init == 2 ? (const float *)bias + biasoff : NULL;
  const float *res = epilogue & 1 ? (const float *)residual + residualoff
                                  : NULL;
  float *output = (float *)out + outoff;
  float *final = epilogue ? (float *)result + resultoff : NULL;
  int64_t ckk = c * kh * kw, spatial = oh * ow;
  if (n == 0 || f == 0 || spatial == 0)
    return;
  int direct = kh == 1 && kw == 1 && sh == 1 && sw == 1 && oh == h &&
               ow == w && top == 0 && left == 0;
  int threads = threadsFor((double)n * f * spatial * ckk);
  int parts = n >= threads ? 1 : (int)((threads + n - 1) / n);
  if (parts > oh)
    parts = (int)oh;
  int64_t tasks = n * parts;
  int64_t rowsPerPart = (oh + parts - 1) / parts;
#pragma omp parallel num_threads(threads)
  {
    int self = omp_get_thread_num(), team = omp_get_num_threads();
    float *col = direct ? NULL
                        : (float *)malloc(sizeof(float) * ckk *
                                          rowsPerPart * ow);
    for (int64_t task = self; task < tasks; task += team) {
      int64_t img = task / parts, y0, y1;
      splitRange(oh, parts, (int)(task % parts), 1, &y0, &y1);
      if (y0 >= y1)
        continue;
      const float *x = input + img * c * h * w;
      const float *cols = x + y0 * ow;
      int64_t ldb = spatial, len = (y1 - y0) * ow;
      float *block = output + img * f * spatial + y0 * ow;
      if (!direct) {
        im2colRows(x, c, h, w, kh, kw, ow, sh, sw, dh, dw, top, left, y0, y1,
                   col);
        cols = col;
        ldb = len;
      }
      if (biases)
        for (int64_t fi = 0; fi < f; ++fi)
          for (int64_t p = 0; p < len; ++p)
            block[fi * spatial + p] = biases[fi];
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)f,
                  (int)len, (int)ckk, 1.0f, weights, (int)ckk, cols, (int)ldb,
                  init == 1 ? 0.0f : 1.0f, block, (int)spatial);
      if (!epilogue)
        continue;
      int64_t base = img * f * spatial + y0 * ow;
      for (int64_t fi = 0; fi < f; ++fi) {
        const float *acc = block + fi * spatial;
        const float *r = res ? res + base + fi * spatial : NULL;
        float *dst = final + base + fi * spatial;
        for (int64_t p = 0; p < len; ++p) {
          float v = acc[p];
          if (r)
            v += r[p];
          /* arith.maximumf(v, 0): NaN stays NaN, -0 becomes +0. */
          if (epilogue & 2 && (v < 0.0f || v == 0.0f))
            v = 0.0f;
          dst[p] = v;
        }
      }
    }
    free(col);
  }
}

extern void openblas_set_num_threads(int);

/* OpenBLAS always runs on the calling thread (see the top of this file):
 * from the moment the model is loaded (libopenblas, a dependency, is
 * initialized before this constructor runs), and again whenever the thread
 * count is set. The threads are the OpenMP team's, set by
 * kiln_abi_set_num_threads. */
__attribute__((constructor)) static void singleThreadedBlas(void) {
  openblas_set_num_threads(1);
}

KILN_EXPORT void kiln_abi_blas_set_num_threads(int32_t threads) {
  (void)threads;
  openblas_set_num_threads(1);
}
