//===- FoldLinearAlgebra.cpp - Evaluating small MatMuls on constants ------===//
//
// kiln-constant-fold's evaluator of MatMul with numpy semantics (1-D
// promotion, broadcast batch dims). Products are accumulated in the element
// type's precision, in order of k; ONNX Runtime's blocked, vectorized GEMM
// may sum in another order, so float results can differ from it in the last
// bits. Only small products are evaluated (kMaxMultiplyAdds).
//
//===----------------------------------------------------------------------===//

#include "FoldUtils.h"

#include "kiln/Dialect/KilnOps.h"

using namespace mlir;

namespace kiln::fold {

/// More multiply-adds than this are left to run time: folding is for
/// constant subgraphs, not for precomputing a model's layers.
static constexpr int64_t kMaxMultiplyAdds = int64_t(1) << 24;

std::optional<ConstTensor> evaluateLinearAlgebra(Operation *op,
                                                 ConstOperands operands,
                                                 EvalContext &ctx) {
  auto matmul = dyn_cast<MatMulOp>(op);
  if (!matmul || operands.size() != 2 || !operands[0] || !operands[1])
    return std::nullopt;
  auto type = cast<RankedTensorType>(matmul.getType());
  if (!type.hasStaticShape())
    return std::nullopt;
  const ConstTensor &a = *operands[0], &b = *operands[1];
  // Promote 1-D operands to matrices: A to 1xK, B to Kx1.
  SmallVector<int64_t> aShape(a.getType().getShape()), bShape(b.getType().getShape());
  if (aShape.empty() || bShape.empty())
    return std::nullopt;
  if (aShape.size() == 1)
    aShape.insert(aShape.begin(), 1);
  if (bShape.size() == 1)
    bShape.push_back(1);
  int64_t m = aShape[aShape.size() - 2], k = aShape.back(), n = bShape.back();
  if (bShape[bShape.size() - 2] != k)
    return std::nullopt;
  int64_t batch = type.getNumElements() / std::max<int64_t>(m * n, 1);
  if (m * n == 0 || batch * m * n * k > kMaxMultiplyAdds)
    return std::nullopt;
  std::optional<ConstTensor> result = ctx.allocate(type);
  if (!result)
    return std::nullopt;

  // Batch dims broadcast: the batch shape is the result's without the
  // matrix dims (as promoted), right-aligned against each operand's.
  SmallVector<int64_t> batchShape(aShape.size() > bShape.size()
                                      ? ArrayRef(aShape).drop_back(2)
                                      : ArrayRef(bShape).drop_back(2));
  for (size_t i = 0; i < batchShape.size(); ++i) {
    auto dimOf = [&](ArrayRef<int64_t> s) -> int64_t {
      size_t offset = batchShape.size() - (s.size() - 2);
      return i < offset ? 1 : s[i - offset];
    };
    batchShape[i] = std::max(dimOf(aShape), dimOf(bShape));
  }
  auto batchOffset = [&](ArrayRef<int64_t> s, int64_t flat) {
    // The index of operand batch `flat` (a row-major batch index).
    SmallVector<int64_t> batchDims(s.drop_back(2));
    int64_t index = 0, stride = 1;
    for (size_t i = batchShape.size(); i-- > 0;) {
      int64_t coord = flat % batchShape[i];
      flat /= batchShape[i];
      size_t offset = batchShape.size() - batchDims.size();
      if (i < offset)
        continue;
      int64_t d = batchDims[i - offset];
      index += (d == 1 ? 0 : coord) * stride;
      stride *= d;
    }
    return index;
  };

  Type elementType = type.getElementType();
  bool isFloat = a.isFloat(), isF64 = elementType.isF64();
  for (int64_t bi = 0; bi < batch; ++bi) {
    int64_t aBase = batchOffset(aShape, bi) * m * k;
    int64_t bBase = batchOffset(bShape, bi) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int64_t out = (bi * m + i) * n + j;
        if (isFloat && isF64) {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p) {
            double prod = a.getFloat(aBase + i * k + p) * b.getFloat(bBase + p * n + j);
            acc += prod;
          }
          result->setFloat(out, acc);
        } else if (isFloat) {
          // In float, one rounding per multiply and per add (no FMA).
          float acc = 0;
          for (int64_t p = 0; p < k; ++p) {
            float prod = static_cast<float>(a.getFloat(aBase + i * k + p)) *
                         static_cast<float>(b.getFloat(bBase + p * n + j));
            acc += prod;
          }
          result->setFloat(out, roundToType(elementType, acc));
        } else {
          uint64_t acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += static_cast<uint64_t>(a.getInt(aBase + i * k + p)) *
                   static_cast<uint64_t>(b.getInt(bBase + p * n + j));
          result->setInt(out, wrapToType(elementType, acc));
        }
      }
    }
  }
  return result;
}

} // namespace kiln::fold
