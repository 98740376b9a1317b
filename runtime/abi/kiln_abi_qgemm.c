/*===- kiln_abi_qgemm.c - Kiln's int8 GEMM kernel (VNNI, AMX) -------------===*
 *
 * The integer matmul of kiln.quantized_matmul (lib/Target/CPU/Int8Calls.cpp
 * replaces its linalg.generic, marked `kiln.int8_matmul`, by calls here):
 *
 *   C[m, n] += sum_k u(A[m, k]) * W[n, k]          (int32, exact)
 *
 * u(a) is the byte a read as u8, or (a xor 0x80) read as u8 = a + 128 for a
 * signed activation: vpdpbusd's left operand is unsigned, and the lowering
 * has already shifted A's zero point by the same 128, so that the shift
 * costs nothing (lib/Conversion/KilnToLinalg/Quant.cpp). A is [M, K] and W
 * [N, K] (the weight stored transposed, so both operands are read along
 * contiguous K); rows may be strided. The caller splits the columns into
 * blocks across threads (an scf.parallel around the call), so one call
 * computes columns [n0, n1).
 *
 * With AVX-512 VNNI (checked once at run time with __builtin_cpu_supports),
 * u8 x s8 products are summed four at a time by vpdpbusd into 16 int32
 * lanes. Two kernels: for M >= 32 the packed one (W's block repacked per
 * call so that each vector holds 16 columns: no horizontal sums, 8 x 32
 * register tile); for small M (batch 1) dot products along K of 1-4 rows
 * of A against 4-8 rows of W, reduced at the end, which needs no packing
 * (W is read once, as the packing would). With AMX-INT8 (and the OS's
 * permission to use it; KILN_NO_AMX=1 turns it off), M >= 4 takes the AMX
 * kernel instead: tdpbusd on
 * 16 x 64-byte tiles, the same packing. A u8 weight, or a CPU without
 * AVX-512 VNNI, takes the portable loop (exact, plain C).
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_abi_amx.h"
#include "kiln_abi_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KILN_HAVE_X86 1
#include <immintrin.h>
#endif


/* The portable kernel: any signedness, any CPU. */
static void qgemmPortable(const uint8_t *a, int64_t lda, uint8_t shift,
                          const uint8_t *w, int64_t ldw, int wUnsigned,
                          int32_t *c, int64_t ldc, int64_t m, int64_t k,
                          int64_t n0, int64_t n1) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n0; j < n1; ++j) {
      const uint8_t *ar = a + i * lda, *wr = w + j * ldw;
      int32_t sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        int32_t x = (int32_t)(uint8_t)(ar[p] ^ shift);
        int32_t y = wUnsigned ? (int32_t)wr[p] : (int32_t)(int8_t)wr[p];
        sum += x * y;
      }
      c[i * ldc + j] += sum;
    }
}

#ifdef KILN_HAVE_X86
#define VNNI_TARGET                                                            \
  __attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline))       \
  static inline

/* One MR x NR tile at rows a[0..MR), columns w[0..NR). MR and NR are
 * compile-time constants at every call site, so the arrays live in
 * registers. K runs in steps of 64 bytes, the tail with masked loads
 * (zeros contribute nothing, also after the sign shift, whose 0x80 bytes
 * are masked to 0 too). */
VNNI_TARGET void vnniTile(const uint8_t *a, int64_t lda, __m512i shift,
                          const int8_t *w, int64_t ldw, int32_t *c,
                          int64_t ldc, int64_t k, int MR, int NR) {
  __m512i acc[4][8];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j)
      acc[i][j] = _mm512_setzero_si512();
  int64_t p = 0;
  for (; p + 64 <= k; p += 64) {
    __m512i av[4], wv[8];
    for (int i = 0; i < MR; ++i)
      av[i] = _mm512_xor_si512(_mm512_loadu_si512(a + i * lda + p), shift);
    for (int j = 0; j < NR; ++j)
      wv[j] = _mm512_loadu_si512(w + j * ldw + p);
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j)
        acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], av[i], wv[j]);
  }
  if (p < k) {
    __mmask64 mask = _cvtu64_mask64(~0ULL >> (64 - (k - p)));
    __m512i av[4], wv[8];
    for (int i = 0; i < MR; ++i)
      av[i] = _mm512_maskz_mov_epi8(
          mask, _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, a + i * lda + p),
                                 shift));
    for (int j = 0; j < NR; ++j)
      wv[j] = _mm512_maskz_loadu_epi8(mask, w + j * ldw + p);
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j)
        acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], av[i], wv[j]);
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j)
      c[i * ldc + j] += _mm512_reduce_add_epi32(acc[i][j]);
}

