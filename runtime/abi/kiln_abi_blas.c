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
 * The sub-GEMMs are cut by the call's shape alone (piecesFor), so the
 * result does not depend on the thread count.
 *
 *===----------------------------------------------------------------------===*/
#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_abi_isa.h"

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
/* Multiply-adds per piece of a split call, and the most pieces. */
#define KILN_PIECE_MACS (1 << 18)
#define KILN_MAX_PIECES 16

/* How many pieces a call of `macs` multiply-adds is cut into: 1 below
 * KILN_MIN_PARALLEL_MACS or inside a parallel region (the generated code's
 * loop already spread the work; omp_get_level counts a region of one
 * thread too, so that --threads 1 cuts as --threads 4 does), else one per
 * KILN_PIECE_MACS, at least 2 and at most KILN_MAX_PIECES.
 *
 * The pieces depend on the call's shape alone, never on the thread count,
 * and the threads take whole pieces: OpenBLAS picks its kernel by a GEMM's
 * size (0.3.21's small-matrix kernels below 100^3 multiply-adds sum in
 * another order than its blocked ones), so pieces cut for the team would
 * make the result change with --threads. */
static int64_t piecesFor(double macs) {
  if (omp_get_level() > 0 || macs < KILN_MIN_PARALLEL_MACS)
    return 1;
  double pieces = macs / KILN_PIECE_MACS;
  if (pieces < 2)
    return 2;
  return pieces > KILN_MAX_PIECES ? KILN_MAX_PIECES : (int64_t)pieces;
}

