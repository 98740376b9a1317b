//===- OnnxImporter.cpp - ONNX model to kiln IR: the driver ---------------===//
//
// The importer's boundary: loads the model (ModelLoader.cpp), builds the
// module (GraphBuilder.cpp) and turns every exception, ours or libonnx's or
// protobuf's, into one MLIR diagnostic at the file's location.
//
//===----------------------------------------------------------------------===//

#include "kiln/Import/OnnxImporter.h"
#include "ImporterInternal.h"

#include "kiln/Dialect/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

#include <new>

using namespace mlir;

/// Loads with `load`, builds the module, and turns every exception into
/// one diagnostic naming `name`.
template <typename Load>
static OwningOpRef<ModuleOp> importWith(llvm::StringRef name,
                                        MLIRContext &context,
                                        const kiln::ImportOptions &options,
                                        Load load) {
  context.loadDialect<kiln::KilnDialect, func::FuncDialect>();
  // The message names the file itself: kiln-compile prints diagnostics with
  // MLIR's default handler, which would print a file location as
  // loc("model.onnx":0:0).
  auto report = [&]() {
    return emitError(UnknownLoc::get(&context)) << name << ": ";
  };
  try {
    kiln::import::LoadedModel model = load();
    if (!model.conversionFailure.empty())
      emitWarning(UnknownLoc::get(&context))
          << name << ": libonnx cannot convert opset " << model.opset
          << " to " << kiln::import::kLibOnnxMaxOpset << " ("
          << model.conversionFailure << "); importing at opset "
          << model.opset;
    return kiln::import::buildModule(model, &context, name, options);
  } catch (const kiln::import::ImportError &e) {
    report() << e.what();
  } catch (const std::bad_alloc &) {
    report() << "out of memory while importing the model";
  } catch (const std::exception &e) {
    report() << "unexpected error while importing: " << e.what();
  } catch (...) {
    report() << "unexpected error while importing (unknown exception)";
  }
  return nullptr;
}

OwningOpRef<ModuleOp> kiln::importOnnxFile(llvm::StringRef path,
                                           MLIRContext &context,
                                           const ImportOptions &options) {
  return importWith(path, context, options,
                    [&] { return kiln::import::loadModel(path, options); });
}

OwningOpRef<ModuleOp> kiln::importOnnxBytes(llvm::StringRef bytes,
                                            llvm::StringRef name,
                                            llvm::StringRef baseDir,
                                            MLIRContext &context,
                                            const ImportOptions &options) {
  return importWith(name, context, options, [&] {
    return kiln::import::loadModelBytes(bytes, baseDir, options);
  });
}

void kiln::registerImportDialects(mlir::DialectRegistry &registry) {
  registry.insert<kiln::KilnDialect, mlir::func::FuncDialect>();
}
