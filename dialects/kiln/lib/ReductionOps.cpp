//===- ReductionOps.cpp - Reductions: inference and verifiers -------------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace kiln;

namespace {
/// What is known about a reduction's axes: their values (kDynamic where
/// unknown), or only their count, or nothing.
struct ReductionAxes {
  bool valuesKnown = false;
  SmallVector<int64_t> values;
  std::optional<int64_t> count;
};
} // namespace

/// Reads the axes from the attribute or the operand (never both).
static FailureOr<ReductionAxes> getReductionAxes(std::optional<Location> loc,
                                                 Value axesInput,
                                                 DenseI64ArrayAttr axesAttr) {
  bool hasOperand = axesInput && !isNone(axesInput);
  if (axesAttr && hasOperand)
    return emitOptionalError(
        loc, "axes must be given as an attribute or as an operand, not both");
  ReductionAxes axes;
  if (axesAttr) {
    axes.valuesKnown = true;
    llvm::append_range(axes.values, axesAttr.asArrayRef());
  } else if (!hasOperand) {
    axes.valuesKnown = true;
  } else {
    auto type = cast<RankedTensorType>(axesInput.getType());
    if (type.getRank() != 1)
      return emitOptionalError(loc, "axes must be a 1-d tensor, got ", type);
    if (std::optional<SmallVector<int64_t>> known = getKnownIntValues(axesInput)) {
      axes.values = std::move(*known);
      axes.valuesKnown = !llvm::any_of(axes.values, ShapedType::isDynamic);
      axes.count = axes.values.size();
    } else if (!type.isDynamicDim(0)) {
      axes.count = type.getDimSize(0);
    }
  }
  if (axes.valuesKnown)
    axes.count = axes.values.size();
  return axes;
}

/// ONNX's ReduceX result type (see the ODS description of Kiln_ReduceOp).
static LogicalResult inferReduction(std::optional<Location> loc, Value data,
                                    Value axesInput, DenseI64ArrayAttr axesAttr,
                                    bool keepdims, bool noopWithEmptyAxes,
                                    SmallVectorImpl<Type> &results) {
  auto dataType = cast<RankedTensorType>(data.getType());
  ArrayRef<int64_t> shape = dataType.getShape();
  int64_t rank = dataType.getRank();
  FailureOr<ReductionAxes> axes = getReductionAxes(loc, axesInput, axesAttr);
  if (failed(axes))
    return failure();

  if (!axes->valuesKnown) {
    // Unknown axes. With keepdims each dim stays or becomes 1: only 1s are
    // certain. Without, only the rank is known, from the number of axes.
    if (keepdims) {
      SmallVector<int64_t> dims;
      for (int64_t d : shape)
        dims.push_back(d == 1 ? 1 : ShapedType::kDynamic);
      results.push_back(tensorOf(dims, dataType.getElementType()));
      return success();
    }
    // (A known count of 0 would have made the values known.)
    if (!axes->count)
      return emitOptionalError(loc, "the rank of the result cannot be inferred: "
                                    "keepdims is 0 and the number of axes is unknown");
    if (*axes->count > rank)
      return emitOptionalError(loc, *axes->count, " axes is more than the rank ",
                               rank, " of data");
    SmallVector<int64_t> dims(rank - *axes->count, ShapedType::kDynamic);
    results.push_back(tensorOf(dims, dataType.getElementType()));
    return success();
  }

  if (axes->values.empty() && noopWithEmptyAxes) {
    results.push_back(dataType);
    return success();
  }
  llvm::SmallBitVector reduced(rank, axes->values.empty());
  for (int64_t axis : axes->values) {
    FailureOr<int64_t> normalized = normalizeAxis(loc, axis, rank, "axes value");
    if (failed(normalized))
      return failure();
    if (*normalized >= rank)
      return emitOptionalError(loc, "axes value ", axis,
                               " is out of range for rank ", rank);
    if (reduced.test(*normalized))
      return emitOptionalError(loc, "axes contains axis ", *normalized, " twice");
    reduced.set(*normalized);
  }
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced.test(i))
      dims.push_back(shape[i]);
    else if (keepdims)
      dims.push_back(1);
  }
  results.push_back(tensorOf(dims, dataType.getElementType()));
  return success();
}

/// ArgMax/ArgMin: `axis` kept as 1 or dropped; i64 indices.
static LogicalResult inferArgReduction(std::optional<Location> loc, Value data,
                                       int64_t axis, bool keepdims,
                                       SmallVectorImpl<Type> &results) {
  auto dataType = cast<RankedTensorType>(data.getType());
  if (dataType.getRank() == 0)
    return emitOptionalError(loc, "data must have rank at least 1");
  FailureOr<int64_t> normalized =
      normalizeAxis(loc, axis, dataType.getRank(), "axis");
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> dims(dataType.getShape());
  if (keepdims)
    dims[*normalized] = 1;
  else
    dims.erase(dims.begin() + *normalized);
  results.push_back(tensorOf(dims, IntegerType::get(data.getContext(), 64)));
  return success();
}

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnReductionOps.cpp.inc"
