//===- KilnToLinalg.h - Patterns lowering kiln ops to linalg ----*- C++ -*-===//
//
// The kiln -> linalg/tensor/arith/math conversion is split by op family, one
// file per family under lib/Conversion/KilnToLinalg/, each contributing its
// patterns through one populate function. All patterns work on tensors with
// static shapes and see operands already type-converted (unsigned integer
// element types made signless by KilnTypeConverter); they read the kiln
// op's own types (op.getX().getType()) when signedness matters.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CONVERSION_KILNTOLINALG_H
#define KILN_CONVERSION_KILNTOLINALG_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {

/// Kiln's element types on tensors map to themselves, except unsigned
/// integers (ui8, ui16, ...), which become signless (i8, i16, ...): arith
/// works on signless integers only.
class KilnTypeConverter : public mlir::TypeConverter {
public:
  KilnTypeConverter();
};

/// kiln.constant, kiln.none and other core ops (Core family).
void populateCoreToLinalgPatterns(const mlir::TypeConverter &converter,
                                  mlir::RewritePatternSet &patterns);
/// Unary/binary/variadic elementwise ops, Cast, Clip, Where, PRelu, ...
void populateElementwiseToLinalgPatterns(const mlir::TypeConverter &converter,
                                         mlir::RewritePatternSet &patterns);
/// Reduce*, ArgMax/ArgMin.
void populateReductionToLinalgPatterns(const mlir::TypeConverter &converter,
                                       mlir::RewritePatternSet &patterns);
/// MatMul, Gemm, Conv, pooling, normalizations, Softmax family, Pad, ...
void populateNNToLinalgPatterns(const mlir::TypeConverter &converter,
                                mlir::RewritePatternSet &patterns);
/// Reshape, Transpose, Concat, Slice, Gather, Expand, Tile, Split, ...
void populateShapeToLinalgPatterns(const mlir::TypeConverter &converter,
                                   mlir::RewritePatternSet &patterns);
/// QuantizeLinear, DequantizeLinear and the integer ops.
void populateQuantToLinalgPatterns(const mlir::TypeConverter &converter,
                                   mlir::RewritePatternSet &patterns);

/// If, Loop and Scan (and their kiln.yield) to scf.if, scf.while and scf.for
/// on tensors.
void populateControlFlowToSCFPatterns(const mlir::TypeConverter &converter,
                                      mlir::RewritePatternSet &patterns);

/// All of the above.
void populateKilnToLinalgPatterns(const mlir::TypeConverter &converter,
                                  mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_CONVERSION_KILNTOLINALG_H
