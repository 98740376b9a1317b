//===- ShapeUtils.h - Arithmetic shared by shape inference and folds -*- C++ -*-===//
//
// Private to the kiln dialect library: the ONNX rules that both an op's
// inferReturnTypes and kiln::getKnownIntValues apply.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_LIB_SHAPEUTILS_H
#define KILN_DIALECT_LIB_SHAPEUTILS_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

namespace kiln {

/// The dims [first, second) that ONNX Shape with `start` and `end` (absent:
/// the rank) takes of a tensor of rank `rank`: negative values count from the
/// rank, then both are clamped to [0, rank].
inline std::pair<int64_t, int64_t> shapeOpRange(int64_t rank, int64_t start,
                                                std::optional<int64_t> end) {
  auto clampDim = [&](int64_t i) {
    return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank);
  };
  int64_t first = clampDim(start), last = clampDim(end.value_or(rank));
  return {first, std::max(first, last)};
}

/// The number of elements of ONNX Range(start, limit, delta):
/// max(ceil((limit - start) / delta), 0); std::nullopt when delta is 0.
inline std::optional<int64_t> rangeLength(int64_t start, int64_t limit,
                                          int64_t delta) {
  if (delta == 0)
    return std::nullopt;
  // In 128 bits: limit - start may overflow int64.
  __int128 diff = static_cast<__int128>(limit) - start;
  if (diff == 0 || (diff > 0) != (delta > 0))
    return 0;
  return static_cast<int64_t>((diff + delta - (delta > 0 ? 1 : -1)) / delta);
}

/// The same for floating-point Range.
inline std::optional<int64_t> rangeLength(double start, double limit,
                                          double delta) {
  if (delta == 0)
    return std::nullopt;
  double n = std::ceil((limit - start) / delta);
  if (!(n < 9.2e18))
    return std::nullopt;
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

/// Transpose's permutation: `perm`, or the reversed dims.
inline llvm::SmallVector<int64_t>
transposePerm(std::optional<llvm::ArrayRef<int64_t>> perm, int64_t rank) {
  if (perm)
    return llvm::SmallVector<int64_t>(perm->begin(), perm->end());
  llvm::SmallVector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  return reversed;
}

} // namespace kiln

#endif // KILN_DIALECT_LIB_SHAPEUTILS_H
