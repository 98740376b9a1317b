//===- Common.h - Helpers shared by the kiln -> linalg patterns -*- C++ -*-===//
#ifndef KILN_LIB_CONVERSION_KILNTOLINALG_COMMON_H
#define KILN_LIB_CONVERSION_KILNTOLINALG_COMMON_H

#include "kiln/Analysis/SymbolicShapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln::lowering {

/// The signless form of an element type (ui8 -> i8); others unchanged.
mlir::Type toSignless(mlir::Type type);
/// `type` (tensor or scalar) with a signless element type.
mlir::Type toSignlessType(mlir::Type type);
/// True for ui8/ui16/ui32/ui64 and for i1 (bool converts as unsigned).
bool isUnsignedInt(mlir::Type kilnElementType);

/// The element type of a shaped value.
mlir::Type elementTypeOf(mlir::Value value);
/// The type of a ranked tensor value.
mlir::RankedTensorType tensorType(mlir::Value value);
/// True for an absent optional operand (a null value or one of type none).
bool isNone(mlir::Value value);

/// The type the arithmetic of an op on `elementType` is done in: f32 for the
/// half-precision floats, the type itself otherwise.
mlir::Type computeType(mlir::Type elementType);
/// `value` (a scalar) extended to the compute type `type` when narrower.
mlir::Value extendScalar(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value value, mlir::Type type);
/// `value` (a scalar of a compute type) truncated to `type` when wider.
mlir::Value truncateScalar(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value value, mlir::Type type);

/// The ONNX node an op came from, for messages: "'name' (kiln.op)".
std::string describe(mlir::Operation *op);
/// Emits "cannot lower <describe(op)> to the CPU: <why>" on the op and
/// returns failure (for use as the result of a pattern).
mlir::LogicalResult unsupported(mlir::Operation *op, const llvm::Twine &why);

/// A tensor.empty of `type`; `dynamicSizes` holds one size per dynamic dim.
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType type,
                        mlir::ValueRange dynamicSizes = {});
/// A tensor of `type` filled with `value` (linalg.fill of tensor.empty).
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type, mlir::Value value,
                         mlir::ValueRange dynamicSizes = {});

/// Dim `dim` of `tensor` as an index: a constant when static.
mlir::Value dimOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor,
                  int64_t dim);
/// The sizes of `type`'s dynamic dims taken from the same dims of `like`
/// (same rank).
llvm::SmallVector<mlir::Value> dynamicSizesLike(mlir::OpBuilder &b,
                                                mlir::Location loc,
                                                mlir::RankedTensorType type,
                                                mlir::Value like);
/// For each dynamic entry of `loopShape`, the size of an input dim that the
/// loop dim indexes directly (through `maps`); a null value when none does.
llvm::SmallVector<mlir::Value>
loopDynamicSizes(mlir::OpBuilder &b, mlir::Location loc,
                 mlir::ValueRange inputs, llvm::ArrayRef<mlir::AffineMap> maps,
                 llvm::ArrayRef<int64_t> loopShape);

/// The symbolic shapes of the graph being lowered and the index values of
/// their symbols (tensor.dim of the graph inputs, made at @main's start).
/// One lives for the duration of convert-kiln-to-linalg on its thread, so
/// that patterns can size dynamic results by resultSizes.
///
/// It also listens to the conversion (pass `listener()` in the
/// ConversionConfig): while a pattern rewrites a kiln op, emptyTensor,
/// filledTensor, buildParallel and reshapeTo size a dynamic tensor that has
/// the shape of one of the op's operands or results from that value's
/// symbolic dims. A dynamic tensor they cannot size is reported on the op
/// (hadErrors()).
class DynamicDims : public mlir::RewriterBase::Listener {
public:
  DynamicDims(const kiln::SymbolicShapes &shapes, mlir::func::FuncOp main);
  ~DynamicDims() override;
  DynamicDims(const DynamicDims &) = delete;
  DynamicDims &operator=(const DynamicDims &) = delete;

  const kiln::SymbolicShapes &shapes;
  llvm::SmallVector<mlir::Value> symbolValues;

  /// The sizes of the dynamic dims of `type`, from the op being rewritten.
  llvm::SmallVector<mlir::Value> sizesFor(mlir::OpBuilder &b,
                                          mlir::Location loc,
                                          mlir::RankedTensorType type);
  bool hadErrors() const { return errors; }

  void notifyPatternBegin(const mlir::Pattern &, mlir::Operation *op) override {
    current = op;
  }
  void notifyPatternEnd(const mlir::Pattern &, mlir::LogicalResult) override {
    current = nullptr;
  }

private:
  mlir::Operation *current = nullptr;
  bool errors = false;
  DynamicDims *previous = nullptr;
};

/// The DynamicDims of the conversion running on this thread, or null.
DynamicDims *activeDynamicDims();

/// The sizes of the dynamic dims of a kiln op's result (the original value,
/// before conversion), from the symbolic shapes; failure when they are not
/// known.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
resultSizes(mlir::OpBuilder &b, mlir::Location loc, mlir::Value kilnValue);
/// Every dim of `type` (the converted type of `kilnValue`): attributes for
/// the static dims, resultSizes' values for the dynamic ones.
mlir::FailureOr<llvm::SmallVector<mlir::OpFoldResult>>
resultMixedSizes(mlir::OpBuilder &b, mlir::Location loc, mlir::Value kilnValue,
                 mlir::RankedTensorType type);
