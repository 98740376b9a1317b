//===- ShapeInference.h - Helpers for kiln result-type inference -*- C++ -*-===//
//
// Shared by the op families' inferReturnTypes and verifiers, and by the
// importer. Dynamic dimensions are mlir::ShapedType::kDynamic throughout.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_SHAPEINFERENCE_H
#define KILN_DIALECT_SHAPEINFERENCE_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace kiln {

/// True when each inferred type is compatible with the actual one: same
/// element type and rank, and no dim static in both with different sizes.
/// An actual type may refine a dynamic dim to a size, and may also be less
/// refined than inference: a pass that folds an operand to a constant (an
/// Expand's shape) lets inference see a size the result type, written
/// before, does not state; the op is still correct.
bool areCompatibleReturnTypes(mlir::TypeRange inferred, mlir::TypeRange actual);

/// The common type of two tensors that may hold the same value (If's
/// branches, a loop-carried value before and after an iteration): same
/// element type and rank, a dim that differs is dynamic. Fails when the
/// element types or ranks differ.
mlir::FailureOr<mlir::RankedTensorType>
joinTensorTypes(mlir::RankedTensorType a, mlir::RankedTensorType b);

/// True when `v` is the `none` value of a missing optional input.
bool isNone(mlir::Value v);

/// Numpy (multidirectional) broadcasting of several shapes. Fails with a
/// diagnostic at `loc` (when given) naming both dims when they conflict.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(std::optional<mlir::Location> loc,
                llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes);

/// Normalizes an ONNX axis in [-rank, rank) to [0, rank); fails with a
/// diagnostic naming the attribute when out of range.
mlir::FailureOr<int64_t> normalizeAxis(std::optional<mlir::Location> loc,
                                       int64_t axis, int64_t rank,
                                       llvm::StringRef what = "axis");

/// What is known at compile time about the values of a 0-d or 1-d integer
/// tensor (a shape, axes, starts, ...): one entry per element, kDynamic where
/// an element is unknown. Looks through constants and through the shape
/// arithmetic that exporters emit (Shape of a partially static tensor,
/// Gather/Slice/Concat/Unsqueeze/Squeeze/Cast/Identity/Reshape, elementwise
/// Add/Sub/Mul/Div/Max/Min on such vectors, ConstantOfShape/Range/Expand of
/// known values). Returns std::nullopt when not even the element count is
/// known. Never creates IR.
std::optional<llvm::SmallVector<int64_t>> getKnownIntValues(mlir::Value v);

/// The same for floating-point scalars/vectors (Resize scales, Clip bounds);
/// std::nullopt when any element is unknown.
std::optional<llvm::SmallVector<double>> getKnownFloatValues(mlir::Value v);

// Details of getKnownIntValues / getKnownDims (lib/KnownValues.cpp):
// - Any statically shaped integer tensor of at most 256 elements gets a
//   vector (all kDynamic when nothing is known), row-major for rank > 1;
//   larger, dynamically shaped or non-integer tensors give std::nullopt.
// - kDynamic (INT64_MIN) means unknown, so a constant INT64_MIN reads as
//   unknown (exporters' "to the start" Slice end is usually -INT64_MAX).
// - Integer kiln.div truncates toward zero, as ONNX Runtime's Div does
//   (-7 / 2 = -3); division by zero and overflow give unknown elements.
// - i1 and unsigned elements are zero-extended; kiln.cast wraps to the
//   target width and truncates floats toward zero.
// - Ops of other families are matched by name: kiln.identity, kiln.cast,
//   kiln.add/sub/mul/div/max/min/equal/where. The walk is bounded (depth 32,
//   1024 ops per query, memoized) and never creates IR.

/// One element of a shape-like value as getKnownDims sees it: its value, or,
/// when that is unknown (kDynamic), possibly the knowledge that it is the
/// dynamic dim `dim` of the tensor `dimOf` (it came from a kiln.shape of
/// `dimOf`). Reshape uses this to infer a -1 next to `?` dims of its input.
struct KnownDim {
  int64_t value = mlir::ShapedType::kDynamic;
  mlir::Value dimOf;
  int64_t dim = -1;
  bool isKnown() const { return !mlir::ShapedType::isDynamic(value); }
  bool isDimOf(mlir::Value v, int64_t d) const {
    return !isKnown() && dimOf && dimOf == v && dim == d;
  }
};

/// getKnownIntValues with the symbolic dims of KnownDim. Same contract.
std::optional<llvm::SmallVector<KnownDim>> getKnownDims(mlir::Value v);

/// The earliest (tensor, dim) known to have the same size as dim `dim` of
/// `v`, following Transpose, ops with SameOperandsAndResultType, and Reshape
/// dims copied (0) or taken from a kiln.shape. getKnownDims' `dimOf`/`dim`
/// are in this form, so that equal dynamic dims of different tensors (x and
/// transpose(reshape(x, ...))) compare equal.
std::pair<mlir::Value, int64_t> canonicalDim(mlir::Value v, int64_t dim);

/// One axis of ONNX Slice on a static dim: the first index, the step and the
/// number of elements taken, after ONNX's clamping of `start` and `end`
/// (negative values count from `dim`; for step > 0 both are clamped to
/// [0, dim], for step < 0 start to [0, dim-1] and end to [-1, dim-1]).
/// `step` must not be 0.
struct SliceAxis {
  int64_t start, step, count;
};
SliceAxis clampSliceAxis(int64_t dim, int64_t start, int64_t end, int64_t step);

/// A ranked tensor type with `shape` and the element type `elementType`.
inline mlir::RankedTensorType tensorOf(llvm::ArrayRef<int64_t> shape,
                                       mlir::Type elementType) {
  return mlir::RankedTensorType::get(shape, elementType);
}

} // namespace kiln

#endif // KILN_DIALECT_SHAPEINFERENCE_H