/* The team for `tasks` pieces: the OpenMP threads, at most one per piece. */
static int teamFor(int64_t tasks) {
  int threads = omp_get_level() > 0 ? 1 : omp_get_max_threads();
  if (threads > tasks)
    threads = (int)tasks;
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
  /* Parts per GEMM, so that batch * parts covers the pieces. */
  int64_t pieces = piecesFor((double)batch * m * n * k);
  int parts = batch >= pieces ? 1 : (int)((pieces + batch - 1) / batch);
  int splitRows = m >= n;
  int64_t tasks = batch * parts;
#pragma omp parallel num_threads(teamFor(tasks))
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

/* Kiln's convolution micro-kernel: tile[MR][NR] += W[MR x K] * B[K x NR]
 * (W rows K apart, B rows ldb apart), the tile kept in vector registers
 * over all of K: per k one row of B (two vectors) and MR broadcasts of W,
 * 2*MR FMAs. NR = 2 vectors. One copy per vector width, compiled for that
 * ISA (the archive itself is built for any x86-64; the caller picks one with
 * __builtin_cpu_supports). OpenBLAS's SGEMM packs both operands on every
 * call (the im2col a second time), which at these sizes cost as much as the
 * FMAs; here the im2col rows are read in place. */
#define KILN_CONV_KERNEL(NAME, TARGET, VL, MR)                                 \
  typedef float NAME##Vec __attribute__((vector_size(VL * 4), aligned(4)));    \
  __attribute__((target(TARGET))) static void NAME(                            \
      const float *w, int64_t k, const float *b, int64_t ldb, float *tile) {   \
    NAME##Vec acc0[MR], acc1[MR];                                              \
    for (int r = 0; r < MR; ++r) {                                             \
      acc0[r] = *(const NAME##Vec *)(tile + r * 2 * VL);                       \
      acc1[r] = *(const NAME##Vec *)(tile + r * 2 * VL + VL);                  \
    }                                                                          \
    for (int64_t p = 0; p < k; ++p) {                                          \
      NAME##Vec b0 = *(const NAME##Vec *)(b + p * ldb);                        \
      NAME##Vec b1 = *(const NAME##Vec *)(b + p * ldb + VL);                   \
      for (int r = 0; r < MR; ++r) {                                           \
        float a = w[r * k + p];                                                \
        acc0[r] += a * b0;                                                     \
        acc1[r] += a * b1;                                                     \
      }                                                                        \
    }                                                                          \
    for (int r = 0; r < MR; ++r) {                                             \
      *(NAME##Vec *)(tile + r * 2 * VL) = acc0[r];                             \
      *(NAME##Vec *)(tile + r * 2 * VL + VL) = acc1[r];                        \
    }                                                                          \
  }

KILN_CONV_KERNEL(convTileAvx512, "avx512f,fma", 16, 8)
KILN_CONV_KERNEL(convTileAvx2, "avx2,fma", 8, 6)

typedef void (*ConvTileFn)(const float *, int64_t, const float *, int64_t,
                           float *);

struct ConvKernel {
  ConvTileFn tile;
  int mr, nr;
};

/* The micro-kernel for this CPU; tile NULL without AVX2 (then OpenBLAS). */
static struct ConvKernel convKernel(void) {
  struct ConvKernel kernel = {NULL, 0, 0};
  __builtin_cpu_init();
  if (kiln_abi_isa_allows(KILN_ISA_AVX512) &&
      __builtin_cpu_supports("avx512f")) {
    kernel.tile = convTileAvx512;
    kernel.mr = 8;
    kernel.nr = 32;
  } else if (kiln_abi_isa_allows(KILN_ISA_AVX2) &&
             __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    kernel.tile = convTileAvx2;
    kernel.mr = 6;
    kernel.nr = 16;
  }
  return kernel;
}

/* The convolution micro-kernel that runs here: 2 AVX-512, 1 AVX2, 0 none
 * (OpenBLAS). For the kernel tests. */
int kiln_abi_conv_kernel_isa(void) {
  struct ConvKernel kernel = convKernel();
  return kernel.tile == convTileAvx512 ? 2 : kernel.tile == convTileAvx2 ? 1
                                                                         : 0;
}

/* What a convolution call does around its GEMMs (see below). */
struct ConvOutput {
  float *out;          /* the convolution's output, [F, spatial] per image */
  int64_t spatial;     /* oh * ow: the distance between channels */
  int init;            /* 0 accumulate into out, 1 zeros, 2 the bias */
  const float *bias;   /* [F] */
  int epilogue;        /* 1 add the residual, 2 relu (bits) */
  const float *residual; /* same layout as out */
  float *result;
};

/* One output row segment: out[p] = v, and with an epilogue,
 * result[p] = [relu](v [+ residual[p]]). `result` may be out or residual. */
static void storeRow(const struct ConvOutput *o, int64_t base,
                     const float *v, int64_t len) {
  float *out = o->out + base;
  if ((!o->epilogue || o->result != o->out) && out != v)
    memcpy(out, v, sizeof(float) * len);
  if (!o->epilogue)
    return;
  float *dst = o->result + base;
  const float *res = o->residual ? o->residual + base : NULL;
  int relu = o->epilogue & 2;
  if (res && relu)
    for (int64_t p = 0; p < len; ++p) {
      float x = v[p] + res[p];
      /* arith.maximumf(x, 0): NaN stays NaN, -0 becomes +0. */
      dst[p] = x <= 0.0f ? 0.0f : x;
    }
  else if (res)
    for (int64_t p = 0; p < len; ++p)
      dst[p] = v[p] + res[p];
  else
    for (int64_t p = 0; p < len; ++p)
      dst[p] = v[p] <= 0.0f ? 0.0f : v[p];
}

/* out[f, base + p] for f < F, p < cols of one image: W[F x K] x B[K x cols]
 * (B rows ldb apart) through the micro-kernel, column panels of nr outer
 * (the panel, K x nr, stays in cache across all of W), filter tiles of mr
 * inner. `scratch` holds K * nr + mr * K + mr * nr floats. */
static void convGemm(struct ConvKernel kernel, const float *w, int64_t f,
                     int64_t k, const float *b, int64_t ldb, int64_t cols,
                     const struct ConvOutput *o, int64_t base,
                     float *scratch) {
  int mr = kernel.mr, nr = kernel.nr;
  float *panel = scratch, *wEdge = panel + k * nr, *tile = wEdge + mr * k;
  int64_t fFull = f / mr * mr;
  if (fFull < f) {
    /* The last, partial filter tile, padded with zero rows. */
    memset(wEdge, 0, sizeof(float) * mr * k);
    memcpy(wEdge, w + fFull * k, sizeof(float) * (f - fFull) * k);
  }
  for (int64_t p0 = 0; p0 < cols; p0 += nr) {
    int64_t width = cols - p0 < nr ? cols - p0 : nr;
    /* The panel is copied to consecutive rows even when whole: read in
     * place, its rows are ldb apart, often a multiple of 4 KiB / K, and
     * then they fall into a few L1 sets and evict each other. */
    for (int64_t q = 0; q < k; ++q) {
      memcpy(panel + q * nr, b + q * ldb + p0, sizeof(float) * width);
      if (width < nr)
        memset(panel + q * nr + width, 0, sizeof(float) * (nr - width));
    }
    const float *bp = panel;
    int64_t ldp = nr;
    for (int64_t f0 = 0; f0 < f; f0 += mr) {
      int64_t rows = f - f0 < mr ? f - f0 : mr;
      for (int r = 0; r < mr; ++r) {
        float *t = tile + r * nr;
        if (r >= rows || o->init == 1) {
          memset(t, 0, sizeof(float) * nr);
        } else if (o->init == 2) {
          for (int j = 0; j < nr; ++j)
            t[j] = o->bias[f0 + r];
        } else {
          memcpy(t, o->out + base + (f0 + r) * o->spatial + p0,
                 sizeof(float) * width);
          memset(t + width, 0, sizeof(float) * (nr - width));
        }
      }
      kernel.tile(rows == mr ? w + f0 * k : wEdge, k, bp, ldp, tile);
      for (int64_t r = 0; r < rows; ++r)
        storeRow(o, base + (f0 + r) * o->spatial + p0, tile + r * nr, width);
    }
  }
}

/* A buffer of at least `floats` floats for the calling thread, kept from
 * call to call. The im2col blocks are hundreds of KiB: malloc'ed per call
 * they came from mmap with fresh pages to fault in until glibc's threshold
 * adapted, which made every run of a freshly loaded model slow.
 *
 * The OpenMP team's threads live as long as the process, but a caller's own
 * threads (one session run from many threads, a server's pool) come and go:
 * a pthread key frees a thread's buffer when it exits. Unloading the model
 * frees the unloading thread's buffer and deletes the key, so loading many
 * models does not use up the process's keys. */
static pthread_key_t bufferKey;
static pthread_once_t bufferKeyOnce = PTHREAD_ONCE_INIT;
static int bufferKeyMade;

static void makeBufferKey(void) {
  bufferKeyMade = pthread_key_create(&bufferKey, free) == 0;
}

__attribute__((destructor)) static void releaseBufferKey(void) {
  if (!bufferKeyMade)
    return;
  free(pthread_getspecific(bufferKey));
  pthread_key_delete(bufferKey);
  bufferKeyMade = 0;
}

static float *threadBuffer(int64_t floats) {
  static __thread float *buffer;
  static __thread int64_t capacity;
  if (floats > capacity) {
    free(buffer);
    capacity = floats + floats / 4;
    buffer = (float *)aligned_alloc(64, (size_t)(capacity * sizeof(float) +
                                                 63) / 64 * 64);
    pthread_once(&bufferKeyOnce, makeBufferKey);
    if (bufferKeyMade)
      pthread_setspecific(bufferKey, buffer);
  }
  return buffer;
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
 * copies its own im2col block into its thread's buffer and runs its GEMM
 * with the initialization and the epilogue applied per register tile, so
 * the copy is parallel and nothing makes a second pass over the output.
 * A 1x1, stride-1 convolution without padding reads the input rows in
 * place. Without AVX2 the GEMM is OpenBLAS's, the rest the same. */
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
  int64_t ckk = c * kh * kw, spatial = oh * ow;
  if (n == 0 || f == 0 || spatial == 0)
    return;
  struct ConvOutput o = {(float *)out + outoff,
                         spatial,
                         (int)init,
                         init == 2 ? (const float *)bias + biasoff : NULL,
                         (int)epilogue,
                         epilogue & 1 ? (const float *)residual + residualoff
                                      : NULL,
                         epilogue ? (float *)result + resultoff : NULL};
  struct ConvKernel kernel = convKernel();
  int direct = kh == 1 && kw == 1 && sh == 1 && sw == 1 && oh == h &&
               ow == w && top == 0 && left == 0;
  int64_t pieces = piecesFor((double)n * f * spatial * ckk);
  int parts = n >= pieces ? 1 : (int)((pieces + n - 1) / n);
  if (parts > oh)
    parts = (int)oh;
  int64_t tasks = n * parts;
  int64_t rowsPerPart = (oh + parts - 1) / parts;
  int64_t scratchSize =
      kernel.tile ? ckk * kernel.nr + kernel.mr * ckk + kernel.mr * kernel.nr
                  : 0;
  int64_t colSize = direct ? 0 : ckk * rowsPerPart * ow;
#pragma omp parallel num_threads(teamFor(tasks))
  {
    int self = omp_get_thread_num(), team = omp_get_num_threads();
    float *col = threadBuffer(colSize + scratchSize);
    float *scratch = col + colSize;
    for (int64_t task = self; task < tasks; task += team) {
      int64_t img = task / parts, y0, y1;
      splitRange(oh, parts, (int)(task % parts), 1, &y0, &y1);
      if (y0 >= y1)
        continue;
      const float *x = input + img * c * h * w;
      const float *cols = x + y0 * ow;
      int64_t ldb = spatial, len = (y1 - y0) * ow;
      int64_t base = img * f * spatial + y0 * ow;
      if (!direct) {
        im2colRows(x, c, h, w, kh, kw, ow, sh, sw, dh, dw, top, left, y0, y1,
                   col);
        cols = col;
        ldb = len;
      }
      if (kernel.tile) {
        convGemm(kernel, weights, f, ckk, cols, ldb, len, &o, base, scratch);
        continue;
      }
      float *block = o.out + base;
      if (o.bias)
        for (int64_t fi = 0; fi < f; ++fi)
          for (int64_t p = 0; p < len; ++p)
            block[fi * spatial + p] = o.bias[fi];
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)f,
                  (int)len, (int)ckk, 1.0f, weights, (int)ckk, cols, (int)ldb,
                  init == 1 ? 0.0f : 1.0f, block, (int)spatial);
      if (o.epilogue)
        for (int64_t fi = 0; fi < f; ++fi)
          storeRow(&o, base + fi * spatial, block + fi * spatial, len);
    }
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