/* Columns [n0, n1) of all M rows: full tiles, then the edges with smaller
 * constant tiles. */
#define TILE(MR, NR)                                                           \
  vnniTile(a + i * lda, lda, shift, w + j * ldw, ldw, c + i * ldc + j, ldc,    \
           k, MR, NR)

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
qgemmVnni(const uint8_t *a, int64_t lda, uint8_t shiftByte, const int8_t *w,
          int64_t ldw, int32_t *c, int64_t ldc, int64_t m, int64_t k,
          int64_t n0, int64_t n1) {
  __m512i shift = _mm512_set1_epi8((char)shiftByte);
  {
    int64_t jb = n0, je = n1;
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      int64_t j = jb;
      for (; j + 4 <= je; j += 4)
        TILE(4, 4);
      for (; j < je; ++j)
        TILE(4, 1);
    }
    for (; i + 2 <= m; i += 2) {
      int64_t j = jb;
      for (; j + 8 <= je; j += 8)
        TILE(2, 8);
      for (; j < je; ++j)
        TILE(2, 1);
    }
    for (; i < m; ++i) {
      int64_t j = jb;
      for (; j + 8 <= je; j += 8)
        TILE(1, 8);
      for (; j < je; ++j)
        TILE(1, 1);
    }
  }
}
#undef TILE

/* The packed kernel, for M >= 32: the block's columns of W are packed per
 * call into [N/16][K/4][16][4] (zero padded), so that one 64-byte load
 * holds 4 k-steps of 16 columns and vpdpbusd accumulates 16 output columns
 * at once against 4 bytes of an A row broadcast: no horizontal sums. The
 * packing (gathers) reads W once per call, for M / 4 times as many
 * multiply-adds; below M = 32 the dot-product kernel is faster. Tile: MR rows
 * (up to 8) by NV (up to 2) vectors of 16 columns, 16 accumulators; A is
 * copied shifted and padded first so that its 4-byte groups are broadcast
 * from memory (a load uop, not a shuffle-port one). */
VNNI_TARGET void packedTile(const uint8_t *a, int64_t lda,
                            const int8_t *packed, int64_t kg, int32_t *c,
                            int64_t ldc, int64_t cols, int MR, int NV) {
  __m512i acc[8][2];
  for (int i = 0; i < MR; ++i)
    for (int t = 0; t < NV; ++t)
      acc[i][t] = _mm512_setzero_si512();
  for (int64_t g = 0; g < kg; ++g) {
    __m512i wv[2];
    for (int t = 0; t < NV; ++t)
      wv[t] = _mm512_load_si512(packed + ((int64_t)t * kg + g) * 64);
    for (int i = 0; i < MR; ++i) {
      /* A broadcast from memory: a load-port uop, no shuffle port. */
      __m512i av = _mm512_set1_epi32(*(const int32_t *)(a + i * lda + g * 4));
      for (int t = 0; t < NV; ++t)
        acc[i][t] = _mm512_dpbusd_epi32(acc[i][t], av, wv[t]);
    }
  }
  for (int t = 0; t < NV; ++t) {
    int64_t left = cols - 16 * t;
    __mmask16 mask =
        left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    for (int i = 0; i < MR; ++i) {
      int32_t *dst = c + i * ldc + 16 * t;
      __m512i old = _mm512_maskz_loadu_epi32(mask, dst);
      _mm512_mask_storeu_epi32(dst, mask, _mm512_add_epi32(old, acc[i][t]));
    }
  }
}

