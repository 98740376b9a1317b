//===- FuzzOnnxImport.cpp - libFuzzer: ONNX bytes through the importer ----===//
//
// What kiln-compile does first with a model file: parse, libonnx's checks
// (in their child process), Kiln's checks and type inference, building the
// kiln module, and the verifier. Any bytes; an import that fails must say
// why (a diagnostic), one that succeeds must give a module that verifies.
//
//===----------------------------------------------------------------------===//
#include "kiln/Import/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    mlir::DialectRegistry registry;
    kiln::registerImportDialects(registry);
    auto *c = new mlir::MLIRContext(registry,
                                    mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  static std::string path = [] {
    const char *dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/kiln-fuzz-import-" +
           std::to_string(getpid()) + ".onnx";
  }();
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  int errors = 0;
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    errors += d.getSeverity() == mlir::DiagnosticSeverity::Error;
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      kiln::importOnnxFile(path, *context);
  std::remove(path.c_str());
  if (!module) {
    if (errors == 0)
      std::abort(); // a failed import always says why
    return 0;
  }
  if (mlir::failed(mlir::verify(*module)))
    std::abort(); // the importer verifies what it returns
  return 0;
}
