//===- half.h - float16 and bfloat16 <-> float32, bit-exact ---*- C++ -*-===//
//
// The conversions the runtime (the decoder's logits, the all-reduce of
// half tensors) and kiln-run's tensor files share: float16 and bfloat16
// decoded exactly, float32 rounded to nearest even (NaN stays a quiet NaN,
// overflow goes to infinity, float16 subnormals kept). Header-only.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_HALF_H
#define KILN_HALF_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln {

inline float halfBitsToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { // subnormal: normalize
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3FF) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToHalfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t absx = x & 0x7FFFFFFF;
  if (absx >= 0x7F800000) // inf or nan
    return sign | 0x7C00 | (absx > 0x7F800000 ? 0x200 : 0);
  if (absx >= 0x477FF000) // rounds to >= 65520: inf
    return sign | 0x7C00;
  if (absx < 0x38800000) { // subnormal half (or zero): units of 2^-24
    float a;
    std::memcpy(&a, &absx, 4);
    uint32_t m = uint32_t(std::nearbyint(a * 16777216.0f));
    return sign | uint16_t(m);
  }
  // Normal: round to nearest even on the 13 dropped bits.
  uint32_t rounded = absx + 0xFFF + ((absx >> 13) & 1);
  return sign | uint16_t((rounded - (112u << 23)) >> 13);
}

inline float bfloat16BitsToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToBfloat16Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFF) > 0x7F800000)
    return uint16_t((x >> 16) | 0x40); // quiet nan
  x += 0x7FFF + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

} // namespace kiln

#endif // KILN_HALF_H