/* Packs columns [n0, n1) of W into [nv][kgs][16][4] bytes (nv = blocks
 * of 16 columns, kgs >= K/4 groups of 4 bytes, zero padded in both), so
 * that one 64-byte load holds 4 k-steps of 16 columns: the layout of
 * vpdpbusd's and AMX's (VNNI) right operand. NULL when out of memory. */
__attribute__((target("avx512f,avx512bw"))) static int8_t *
packW(const int8_t *w, int64_t ldw, int64_t k, int64_t n0, int64_t n1,
      int64_t kgs) {
  int64_t nv = (n1 - n0 + 15) / 16, kg = (k + 3) / 4;
  int8_t *packed = aligned_alloc(64, (size_t)(nv * kgs * 64));
  if (!packed)
    return NULL;
  /* Full 16-column blocks and full 4-byte groups: one gather of 16
   * dwords (4 bytes of 16 rows of W) per 64 packed bytes. */
  int64_t full = k / 4;
  __m512i rows = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)ldw));
  for (int64_t v = 0; v < nv; ++v) {
    int64_t col0 = n0 + v * 16;
    int whole = col0 + 16 <= n1 && ldw * 16 < (int64_t)1 << 31;
    for (int64_t g = 0; g < kgs; ++g) {
      int8_t *dst = packed + (v * kgs + g) * 64;
      if (whole && g < full) {
        __m512i x = _mm512_i32gather_epi32(rows, w + col0 * ldw + g * 4, 1);
        _mm512_store_si512(dst, x);
        continue;
      }
      if (g >= kg) {
        _mm512_store_si512(dst, _mm512_setzero_si512());
        continue;
      }
      for (int64_t j = 0; j < 16; ++j)
        for (int64_t q = 0; q < 4; ++q) {
          int64_t col = col0 + j, kk = g * 4 + q;
          dst[j * 4 + q] = col < n1 && kk < k ? w[col * ldw + kk] : 0;
        }
    }
  }
  return packed;
}

/* A's m rows shifted (xor 0x80 for i8) into rows of ldab bytes (a multiple
 * of 64 >= K), zero padded past K, and `rows - m` more rows of zeros: the
 * padding multiplies W's zero padding (or is dropped), so it adds nothing.
 * NULL when out of memory. */
__attribute__((target("avx512f,avx512bw"))) static uint8_t *
shiftedA(const uint8_t *a, int64_t lda, uint8_t shiftByte, int64_t m,
         int64_t rows, int64_t k, int64_t ldab) {
  uint8_t *abuf = aligned_alloc(64, (size_t)(rows * ldab));
  if (!abuf)
    return NULL;
  __m512i shift = _mm512_set1_epi8((char)shiftByte);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t p = 0; p < ldab; p += 64) {
      __mmask64 mask =
          i >= m || p >= k ? 0
          : k - p >= 64    ? ~(__mmask64)0
                           : _cvtu64_mask64(~0ULL >> (64 - (k - p)));
      __m512i x = _mm512_maskz_loadu_epi8(mask, a + i * lda + p);
      _mm512_store_si512(abuf + i * ldab + p,
                         _mm512_maskz_mov_epi8(mask,
                                               _mm512_xor_si512(x, shift)));
    }
  return abuf;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static int
