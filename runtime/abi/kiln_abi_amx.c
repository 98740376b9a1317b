/*===- kiln_abi_amx.c - AMX: the OS permission and the bf16 GEMM kernel ---===*
 *
 * Intel AMX (Sapphire Rapids and later) multiplies 16-row tiles in eight
 * tile registers. Linux hands out the tile state (XTILEDATA, 8 KiB per
 * thread) only to processes that ask for it: kiln_abi_amx_enabled() asks
 * once per process (arch_prctl ARCH_REQ_XCOMP_PERM; it then holds for every
 * thread) after checking CPUID, and says whether the AMX kernels may run.
 * KILN_NO_AMX=1 says no (tests and measurements of the other kernels).
 *
 * kiln_abi_bf16gemm_f32 is the bf16 matmul of mixed-precision models
 * (`--precision=bf16`; lib/Target/CPU/AmxCalls.cpp replaces linalg.matmul /
 * batch_matmul with bf16 operands and an f32 accumulator by calls here):
 *
 *   C[m, n] += sum_k f32(A[m, k]) * f32(B[k, n])         (f32 accumulation)
 *
 * A [M, K] and B [K, N] row-major (rows may be strided), C [M, N] f32. The
 * caller splits the columns into blocks across threads, one call computing
 * columns [n0, n1). With AMX-BF16: tdpbf16ps on 16 x 32 bf16 tiles, B's
 * block packed per call into pairs of k ([N/16][K/2][16][2], AMX's operand
 * layout), A copied zero padded to whole tiles. Without it, a portable loop
 * (exact products, f32 sums in k order).
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_abi_amx.h"
#include "kiln_abi_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KILN_HAVE_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* bf16: AMX-BF16 (CPUID.7.0:EDX bit 22), else AMX-INT8 (bit 25); both with
 * AMX-TILE (bit 24). */
int kiln_abi_amx_enabled(int bf16) {
#if defined(KILN_HAVE_X86) && defined(__linux__)
  static int permitted = -1; /* the process's tile state, asked once */
  static int cpu = -1;       /* CPUID.7.0:EDX */
  if (cpu < 0) {
    unsigned eax, ebx, ecx, edx;
    cpu = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) ? (int)(edx >> 22)
                                                           : 0;
  }
  if (!kiln_abi_isa_allows(KILN_ISA_AMX))
    return 0;
  int tile = (cpu >> 2) & 1, int8 = (cpu >> 3) & 1, bf = cpu & 1;
  if (!tile || !(bf16 ? bf : int8))
    return 0;
  if (permitted < 0)
    /* ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18. */
    permitted = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  return permitted;
#else
  (void)bf16;
  return 0;
#endif
}

static inline float bf16ToFloat(uint16_t v) {
  uint32_t bits = (uint32_t)v << 16;
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

static void bf16gemmPortable(const uint16_t *a, int64_t lda,
                             const uint16_t *b, int64_t ldb, float *c,
                             int64_t ldc, int64_t m, int64_t k, int64_t n0,
                             int64_t n1) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      float x = bf16ToFloat(a[i * lda + p]);
      for (int64_t j = n0; j < n1; ++j)
        c[i * ldc + j] += x * bf16ToFloat(b[p * ldb + j]);
    }
}

#ifdef KILN_HAVE_X86
#define AMX_BF16_TARGET                                                        \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl")))

/* Tiles: C in tmm0-3 (a 32 x 32 f32 block), A in tmm4-5 (16 rows x 32 k),
 * B in tmm6-7 (16 pairs of k x 16 columns). */
