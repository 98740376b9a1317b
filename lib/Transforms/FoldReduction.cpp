//===- FoldReduction.cpp - Evaluating reductions on constants -------------===//
//
// kiln-constant-fold's evaluator of ReduceSum, ReduceProd, ReduceMax,
// ReduceMin and ReduceMean (exported shape arithmetic takes the product of
// a shape's dims with ReduceProd). Elements are combined in row-major order
// in the element type: exact for integers (wrapping) and for Max/Min; float
// sums and products may differ from ONNX Runtime's vectorized order in the
// last bits. ReduceMean is folded for floats only (the sum, then one
// division by the count).
//
//===----------------------------------------------------------------------===//

#include "FoldUtils.h"

#include "kiln/Dialect/KilnOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln::fold {
namespace {

enum class Reduction { Sum, Prod, Max, Min, Mean };

/// The dims a reduction reduces: `axes` (attribute or constant operand),
/// all dims when empty, none with noop_with_empty_axes; std::nullopt when
/// an axis is out of range.
std::optional<SmallVector<bool>> getReducedDims(Operation *op, int64_t rank,
                                                const ConstTensor *axesOperand) {
  SmallVector<int64_t> axes;
  if (auto attr = op->getAttrOfType<DenseI64ArrayAttr>("axes"))
    axes.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
  else if (axesOperand)
    axes = *getInts(axesOperand);
  SmallVector<bool> reduced(rank, axes.empty());
  if (axes.empty()) {
    auto noop = op->getAttrOfType<IntegerAttr>("noop_with_empty_axes");
    if (noop && noop.getInt() == 1)
      reduced.assign(rank, false);
    return reduced;
  }
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return std::nullopt;
    reduced[axis < 0 ? axis + rank : axis] = true;
  }
  return reduced;
}

} // namespace

std::optional<ConstTensor> evaluateReduction(Operation *op,
                                             ConstOperands operands,
                                             EvalContext &ctx) {
  std::optional<Reduction> kind =
      llvm::TypeSwitch<Operation *, std::optional<Reduction>>(op)
          .Case([](ReduceSumOp) { return Reduction::Sum; })
          .Case([](ReduceProdOp) { return Reduction::Prod; })
          .Case([](ReduceMaxOp) { return Reduction::Max; })
          .Case([](ReduceMinOp) { return Reduction::Min; })
          .Case([](ReduceMeanOp) { return Reduction::Mean; })
          .Default([](Operation *) { return std::nullopt; });
  if (!kind || operands.empty() || !operands[0])
    return std::nullopt;
  const ConstTensor &x = *operands[0];
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  Type elementType = type.getElementType();
  if (*kind == Reduction::Mean && !x.isFloat())
    return std::nullopt;
  ArrayRef<int64_t> shape = x.getType().getShape();
  int64_t rank = shape.size();
  std::optional<SmallVector<bool>> reduced =
      getReducedDims(op, rank, operands.size() > 1 ? operands[1] : nullptr);
  if (!reduced)
    return std::nullopt;
  // Reducing over no element has an identity only for Sum and Prod.
  if (x.getNumElements() == 0 && *kind != Reduction::Sum &&
      *kind != Reduction::Prod)
    return std::nullopt;

  // Output strides over the kept dims (a reduced dim contributes nothing).
  SmallVector<int64_t> outStride(rank, 0);
  int64_t stride = 1, count = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if ((*reduced)[d]) {
      count *= shape[d];
      continue;
    }
    outStride[d] = stride;
    stride *= shape[d];
  }
  int64_t outCount = stride;
  if (outCount != type.getNumElements())
    return std::nullopt;
  std::optional<ConstTensor> result = ctx.allocate(type);
  if (!result)
    return std::nullopt;
  SmallVector<bool> started(outCount, false);
  bool isUnsigned64 = elementType.isUnsignedInteger(64);

  SmallVector<int64_t> coords(rank, 0);
  for (int64_t i = 0, e = x.getNumElements(); i < e; ++i) {
    int64_t out = 0;
    for (int64_t d = 0; d < rank; ++d)
      out += coords[d] * outStride[d];
    if (x.isFloat()) {
      double v = x.getFloat(i), acc = result->getFloat(out);
      double r;
      if (!started[out]) {
        r = v;
      } else if (*kind == Reduction::Max || *kind == Reduction::Min) {
        bool isMax = *kind == Reduction::Max;
        r = std::isnan(acc) || std::isnan(v)
                ? std::numeric_limits<double>::quiet_NaN()
                : ((v > acc) == isMax && v != acc ? v : acc);
      } else if (elementType.isF64()) {
        r = *kind == Reduction::Prod ? acc * v : acc + v;
      } else {
        float a = static_cast<float>(acc), b = static_cast<float>(v);
        r = roundToType(elementType, *kind == Reduction::Prod ? a * b : a + b);
      }
      result->setFloat(out, r);
    } else {
      int64_t v = x.getInt(i), acc = result->getInt(out);
      int64_t r;
      if (!started[out]) {
        r = v;
      } else if (*kind == Reduction::Max || *kind == Reduction::Min) {
        bool less = isUnsigned64 ? static_cast<uint64_t>(v) < static_cast<uint64_t>(acc)
                                 : v < acc;
        bool isMax = *kind == Reduction::Max;
        r = (v != acc && less != isMax) ? v : acc;
      } else {
        uint64_t a = static_cast<uint64_t>(acc), b = static_cast<uint64_t>(v);
        r = wrapToType(elementType, *kind == Reduction::Prod ? a * b : a + b);
      }
      result->setInt(out, r);
    }
    started[out] = true;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++coords[d] < shape[d])
        break;
      coords[d] = 0;
    }
  }
  // Empty reductions: Sum is 0, Prod is 1.
  for (int64_t o = 0; o < outCount; ++o) {
    if (started[o])
      continue;
    if (result->isFloat())
      result->setFloat(o, *kind == Reduction::Prod ? 1.0 : 0.0);
    else
      result->setInt(o, *kind == Reduction::Prod ? 1 : 0);
  }
  if (*kind == Reduction::Mean) {
    for (int64_t o = 0; o < outCount; ++o) {
      double sum = result->getFloat(o);
      double mean = elementType.isF64()
                        ? sum / static_cast<double>(count)
                        : roundToType(elementType,
                                      static_cast<float>(sum) /
                                          static_cast<float>(count));
      result->setFloat(o, mean);
    }
  }
  return result;
}

} // namespace kiln::fold