qgemmVnniPacked(const uint8_t *a, int64_t lda, uint8_t shiftByte,
                const int8_t *w, int64_t ldw, int32_t *c, int64_t ldc,
                int64_t m, int64_t k, int64_t n0, int64_t n1) {
  int64_t nv = (n1 - n0 + 15) / 16, kg = (k + 3) / 4;
  int8_t *packed = packW(w, ldw, k, n0, n1, kg);
  if (!packed)
    return 0;
  /* A is copied so that the inner loop broadcasts straight from memory; M *
   * K bytes, 64-byte vectors, against M * K * 64 multiply-adds per call. */
  int64_t ldab = (k + 63) / 64 * 64;
  uint8_t *abuf = shiftedA(a, lda, shiftByte, m, m, k, ldab);
  if (!abuf) {
    free(packed);
    return 0;
  }
  for (int64_t i = 0; i < m; i += 8) {
    int mr = m - i < 8 ? (int)(m - i) : 8;
    for (int64_t v = 0; v < nv; v += 2) {
      int nvr = nv - v < 2 ? 1 : 2;
      int64_t cols = n1 - (n0 + v * 16);
      const int8_t *pw = packed + v * kg * 64;
      int32_t *pc = c + i * ldc + n0 + v * 16;
      const uint8_t *pa = abuf + i * ldab;
#define PACKED_CASE(MR)                                                        \
  case MR:                                                                     \
    if (nvr == 2)                                                              \
      packedTile(pa, ldab, pw, kg, pc, ldc, cols, MR, 2);                      \
    else                                                                       \
      packedTile(pa, ldab, pw, kg, pc, ldc, cols, MR, 1);                      \
    break;
      switch (mr) {
        PACKED_CASE(1)
        PACKED_CASE(2)
        PACKED_CASE(3)
        PACKED_CASE(4)
        PACKED_CASE(5)
        PACKED_CASE(6)
        PACKED_CASE(7)
        PACKED_CASE(8)
      }
#undef PACKED_CASE
    }
  }
  free(abuf);
  free(packed);
  return 1;
}
/* The AMX kernel (Sapphire Rapids and later: AMX-TILE + AMX-INT8), for
 * M >= 4 (rows padded to 16: below 4 the VNNI dot products win, at 4-15 the
 * tiles still beat them 1.3-2.5x). Eight tile registers of 16 rows x 64
 * bytes: C in tmm0-3 (a 32 x 32 block of int32), A in tmm4-5 (16 rows x
 * 64 bytes of K each), W in tmm6-7 (16 groups of 4 k-steps x 16 columns,
 * the packed layout above); one tdpbusd does 16 x 16 x 64 multiply-adds.
 * A and W are padded with zeros to whole tiles (16 rows, 64 bytes of K,
 * 16 columns), so every tile is full-sized; the block's result is stored to
 * a buffer and added into C with masks at the edges. The tile
 * configuration is per thread: each call loads it and releases the tiles at
 * the end. */
#define AMX_TARGET                                                             \
  __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw")))

AMX_TARGET static int qgemmAmx(const uint8_t *a, int64_t lda,
                               uint8_t shiftByte, const int8_t *w,
                               int64_t ldw, int32_t *c, int64_t ldc,
                               int64_t m, int64_t k, int64_t n0, int64_t n1) {
  int64_t nv = (n1 - n0 + 15) / 16;
  int64_t kgs = ((k + 3) / 4 + 15) / 16 * 16; /* groups, whole tiles */
  int64_t ldab = kgs * 4, mp = (m + 15) / 16 * 16;
  int8_t *packed = packW(w, ldw, k, n0, n1, kgs);
  if (!packed)
    return 0;
  uint8_t *abuf = shiftedA(a, lda, shiftByte, m, mp, k, ldab);
  if (!abuf) {
    free(packed);
    return 0;
  }
  KilnAmxConfig cfg;
  kilnAmxFullTiles(&cfg);
  _tile_loadconfig(&cfg);
  int32_t out[4][256] __attribute__((aligned(64)));
  for (int64_t i = 0; i < mp; i += 32) {
    int twoM = i + 16 < mp;
    for (int64_t v = 0; v < nv; v += 2) {
      int twoN = v + 1 < nv;
      const int8_t *w0 = packed + v * kgs * 64, *w1 = w0 + kgs * 64;
      const uint8_t *a0 = abuf + i * ldab, *a1 = a0 + 16 * ldab;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      if (twoM && twoN) {
        for (int64_t g = 0; g < kgs; g += 16) {
          _tile_loadd(4, a0 + g * 4, ldab);
          _tile_loadd(5, a1 + g * 4, ldab);
          _tile_loadd(6, w0 + g * 64, 64);
          _tile_loadd(7, w1 + g * 64, 64);
          _tile_dpbusd(0, 4, 6);
          _tile_dpbusd(1, 4, 7);
          _tile_dpbusd(2, 5, 6);
          _tile_dpbusd(3, 5, 7);
        }
      } else {
        for (int64_t g = 0; g < kgs; g += 16) {
          _tile_loadd(4, a0 + g * 4, ldab);
          _tile_loadd(6, w0 + g * 64, 64);
          _tile_dpbusd(0, 4, 6);
          if (twoN) {
            _tile_loadd(7, w1 + g * 64, 64);
            _tile_dpbusd(1, 4, 7);
          }
          if (twoM) {
            _tile_loadd(5, a1 + g * 4, ldab);
            _tile_dpbusd(2, 5, 6);
          }
        }
      }
      _tile_stored(0, out[0], 64);
      _tile_stored(1, out[1], 64);
      _tile_stored(2, out[2], 64);
      _tile_stored(3, out[3], 64);
      kilnAmxAccumulate(c, ldc, i, n0 + v * 16, m, n1, out, 0);
    }
  }
  _tile_release();
  free(abuf);
  free(packed);
  return 1;
}
#endif

