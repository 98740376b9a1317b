//===- kiln-compile.cpp - ONNX model to a runnable artifact ---------------===//
//
//   kiln-compile model.onnx -o model.kiln              the artifact (the default
//                                                      emit for a -o other than
//                                                      '-' and *.mlir)
//   kiln-compile model.onnx --emit=linalg|llvm|asm|obj -o f   a backend stage
//   kiln-compile model.onnx --target=cuda:sm_80 -o model.kiln   a CUDA
//       artifact (host .so + fatbin + kernel table); --emit=ptx|fatbin|llvm
//       for its stages (docs/cuda-backend.md)
//   kiln-compile model.onnx --emit=kiln -o -          the imported IR
//   kiln-compile model.onnx --emit=graph -o f.mlir    after the graph pipeline
//   kiln-compile model.onnx --emit=graph --summary -o f.mlir
//   kiln-compile model.onnx --emit=graph -O3 --disable-pass=kiln-fuse-attention
//       --report=passes.json --print-pipeline -o f.mlir
//   kiln-compile model.onnx --precision=fp16 [--auto-keep=T] -o model.kiln
//   kiln-compile model.onnx --precision=int8 --calibration=DIR
//       [--calibration-method=minmax|percentile|entropy]
//       [--emit-qdq-onnx=q.onnx] -o model.kiln    post-training quantization
//   kiln-compile model.onnx --precision=int8|fp16|bf16 ...
//       --accuracy-report=r.json [--holdout=DIR2]  against fp32, per output
//                                                   and per layer
//
// A thin main over the driver library (kiln/Driver/Invocation.h): the
// command line becomes CompileOptions (kiln/Driver/Flags.h), the
// invocation compiles, and this file prints its diagnostics and writes the
// output. Output is written only when every step succeeded: a failed
// import leaves no half-written file behind.
//
//===----------------------------------------------------------------------===//

#include "kiln/Driver/Flags.h"
#include "kiln/Driver/Invocation.h"
#include "kiln/Driver/ProgressPrinter.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstdlib>

namespace cl = llvm::cl;

namespace {
cl::OptionCategory category("kiln-compile options");
cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                               cl::desc("<model.onnx | input.mlir>"),
                               cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));
cl::opt<std::string> emit(
    "emit",
    cl::desc("What to write: kiln (the imported IR, the default), graph "
             "(after the graph pipeline, -O<n>), onnx (an ONNX model of the "
             "graph after the pipeline; --decompose-fused when it has fused "
             "ops), linalg (the graph lowered for the CPU), llvm-dialect, "
             "llvm (optimized LLVM IR), ptx and fatbin (--target=cuda), asm, "
             "obj, so (the linked shared object alone: the artifact's code "
             "section), artifact (the model artifact kiln-run and the "
             "runtime load; the default for -o FILE other than *.mlir)"),
    cl::value_desc("stage"), cl::cat(category));
cl::opt<std::string> reportPath(
    "report",
    cl::desc("Write per-pass op counts, FLOPs, weight bytes and statistics "
             "as JSON"),
    cl::value_desc("file.json"), cl::cat(category));
cl::opt<bool> quiet("quiet",
                    cl::desc("No progress lines, even for a long compile"),
                    cl::cat(category));
} // namespace

static bool writeFile(llvm::StringRef path, llvm::StringRef bytes) {
  std::string error;
  auto file = mlir::openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return false;
  }
  file->os() << bytes;
  file->keep();
  return true;
}

