//===- SymbolicShapes.h - Dynamic dims as expressions of symbols -*- C++ -*-===//
//
// Every dynamic dim of a graph input is a symbol: ONNX's dim_param name
// (kept by the importer as `kiln.dims` on @main's arguments), or
// "<input>_dim<k>" for an unnamed one. Two inputs naming the same dim_param
// share the symbol, so the runtime requires them equal. The analysis
// propagates the symbols through the graph: every dim of every value is an
// AffineExpr over them (s_i is symbols()[i]; a static dim is a constant),
// e.g. `s0` for the batch through a CNN, `s0 * s1` after a Reshape that
// flattens batch and sequence, `s1 + s2` for a KV cache grown by Concat.
// Small integer tensors (the Shape -> Gather -> Concat -> Reshape arithmetic
// of PyTorch exports) have their element values tracked the same way.
//
// The artifact records the inputs' symbols and the outputs' expressions; the
// CPU lowering sizes its dynamic tensors from the same expressions, so the
// runtime's output shapes and the code's agree by construction.
//
// Dynamic broadcasting follows IREE and torch-mlir: two dynamic dims that
// meet in an elementwise op are taken to be equal (a dynamic dim is never
// broadcast from 1 at run time).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_ANALYSIS_SYMBOLICSHAPES_H
#define KILN_ANALYSIS_SYMBOLICSHAPES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace kiln {

/// A symbol: its name and the graph input dim that defines it (the first
/// one naming it).
struct ShapeSymbol {
  std::string name;
  unsigned argument; ///< @main's argument index
  int64_t dim;
};

/// A symbol that has a value only inside a loop body (kiln.loop, kiln.scan):
/// the iteration number (`dim` = -1) or dim `dim` of a loop-carried value
/// whose size changes from one iteration to the next (`value` is the body's
/// block argument either way).
struct LoopSymbol {
  mlir::Value value;
  int64_t dim;
};

/// One expression per dim.
using SymbolicDims = llvm::SmallVector<mlir::AffineExpr, 4>;

/// `lhs <= rhs`, assumed by the op's shape (a slice bound within its dim,
/// which ONNX would clamp); the runtime checks it for every call.
struct ShapeConstraint {
  mlir::AffineExpr lhs, rhs;
  mlir::Operation *op;
  bool equal = false; ///< lhs == rhs (else lhs <= rhs)
};

class SymbolicShapes {
public:
  /// Analyzes @main (its graph inputs: the arguments without `kiln.weight`).
  explicit SymbolicShapes(mlir::func::FuncOp main);

  llvm::ArrayRef<ShapeSymbol> symbols() const { return symbolList; }
  /// Control flow: the iteration number of each kiln.loop body, and each
  /// dynamic dim of a loop-carried value (or Scan state) that changes size
  /// between iterations, are symbols too, numbered after symbols() (symbol
  /// symbols().size() + k is loopSymbols()[k]), so that sizes computed from
  /// them inside the body (a Slice of [i, i + 1), a Concat that grows the
  /// carried value) are expressions. They have values only inside their
  /// loop (the lowering binds them there): no shape outside the loop, no
  /// constraint, uses one.
  llvm::ArrayRef<LoopSymbol> loopSymbols() const { return loopSymbolList; }
  /// True when `expr` uses a loop symbol.
  bool usesLoopSymbol(mlir::AffineExpr expr) const;
  /// The symbols of graph input `argument`'s dims (-1 for a static dim).
  llvm::SmallVector<int64_t> inputSymbols(unsigned argument) const;

  /// The dims of `value`, or std::nullopt when a dynamic one could not be
  /// expressed (see whyUnknown).
  std::optional<SymbolicDims> shapeOf(mlir::Value value) const;
  /// The elements of a small integer tensor, when all are known.
  std::optional<SymbolicDims> valuesOf(mlir::Value value) const;
  /// What the shapes assume of the symbols' values.
  llvm::ArrayRef<ShapeConstraint> constraints() const {
    return constraintList;
  }
  /// For a value without a shape: the op where the propagation stopped.
  mlir::Operation *whyUnknown(mlir::Value value) const;

  /// `expr` with the symbols' names: "batch", "batch * seq", "(h - 3) / 2 +
  /// 1" (`/` floor division, `%` remainder: the runtime's grammar,
  /// docs/artifact.md).
  std::string print(mlir::AffineExpr expr) const;

  /// `expr` as index arithmetic, symbol i being `symbolValues[i]`.
  static mlir::Value materialize(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::AffineExpr expr,
                                 mlir::ValueRange symbolValues);

private:
  void visit(mlir::Operation *op);
  void visitRegions(mlir::Operation *op);
  void visitLoopBody(mlir::Operation *op, mlir::Block &body,
                     unsigned firstCarried, mlir::ValueRange initial,
                     unsigned firstCarriedYield);
  std::optional<SymbolicDims> inferControlFlow(mlir::Operation *op,
                                               unsigned result);
  std::optional<SymbolicDims> inferResult(mlir::Operation *op,
                                          unsigned result);
  void trackValues(mlir::Operation *op);
  void addConstraint(mlir::AffineExpr lhs, mlir::AffineExpr rhs,
                     mlir::Operation *op, bool equal = false);
  std::optional<SymbolicDims> known(mlir::Value value) const;
  std::optional<mlir::AffineExpr> indexExpr(mlir::Value value,
                                            unsigned depth = 0) const;
  std::optional<SymbolicDims> knownValues(mlir::Value value) const;

  mlir::MLIRContext *context;
  llvm::SmallVector<mlir::Value> arguments;
  llvm::SmallVector<ShapeSymbol> symbolList;
  llvm::SmallVector<LoopSymbol> loopSymbolList;
  llvm::SmallVector<ShapeConstraint> constraintList;
  llvm::DenseMap<mlir::Value, SymbolicDims> shapes;
  llvm::DenseMap<mlir::Value, SymbolicDims> values;
  llvm::DenseMap<mlir::Value, mlir::Operation *> unknownAt;
};

/// Registers kiln-test-symbolic-shapes (prints the analysis into the IR).
void registerSymbolicShapesTestPass();

} // namespace kiln

#endif // KILN_ANALYSIS_SYMBOLICSHAPES_H