/* 1 when the AMX kernel runs: AMX-INT8 is there and allowed
 * (kiln_abi_amx_enabled, kiln_abi_amx.c), and KILN_QGEMM_PORTABLE is not
 * set. */
int kiln_abi_qgemm_has_vnni(void);
int kiln_abi_qgemm_has_amx(void) {
  return kiln_abi_qgemm_has_vnni() && kiln_abi_amx_enabled(0);
}

/* 1 when the VNNI kernel runs: the CPU has AVX-512 VNNI and
 * KILN_QGEMM_PORTABLE is not set (tests and measurements of the fallback). */
int kiln_abi_qgemm_has_vnni(void) {
#ifdef KILN_HAVE_X86
  static int cached = -1;
  if (cached < 0) {
    const char *portable = getenv("KILN_QGEMM_PORTABLE");
    cached = !(portable && *portable && *portable != '0') &&
             kiln_abi_isa_allows(KILN_ISA_AVX512) &&
             __builtin_cpu_supports("avx512vnni") &&
             __builtin_cpu_supports("avx512bw");
  }
  return cached;
#else
  return 0;
#endif
}

/* Pointers arrive as (aligned base, offset in elements), strides in
 * elements, as in kiln_abi_blas.c; flags: bit 0 A is read as u8 as it is
 * (else xor 0x80 first), bit 1 W is u8 (else s8). */
void kiln_abi_qgemm_s32(intptr_t aBase, intptr_t aOff, intptr_t lda,
                        intptr_t wBase, intptr_t wOff, intptr_t ldw,
                        intptr_t cBase, intptr_t cOff, intptr_t ldc,
                        intptr_t m, intptr_t k, intptr_t n0, intptr_t n1,
                        intptr_t flags) {
  const uint8_t *a = (const uint8_t *)aBase + aOff;
  const uint8_t *w = (const uint8_t *)wBase + wOff;
  int32_t *c = (int32_t *)cBase + cOff;
  uint8_t shift = (flags & 1) ? 0 : 0x80;
  int wUnsigned = (flags >> 1) & 1;
  if (n0 >= n1 || m <= 0)
    return;
#ifdef KILN_HAVE_X86
  if (!wUnsigned && kiln_abi_qgemm_has_vnni()) {
    if (m >= 4 && kiln_abi_qgemm_has_amx() &&
        qgemmAmx(a, lda, shift, (const int8_t *)w, ldw, c, ldc, m, k, n0, n1))
      return;
    if (m >= 32 && qgemmVnniPacked(a, lda, shift, (const int8_t *)w, ldw, c,
                                  ldc, m, k, n0, n1))
      return;
    qgemmVnni(a, lda, shift, (const int8_t *)w, ldw, c, ldc, m, k, n0, n1);
    return;
  }
#endif
  qgemmPortable(a, lda, shift, w, ldw, wUnsigned, c, ldc, m, k, n0, n1);
}