AMX_BF16_TARGET static int bf16gemmAmx(const uint16_t *a, int64_t lda,
                                       const uint16_t *b, int64_t ldb,
                                       float *c, int64_t ldc, int64_t m,
                                       int64_t k, int64_t n0, int64_t n1) {
  int64_t nv = (n1 - n0 + 15) / 16;
  int64_t kps = ((k + 1) / 2 + 15) / 16 * 16; /* pairs of k, whole tiles */
  int64_t ldab = kps * 2, mp = (m + 15) / 16 * 16;
  uint16_t *packed = aligned_alloc(64, (size_t)(nv * kps * 64));
  uint16_t *abuf = aligned_alloc(64, (size_t)(mp * ldab * 2));
  if (!packed || !abuf) {
    free(packed);
    free(abuf);
    return 0;
  }
  /* B's block: 16 columns of rows 2g and 2g + 1 widened to dwords and
   * interleaved, (B[2g][j] | B[2g+1][j] << 16), zeros past K and N. */
  for (int64_t v = 0; v < nv; ++v) {
    int64_t col0 = n0 + v * 16, cols = n1 - col0 < 16 ? n1 - col0 : 16;
    __mmask16 mask = (__mmask16)((1u << cols) - 1);
    for (int64_t g = 0; g < kps; ++g) {
      __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
      if (2 * g < k)
        lo = _mm256_maskz_loadu_epi16(mask, b + 2 * g * ldb + col0);
      if (2 * g + 1 < k)
        hi = _mm256_maskz_loadu_epi16(mask, b + (2 * g + 1) * ldb + col0);
      __m512i pair = _mm512_or_si512(
          _mm512_cvtepu16_epi32(lo),
          _mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16));
      _mm512_store_si512(packed + (v * kps + g) * 32, pair);
    }
  }
  for (int64_t i = 0; i < mp; ++i)
    for (int64_t p = 0; p < ldab; p += 32) {
      __mmask32 mask = i >= m || p >= k ? 0
                       : k - p >= 32    ? ~(__mmask32)0
                                        : (__mmask32)((1u << (k - p)) - 1);
      _mm512_store_si512(abuf + i * ldab + p,
                         _mm512_maskz_loadu_epi16(mask, a + i * lda + p));
    }
  KilnAmxConfig cfg;
  kilnAmxFullTiles(&cfg);
  _tile_loadconfig(&cfg);
  float out[4][256] __attribute__((aligned(64)));
  for (int64_t i = 0; i < mp; i += 32) {
    int twoM = i + 16 < mp;
    for (int64_t v = 0; v < nv; v += 2) {
      int twoN = v + 1 < nv;
      const uint16_t *b0 = packed + v * kps * 32, *b1 = b0 + kps * 32;
      const uint16_t *a0 = abuf + i * ldab, *a1 = a0 + 16 * ldab;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t g = 0; g < kps; g += 16) {
        _tile_loadd(4, a0 + g * 2, ldab * 2);
        _tile_loadd(6, b0 + g * 32, 64);
        _tile_dpbf16ps(0, 4, 6);
        if (twoN) {
          _tile_loadd(7, b1 + g * 32, 64);
          _tile_dpbf16ps(1, 4, 7);
        }
        if (twoM) {
          _tile_loadd(5, a1 + g * 2, ldab * 2);
          _tile_dpbf16ps(2, 5, 6);
          if (twoN)
            _tile_dpbf16ps(3, 5, 7);
        }
      }
      _tile_stored(0, out[0], 64);
      _tile_stored(1, out[1], 64);
      _tile_stored(2, out[2], 64);
      _tile_stored(3, out[3], 64);
      kilnAmxAccumulate(c, ldc, i, n0 + v * 16, m, n1, out, 1);
    }
  }
  _tile_release();
  free(abuf);
  free(packed);
  return 1;
}
#endif

/* 1 when kiln_abi_bf16gemm_f32 runs on AMX here. */
int kiln_abi_bf16gemm_has_amx(void) {
#ifdef KILN_HAVE_X86
  return __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && kiln_abi_amx_enabled(1);
#else
  return 0;
#endif
}

/* Pointers as (aligned base, offset in elements), strides in elements, as
 * kiln_abi_qgemm_s32. */
void kiln_abi_bf16gemm_f32(intptr_t aBase, intptr_t aOff, intptr_t lda,
                           intptr_t bBase, intptr_t bOff, intptr_t ldb,
                           intptr_t cBase, intptr_t cOff, intptr_t ldc,
                           intptr_t m, intptr_t k, intptr_t n0, intptr_t n1) {
  const uint16_t *a = (const uint16_t *)aBase + aOff;
  const uint16_t *b = (const uint16_t *)bBase + bOff;
  float *c = (float *)cBase + cOff;
  if (n0 >= n1 || m <= 0)
    return;
#ifdef KILN_HAVE_X86
  if (kiln_abi_bf16gemm_has_amx() &&
      bf16gemmAmx(a, lda, b, ldb, c, ldc, m, k, n0, n1))
    return;
#endif
  bf16gemmPortable(a, lda, b, ldb, c, ldc, m, k, n0, n1);
}
