//===- FoldUtils.h - Constant tensors for kiln-constant-fold ----*- C++ -*-===//
//
// Private to lib/Transforms: the value representation and the evaluators that
// kiln-constant-fold uses to compute an op's result from constant operands.
//
// A ConstTensor holds a constant's elements independently of how the
// attribute stores them (dense or dense_resource, splat or not): floats as
// doubles (every f16/bf16/f32 value is exactly a double), integers and i1
// sign- or zero-extended to 64 bits as their type reads them. Arithmetic is
// then done in the element type's precision by the evaluators (floats in
// float for f32/f16/bf16, rounded to the element type; integers wrapped to
// their width), so results match ONNX Runtime's CPU kernels.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TRANSFORMS_FOLDUTILS_H
#define KILN_LIB_TRANSFORMS_FOLDUTILS_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <vector>

namespace kiln::fold {

/// Constants of at least this many bytes are created as dense_resource
/// blobs, as the importer does with initializers, so that printed IR stays
/// short; smaller ones (and every i1 or splat constant) are dense attributes.
constexpr int64_t kResourceThresholdBytes = 1024;

/// The bytes one element of `elementType` takes in a constant (i1: one).
int64_t getElementBytes(mlir::Type elementType);

/// True for the unsigned integer types and i1, whose values zero-extend.
bool isZeroExtended(mlir::Type elementType);

/// `bits` truncated to the width of the integer type `elementType`, then
/// sign- or zero-extended back to 64 bits: ONNX's wrap-around.
int64_t wrapToType(mlir::Type elementType, uint64_t bits);

/// `value` rounded (to nearest, ties to even) to the float type
/// `elementType`; f64 values are returned unchanged.
double roundToType(mlir::Type elementType, double value);

/// The elements of a constant tensor; see the file comment.
class ConstTensor {
public:
  /// The elements of `attr`, or std::nullopt when they cannot be read (a
  /// dense_resource whose blob was elided, an unsupported element type).
  static std::optional<ConstTensor> read(mlir::ElementsAttr attr);

  /// A tensor of `type` whose one stored element stands for all (zero).
  static ConstTensor getSplat(mlir::RankedTensorType type);
  /// A tensor of `type` with every element stored (zero-initialized).
  static ConstTensor getDense(mlir::RankedTensorType type);

  mlir::RankedTensorType getType() const { return type; }
  mlir::Type getElementType() const { return type.getElementType(); }
  bool isFloat() const { return isFloatType; }
  bool isSplat() const { return splat; }
  /// The logical element count (that of the type).
  int64_t getNumElements() const { return type.getNumElements(); }

  /// Element `i` (a row-major index of the logical tensor).
  double getFloat(int64_t i) const { return floats[splat ? 0 : i]; }
  int64_t getInt(int64_t i) const { return ints[splat ? 0 : i]; }
  /// Element `i` as a double, whatever the element type.
  double getAsDouble(int64_t i) const;
  void setFloat(int64_t i, double v) { floats[splat ? 0 : i] = v; }
  void setInt(int64_t i, int64_t v) { ints[splat ? 0 : i] = v; }
  /// Copies element `from` of `src` (same element type) to element `to`.
  void copyElement(int64_t to, const ConstTensor &src, int64_t from);

  /// The same elements viewed with `newType` (same element type and count).
  ConstTensor withType(mlir::RankedTensorType newType) const;

  /// True when every stored element is equal (so the tensor can be a splat).
  bool allEqual() const;

  /// The bytes the attribute made by toAttr stores.
  int64_t getStoredBytes() const;

  /// The tensor as an attribute: a splat DenseElementsAttr when all
  /// elements are equal, a DenseResourceElementsAttr named after
  /// `resourceName` for large ones, else a DenseElementsAttr.
  mlir::ElementsAttr toAttr(llvm::StringRef resourceName) const;

private:
  mlir::RankedTensorType type;
  bool isFloatType = false;
  bool splat = false;
  std::vector<double> floats;
  std::vector<int64_t> ints;
};

/// What an evaluation needs beyond the operands.
struct EvalContext {
  /// The largest result, in stored bytes, that may be created.
  int64_t sizeLimit;
  /// Set when an evaluation stopped because its result exceeds sizeLimit.
  bool tooLarge = false;

  /// A dense result of `type`, or std::nullopt (setting tooLarge) when it
  /// would exceed the size limit.
  std::optional<ConstTensor> allocate(mlir::RankedTensorType type);
};

/// The operands of an op being evaluated: one per operand, null for `none`.
using ConstOperands = llvm::ArrayRef<const ConstTensor *>;

/// Evaluators. Each returns std::nullopt when it does not handle `op`, or
/// when the result is undefined in ONNX or not exactly reproducible (integer
/// division by zero, out-of-range casts, ...), or too large (ctx.tooLarge).
/// The op's result type must be static.
std::optional<ConstTensor> evaluateElementwise(mlir::Operation *op,
                                               ConstOperands operands,
                                               EvalContext &ctx);
std::optional<ConstTensor> evaluateDataMovement(mlir::Operation *op,
                                                ConstOperands operands,
                                                EvalContext &ctx);
std::optional<ConstTensor> evaluateLinearAlgebra(mlir::Operation *op,
                                                 ConstOperands operands,
                                                 EvalContext &ctx);
std::optional<ConstTensor> evaluateReduction(mlir::Operation *op,
                                             ConstOperands operands,
                                             EvalContext &ctx);

/// Split: one tensor per result, each a slice of `input` along the axis
/// whose size is that result's dim (the result types must be static).
std::optional<llvm::SmallVector<ConstTensor>>
evaluateSplit(mlir::Operation *op, const ConstTensor &input, EvalContext &ctx);

/// Casts one element as ONNX Cast does (see FoldElementwise.cpp); false
/// when the result is undefined (NaN or out-of-range float to integer).
bool castElement(const ConstTensor &src, int64_t from, ConstTensor &dst,
                 int64_t to);

/// The integer elements of a small constant operand (axes, starts, ...).
std::optional<llvm::SmallVector<int64_t>> getInts(const ConstTensor *t);

} // namespace kiln::fold

#endif // KILN_LIB_TRANSFORMS_FOLDUTILS_H
