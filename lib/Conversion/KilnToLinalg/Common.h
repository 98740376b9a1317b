//===- Common.h - Helpers shared by the kiln -> linalg patterns -*- C++ -*-===//
#ifndef KILN_LIB_CONVERSION_KILNTOLINALG_COMMON_H
#define KILN_LIB_CONVERSION_KILNTOLINALG_COMMON_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln::lowering {

/// The signless form of an element type (ui8 -> i8); others unchanged.
mlir::Type toSignless(mlir::Type type);
/// `type` (tensor or scalar) with a signless element type.
mlir::Type toSignlessType(mlir::Type type);
/// True for ui8/ui16/ui32/ui64 and for i1 (bool converts as unsigned).
bool isUnsignedInt(mlir::Type kilnElementType);

/// The ONNX node an op came from, for messages: "'name' (kiln.op)".
std::string describe(mlir::Operation *op);
/// Emits "cannot lower <describe(op)> to the CPU: <why>" on the op and
/// returns failure (for use as the result of a pattern).
mlir::LogicalResult unsupported(mlir::Operation *op, const llvm::Twine &why);

/// A tensor.empty of a static type.
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType type);
/// A tensor of `type` filled with `value` (linalg.fill of tensor.empty).
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type, mlir::Value value);
/// A scalar constant of a signless int, index or float type.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type type, double value);
/// The identity value of a reduction in `type`: +inf/-inf for floats, the
/// largest/smallest integer (signed or unsigned per `kilnType`).
mlir::Value lowestValue(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Type kilnType);
mlir::Value highestValue(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Type kilnType);

/// The indexing map reading an operand of `operandShape` for a result of
/// `resultShape` under numpy (ONNX multidirectional) broadcasting: dims are
/// aligned on the right; a size-1 operand dim against a larger result dim
/// reads index 0.
mlir::AffineMap broadcastMap(llvm::ArrayRef<int64_t> operandShape,
                             llvm::ArrayRef<int64_t> resultShape,
                             mlir::MLIRContext *context);

using ScalarBodyFn = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// A linalg.generic computing `resultType` elementwise from `inputs`
/// (broadcast as ONNX does); `body` gets one scalar per input and returns
/// the result scalar (of resultType's element type).
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::ValueRange inputs,
                             mlir::RankedTensorType resultType,
                             ScalarBodyFn body);

/// Converts scalar `value` from kiln element type `from` to kiln element
/// type `to` with ONNX Cast semantics (float->int truncates toward zero,
/// x->bool is x != 0, unsigned sources and bool zero-extend). `value` has
/// the signless type of `from`; the result the signless type of `to`.
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value value, mlir::Type from, mlir::Type to);

/// The values of a constant tensor operand (kiln.constant or arith.constant
/// after conversion), as int64s; failure when not a constant.
mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(mlir::Value value);

/// Normalizes an ONNX axis (negative counts from the end).
int64_t normalizeAxis(int64_t axis, int64_t rank);

/// True when every tensor operand and result of `op` has a static shape.
bool hasStaticShapes(mlir::Operation *op);

} // namespace kiln::lowering

#endif // KILN_LIB_CONVERSION_KILNTOLINALG_COMMON_H
