//===- ModelSignature.h - What an artifact's metadata describes -*- C++ -*-===//
//
// The inputs, weights and outputs of a compiled model, read off @main once
// the weights are hoisted (kiln-hoist-weights) and before lowering changes
// the element types (uint8 stays uint8 here). Every backend writes these
// into the artifact in this order, which is also the order of the buffers
// passed to kiln_entry.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_MODELSIGNATURE_H
#define KILN_TARGET_MODELSIGNATURE_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct TensorSpec {
  std::string name;
  std::string dtype; // docs/artifact.md's names: float32, uint8, bool, ...
  std::vector<int64_t> shape; // -1 for a symbolic dim
  /// Empty (static), or per dim: "" (static), the symbol (an input) or its
  /// expression over the symbols (an output), as docs/artifact.md writes.
  std::vector<std::string> dimNames;
};

struct WeightSpec : TensorSpec {
  std::string bytes; // dense row-major data, bool as one byte per element
};

struct ModelSignature {
  /// The symbols of the dynamic dims (kiln/Analysis/SymbolicShapes.h).
  std::vector<std::string> symbols;
  /// "lhs <= rhs" over the symbols, which the shapes assume (a slice bound
  /// within its dim); the runtime checks them.
  std::vector<std::string> constraints;
  std::vector<TensorSpec> inputs;
  std::vector<WeightSpec> weights;
  std::vector<TensorSpec> outputs;
};

/// The artifact dtype name of an MLIR element type; empty when it has none.
std::string dtypeName(mlir::Type elementType);

/// Reads the signature off @main (the kiln graph, before the lowering);
/// emits an error and fails on an input or output an artifact cannot
/// describe (an unsupported dtype, a dynamic weight, an output dim not
/// known in terms of the inputs' dims).
mlir::FailureOr<ModelSignature> collectSignature(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_TARGET_MODELSIGNATURE_H
