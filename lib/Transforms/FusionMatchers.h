//===- FusionMatchers.h - Helpers shared by the fusion passes ---*- C++ -*-===//
//
// Small matchers and builders used by kiln-fuse-normalization,
// kiln-fuse-activations, kiln-fuse-epilogues and the fused ops'
// decompositions: reading scalar constants (with a tolerance that fits the
// element type), reduction axes, and making scalar constants.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TRANSFORMS_FUSIONMATCHERS_H
#define KILN_LIB_TRANSFORMS_FUSIONMATCHERS_H

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <optional>

namespace kiln::fusion {

/// The value of `v` when it is a constant with exactly one element (of any
/// rank: ONNX exporters write scalars as `tensor<f32>` or `tensor<1xf32>`),
/// float or integer.
inline std::optional<double> getScalarConstant(mlir::Value v) {
  mlir::ElementsAttr attr;
  if (!v || !mlir::matchPattern(v, mlir::m_Constant(&attr)))
    return std::nullopt;
  if (attr.getNumElements() != 1)
    return std::nullopt;
  mlir::Type et = attr.getElementType();
  if (mlir::isa<mlir::FloatType>(et)) {
    auto values = attr.tryGetValues<llvm::APFloat>();
    if (!values)
      return std::nullopt;
    return (*values->begin()).convertToDouble();
  }
  if (auto it = mlir::dyn_cast<mlir::IntegerType>(et)) {
    auto values = attr.tryGetValues<llvm::APInt>();
    if (!values)
      return std::nullopt;
    llvm::APInt i = *values->begin();
    return it.isUnsigned() ? double(i.getZExtValue())
                           : double(i.getSExtValue());
  }
  return std::nullopt;
}

/// The relative tolerance for comparing a constant of `elementType` with a
/// mathematical constant: about twice the type's rounding error (an
/// exporter writes sqrt(2) rounded to f16 or bf16 in half-precision graphs;
/// their relative rounding errors are at most 2^-11 and 2^-8), and 1e-5 for
/// f32/f64, which tolerates constants written with 6 significant digits.
inline double getTolerance(mlir::Type elementType) {
  if (elementType.isF16())
    return 1e-3;
  if (elementType.isBF16())
    return 8e-3;
  return 1e-5;
}

/// True when `v` is a one-element constant within the relative tolerance of
/// `elementType` of `expected` (which is not 0).
inline bool isScalarNear(mlir::Value v, double expected,
                         mlir::Type elementType) {
  std::optional<double> c = getScalarConstant(v);
  if (!c)
    return false;
  return std::abs(*c - expected) <=
         getTolerance(elementType) * std::abs(expected);
}

/// A rank-0 constant of the float type `elementType` holding `value`.
inline mlir::Value createScalar(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Type elementType, double value) {
  auto type = mlir::RankedTensorType::get({}, elementType);
  mlir::Attribute element = mlir::FloatAttr::get(elementType, value);
  return ConstantOp::create(b, loc,
                            mlir::DenseElementsAttr::get(type, element));
}

/// A 1-D i64 constant.
inline mlir::Value createI64Vector(mlir::OpBuilder &b, mlir::Location loc,
                                   llvm::ArrayRef<int64_t> values) {
  auto type =
      mlir::RankedTensorType::get({int64_t(values.size())}, b.getI64Type());
  return ConstantOp::create(b, loc, mlir::DenseElementsAttr::get(type, values));
}

/// The reduction axes of a ReduceX op (attribute or known operand values),
/// normalized to [0, rank) and sorted; std::nullopt when unknown, empty or
/// out of range.
template <typename ReduceOpT>
std::optional<llvm::SmallVector<int64_t>> getReductionAxes(ReduceOpT op) {
  llvm::SmallVector<int64_t> axes;
  if (auto attr = op.getAxesAttr()) {
    if (!isNone(op.getAxesInput()))
      return std::nullopt;
    llvm::append_range(axes, attr.asArrayRef());
  } else if (!isNone(op.getAxesInput())) {
    std::optional<llvm::SmallVector<int64_t>> known =
        getKnownIntValues(op.getAxesInput());
    if (!known)
      return std::nullopt;
    axes = std::move(*known);
  }
  int64_t rank =
      mlir::cast<mlir::RankedTensorType>(op.getData().getType()).getRank();
  if (axes.empty())
    return std::nullopt;
  for (int64_t &a : axes) {
    if (mlir::ShapedType::isDynamic(a) || a < -rank || a >= rank)
      return std::nullopt;
    if (a < 0)
      a += rank;
  }
  llvm::sort(axes);
  return axes;
}

/// When `axes` (sorted, normalized) are the trailing dims `first .. rank-1`
/// without gaps or repeats, `first`.
inline std::optional<int64_t> getTrailingAxesStart(llvm::ArrayRef<int64_t> axes,
                                                   int64_t rank) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - int64_t(axes.size()) + int64_t(i))
      return std::nullopt;
  return rank - int64_t(axes.size());
}

/// The other operand of the binary op `op` when `v` is one of them (the first
/// match); null when neither is.
inline mlir::Value getOtherOperand(mlir::Operation *op, mlir::Value v) {
  if (op->getNumOperands() != 2)
    return {};
  if (op->getOperand(0) == v)
    return op->getOperand(1);
  if (op->getOperand(1) == v)
    return op->getOperand(0);
  return {};
}

/// The op of type OpT defining `v`, when `v` has exactly one use (the op
/// matched into a fusion and erased with it).
template <typename OpT> OpT getSingleUseDef(mlir::Value v) {
  if (!v || !v.hasOneUse())
    return nullptr;
  return v.getDefiningOp<OpT>();
}

/// The ONNX dtype code of a float element type, as `stash_type` holds it.
inline std::optional<int64_t> getOnnxFloatCode(mlir::Type t) {
  if (t.isF32())
    return 1;
  if (t.isF16())
    return 10;
  if (t.isF64())
    return 11;
  if (t.isBF16())
    return 16;
  return std::nullopt;
}

/// The float element type of an ONNX dtype code; null when not a float.
inline mlir::Type getFloatTypeOfOnnxCode(mlir::MLIRContext *ctx, int64_t code) {
  mlir::Builder b(ctx);
  switch (code) {
  case 1:
    return b.getF32Type();
  case 10:
    return b.getF16Type();
  case 11:
    return b.getF64Type();
  case 16:
    return b.getBF16Type();
  default:
    return {};
  }
}

} // namespace kiln::fusion

#endif // KILN_LIB_TRANSFORMS_FUSIONMATCHERS_H
