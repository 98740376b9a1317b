//===- OnnxImporter.cpp - ONNX model to kiln IR ---------------------------===//
// Placeholder: replaced by the real importer.
#include "kiln/Import/OnnxImporter.h"
#include "kiln/Dialect/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

mlir::OwningOpRef<mlir::ModuleOp>
kiln::importOnnxFile(llvm::StringRef path, mlir::MLIRContext &context,
                     const ImportOptions &) {
  mlir::emitError(mlir::FileLineColLoc::get(&context, path, 0, 0))
      << "ONNX import is not implemented yet";
  return nullptr;
}

void kiln::registerImportDialects(mlir::DialectRegistry &registry) {
  registry.insert<kiln::KilnDialect, mlir::func::FuncDialect>();
}
