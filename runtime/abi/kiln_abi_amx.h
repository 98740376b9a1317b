/*===- kiln_abi_amx.h - What Kiln's AMX kernels share ---------------------===*
 *
 * The int8 (kiln_abi_qgemm.c) and bf16 (kiln_abi_amx.c) AMX kernels both
 * use all eight tile registers at 16 rows x 64 bytes, compute a 32 x 32
 * block of 32-bit results in tmm0-3, store it to a buffer and add it into C
 * with masks at the edges.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_ABI_AMX_H
#define KILN_ABI_AMX_H

#include <stdint.h>
#include <string.h>

/* 1 when the AMX kernels may run: the CPU has AMX-TILE and AMX-BF16 (bf16)
 * or AMX-INT8, Linux granted the tile state, KILN_NO_AMX is not set. */
int kiln_abi_amx_enabled(int bf16);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* The tile configuration (palette 1) of LDTILECFG. */
typedef struct {
  uint8_t palette, startRow, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} KilnAmxConfig;

/* Every one of the eight tiles 16 rows x 64 bytes. */
static inline void kilnAmxFullTiles(KilnAmxConfig *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->palette = 1;
  for (int t = 0; t < 8; ++t) {
    cfg->colsb[t] = 64;
    cfg->rows[t] = 16;
  }
}

/* Adds the stored 2 x 2 block of 16 x 16 tiles `out` (tile q at rows
 * row0 + (q / 2) * 16, columns col0 + (q % 2) * 16) into the first `m` rows
 * and `n` columns of C (row stride ldc elements): int32 lanes, or float
 * ones when `isFloat`. */
__attribute__((target("avx512f"))) static inline void
kilnAmxAccumulate(void *c, int64_t ldc, int64_t row0, int64_t col0,
                  int64_t m, int64_t n, const void *out, int isFloat) {
  for (int q = 0; q < 4; ++q) {
    int64_t r0 = row0 + (q >> 1) * 16, c0 = col0 + (q & 1) * 16;
    if (r0 >= m || c0 >= n)
      continue;
    int64_t cols = n - c0 < 16 ? n - c0 : 16;
    int64_t rows = m - r0 < 16 ? m - r0 : 16;
    __mmask16 mask = (__mmask16)((1u << cols) - 1);
    for (int64_t r = 0; r < rows; ++r) {
      const char *src = (const char *)out + (q * 256 + r * 16) * 4;
      char *dst = (char *)c + ((r0 + r) * ldc + c0) * 4;
      if (isFloat) {
        __m512 old = _mm512_maskz_loadu_ps(mask, dst);
        _mm512_mask_storeu_ps(dst, mask,
                              _mm512_add_ps(old, _mm512_load_ps(src)));
      } else {
        __m512i old = _mm512_maskz_loadu_epi32(mask, dst);
        _mm512_mask_storeu_epi32(
            dst, mask, _mm512_add_epi32(old, _mm512_load_si512(src)));
      }
    }
  }
}
#endif

#endif /* KILN_ABI_AMX_H */
