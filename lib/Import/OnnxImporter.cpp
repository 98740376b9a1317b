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

OwningOpRef<ModuleOp> kiln::importOnnxFile(llvm::StringRef path,
                                           MLIRContext &context,
                                           const ImportOptions &options) {
  context.loadDialect<kiln::KilnDialect, func::FuncDialect>();
  // The message names the file itself: kiln-compile prints diagnostics with
  // MLIR's default handler, which would print a file location as
  // loc("model.onnx":0:0).
  auto report = [&]() {
    return emitError(UnknownLoc::get(&context)) << path << ": ";
  };
  try {
    import::LoadedModel model = import::loadModel(path, options);
    return import::buildModule(model, &context, path, options);
  } catch (const import::ImportError &e) {
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

void kiln::registerImportDialects(mlir::DialectRegistry &registry) {
  registry.insert<kiln::KilnDialect, mlir::func::FuncDialect>();
}