/// Compiles the model once, writing `outPath` (one rank's artifact under
/// --tensor-parallel).
static int compileOne(const kiln::CompileOptions &options, kiln::Stage stage,
                      const std::string &outPath) {
  kiln::Invocation invocation(options);
  // Tables go to stdout unless the output does.
  invocation.setMessageStream(outPath == "-" ? &llvm::errs()
                                                : &llvm::outs());
  // Errors, and the remarks of the CUDA passes (what stays off the fast
  // paths), as MLIR's default handler and kiln-compile always printed
  // them; warnings (LLVM IR export's notes on attributes) stay collected.
  invocation.setDiagnosticCallback([](const kiln::Diagnostic &d) {
    if (d.severity == kiln::Diagnostic::Severity::Error ||
        d.severity == kiln::Diagnostic::Severity::Remark || d.fromDriver)
      llvm::errs() << d.format("kiln-compile") << "\n";
  });
  // $KILN_QUIET (set by the lit suite, whose checks read stderr) is --quiet.
  const char *quietEnv = getenv("KILN_QUIET");
  bool showProgress = !quiet && !(quietEnv && *quietEnv && *quietEnv != '0');
  kiln::ProgressPrinter progress(llvm::errs(), showProgress);
  invocation.setProgressCallback(
      [&](const kiln::Progress &p) { progress.update(p); });

  if (!invocation.importFile(inputPath) || !invocation.run(stage)) {
    progress.finish();
    return 1;
  }
  progress.finish();
  if (!reportPath.empty() &&
      !writeFile(reportPath, invocation.getPassReportJson()))
    return 1;
  if (options.summary)
    (outPath == "-" ? llvm::errs() : llvm::outs())
        << "  IR (" << (stage == kiln::Stage::Kiln ? "kiln" : "graph")
        << ") written to: "
        << (outPath == "-" ? std::string("<stdout>") : outPath)
        << "\n";
  return invocation.writeOutput(outPath) ? 0 : 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  kiln::CompileFlagsRegistration flags(category);
  cl::HideUnrelatedOptions(category);
  // --version names Kiln first (tools and reports read that line), then the
  // LLVM it was built against.
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "kiln-compile (Kiln) " << KILN_VERSION << "\n  built against LLVM "
       << LLVM_VERSION_STRING << "\n";
  });
  cl::ParseCommandLineOptions(argc, argv, "Kiln model compiler\n");

  kiln::CompileOptions options;
  if (std::string error = flags.apply(options); !error.empty()) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return 1;
  }
  options.collectPassReport = !reportPath.empty();
  // `-o model.kiln` compiles all the way; '-' and *.mlir keep the IR.
  kiln::Stage stage = kiln::Stage::Kiln;
  if (emit.getNumOccurrences()) {
    if (!kiln::parseStage(emit, stage)) {
      llvm::errs() << "kiln-compile: --emit: unknown stage '" << emit
                   << "' (kiln, graph, onnx, linalg, llvm-dialect, llvm, ptx, "
                      "fatbin, asm, obj, so, artifact)\n";
      return 1;
    }
  } else {
    llvm::StringRef ext = llvm::sys::path::extension(outputPath);
    if (outputPath != "-" && ext != ".mlir" && ext != ".mlirbc")
      stage = kiln::Stage::Artifact;
  }
  if (stage == kiln::Stage::Artifact && outputPath == "-") {
    llvm::errs() << "kiln-compile: an artifact is not written to stdout; "
                    "give -o model.kiln\n";
    return 1;
  }

  if (std::string error = options.validate(stage); !error.empty()) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return 1;
  }

  // --tensor-parallel=N without a rank: every rank's artifact, -o naming
  // each with {rank}.
  std::vector<int64_t> ranks = {options.tensorParallelRank};
  if (options.tensorParallel > 1 && !options.tensorParallelRankGiven) {
    if (outputPath.getValue().find("{rank}") == std::string::npos) {
      llvm::errs() << "kiln-compile: --tensor-parallel="
                   << options.tensorParallel
                   << " writes one artifact per rank: put {rank} in -o (e.g. "
                      "-o model.rank{rank}.kiln), or compile one rank with "
                      "--tensor-parallel-rank=R\n";
      return 1;
    }
    ranks.clear();
    for (int64_t r = 0; r < options.tensorParallel; ++r)
      ranks.push_back(r);
  }
  for (int64_t rank : ranks) {
    options.tensorParallelRank = rank;
    std::string out = outputPath;
    for (size_t at; (at = out.find("{rank}")) != std::string::npos;)
      out.replace(at, 6, std::to_string(rank));
    if (int status = compileOne(options, stage, out))
      return status;
  }
  return 0;
}