/// `value` expanded to `type` by `groups`, the expanded dims of `sizes`:
/// tensor.expand_shape, or a tensor.reshape by a shape tensor when a group
/// holds two dynamic dims (MLIR's strided-metadata expansion of such an
/// expand_shape crashes; `value` must be contiguous, as a fresh result is).
mlir::Value expandToSizes(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::RankedTensorType type, mlir::Value value,
                          llvm::ArrayRef<mlir::ReassociationIndices> groups,
                          llvm::ArrayRef<mlir::OpFoldResult> sizes);
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

/// The map of `rank` loop dims selecting the dims `keep` marks.
mlir::AffineMap selectMap(unsigned rank, llvm::ArrayRef<bool> keep,
                          mlir::MLIRContext *context);
/// The map (d0, ..., d{rank-1}) -> (d_first, ..., d_{first+count-1}).
mlir::AffineMap dimRangeMap(int64_t rank, int64_t first, int64_t count,
                            mlir::MLIRContext *context);

using ScalarBodyFn = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// A linalg.generic with one result: `maps` holds the inputs' maps then the
/// output's; `body` gets the input scalars and the output (accumulator)
/// scalar and returns the value to yield.
mlir::Value buildGeneric(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::ValueRange inputs, mlir::Value init,
                         llvm::ArrayRef<mlir::AffineMap> maps,
                         llvm::ArrayRef<mlir::utils::IteratorType> iterators,
                         ScalarBodyFn body);

/// A parallel linalg.generic over `resultType` reading `inputs` through
/// `maps` (the output's identity map is added); `body` gets the input
/// scalars and returns the result scalar.
mlir::Value buildParallel(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::ValueRange inputs,
                          llvm::ArrayRef<mlir::AffineMap> maps,
                          mlir::RankedTensorType resultType, ScalarBodyFn body,
                          mlir::ValueRange dynamicSizes = {});

/// A linalg.generic copying `input` into a new tensor of `resultType`, input
/// element (map applied to the result index) to result element.
mlir::Value copyGeneric(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value input, mlir::AffineMap inputMap,
                        mlir::RankedTensorType resultType);

/// A linalg.generic computing `resultType` elementwise from `inputs`
/// (broadcast as ONNX does); `body` gets one scalar per input and returns
/// the result scalar (of resultType's element type).
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::ValueRange inputs,
                             mlir::RankedTensorType resultType,
                             ScalarBodyFn body);

/// A reduction of `input` (read through identity) over the dims marked in
/// `reduced`, into a tensor of the kept dims of element type `accType`
/// starting from `identity`; `combine(element, acc)` folds one element in
/// (the element is passed as stored, the caller extends it). `initTensor`,
/// when given, is the start instead (a tensor of the kept dims of
/// `accType`).
mlir::Value reduceDims(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::ValueRange inputs,
                       llvm::ArrayRef<mlir::AffineMap> inputMaps,
                       llvm::ArrayRef<int64_t> loopShape,
                       llvm::ArrayRef<bool> reduced, mlir::Type accType,
                       mlir::Value identity, ScalarBodyFn combine,
                       mlir::Value initTensor = {});

/// `value` converted elementwise to element type `elementType` (truncating
/// a compute type back to the op's type); unchanged when it already is.
mlir::Value truncateTensor(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value value, mlir::Type elementType);

/// `value` (static shape) reshaped to the static `type` of the same element
/// count, by a collapse_shape, an expand_shape (when a reassociation
/// exists), or (when the two differ in more than grouping) a collapse to
/// 1-D followed by an expand.
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value value, mlir::RankedTensorType type);
/// `value` reshaped as above to the static `shape`, its element type kept.
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value value, llvm::ArrayRef<int64_t> shape);

/// Reads element 0 of a rank-0 or one-element tensor.
mlir::Value extractFirst(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value tensor);

/// Converts scalar `value` from kiln element type `from` to kiln element
/// type `to` with ONNX Cast semantics (float->int truncates toward zero,
/// x->bool is x != 0, unsigned sources and bool zero-extend). `value` has
/// the signless type of `from`; the result the signless type of `to`.
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value value, mlir::Type from, mlir::Type to);

/// The elements of a constant tensor operand (kiln.constant or
/// arith.constant after conversion); null when not a constant (or not a
/// dense one).
mlir::DenseElementsAttr constantElements(mlir::Value value);

/// The values of a constant tensor operand (kiln.constant or arith.constant
/// after conversion), as int64s; failure when not a constant.
mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(mlir::Value value);

/// Normalizes an ONNX axis (negative counts from the end).
int64_t normalizeAxis(int64_t axis, int64_t rank);

/// True when every tensor operand and result of `op` has a static shape.
bool hasStaticShapes(mlir::Operation *op);
/// True when `op`'s lowering handles dynamic dims.
bool supportsDynamicShapes(mlir::Operation *op);

} // namespace kiln::lowering

#endif // KILN_LIB_CONVERSION_KILNTOLINALG_COMMON_H
