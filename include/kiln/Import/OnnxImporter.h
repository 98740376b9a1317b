//===- OnnxImporter.h - ONNX model to kiln IR -------------------*- C++ -*-===//
#ifndef KILN_IMPORT_ONNXIMPORTER_H
#define KILN_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct ImportOptions {
  /// Run libonnx's checker where it knows the model's IR and opset versions.
  bool runChecker = true;
  /// Convert opsets 7..16 to 17 with libonnx's version converter. When off
  /// (or when the converter fails) the importer normalizes the older forms
  /// it knows itself (Clip/Pad/Slice/Squeeze/Unsqueeze/Split/TopK/Dropout/
  /// Reduce* attributes that later became inputs).
  bool convertVersion = true;
  /// Initializers of at least this many bytes become dense_resource blobs.
  int64_t resourceThresholdBytes = 1024;
  /// Static shapes for graph inputs, by input name (what `kiln-compile
  /// --input-shapes=name:2x16x256` sets): each replaces the input's declared
  /// dims, which must have the same rank and agree where they are fixed.
  std::map<std::string, std::vector<int64_t>> inputShapes;
};

/// Imports the ONNX model at `path` (external data files are looked up
/// beside it). On failure emits one diagnostic naming the file, the node
/// (name and op type) and the reason, and returns null.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(llvm::StringRef path,
                                                 mlir::MLIRContext &context,
                                                 const ImportOptions &options = {});

/// Imports a serialized ONNX model held in memory; `name` names it in
/// messages and in the module, external data files are looked up in
/// `baseDir` (none: a model with external data is refused).
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxBytes(llvm::StringRef bytes, llvm::StringRef name,
                llvm::StringRef baseDir, mlir::MLIRContext &context,
                const ImportOptions &options = {});

/// Registers the dialects the importer creates (kiln, func).
void registerImportDialects(mlir::DialectRegistry &registry);

} // namespace kiln

#endif // KILN_IMPORT_ONNXIMPORTER_H
