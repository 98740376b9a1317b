//===- kiln-opt.cpp - mlir-opt with Kiln's dialect and passes -------------===//

#include "kiln/Analysis/SymbolicShapes.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Target/CPU/CpuBackend.h"
#ifdef KILN_HAVE_CUDA_TARGET
#include "kiln/Target/CUDA/CudaBackend.h"
#endif
#include "kiln/Transforms/Statistics.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"

// MLIR's -mlir-pass-statistics prints nothing with a release LLVM (see
// kiln/Transforms/Statistics.h); this prints Kiln's own counters.
static llvm::cl::opt<bool> kilnPassStatistics(
    "kiln-pass-statistics",
    llvm::cl::desc("Print the statistics of Kiln's passes to stderr"));

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<kiln::KilnDialect, mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::linalg::LinalgDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                  mlir::tensor::TensorDialect>();
  kiln::cpu::registerCpuBackendDialects(registry);
  mlir::registerTransformsPasses();
  kiln::registerPipelines();
  kiln::registerKilnConversionPasses();
  kiln::registerSymbolicShapesTestPass();
  kiln::cpu::registerCpuBackendPasses();
#ifdef KILN_HAVE_CUDA_TARGET
  kiln::cuda::registerCudaBackendDialects(registry);
  kiln::cuda::registerCudaBackendPasses();
#endif
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "Kiln optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  // Keep the pipeline the command line asked for; add the tracking that
  // --kiln-pass-statistics prints from.
  mlir::MlirOptMainConfig cliConfig = config;
  config.setPassPipelineSetupFn([cliConfig](mlir::PassManager &pm) {
    kiln::trackPassesThatRan(pm);
    return cliConfig.setupPassPipeline(pm);
  });
  std::string error;
  auto input = mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  auto output = mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                     config)))
    return EXIT_FAILURE;
  output->keep();
  if (kilnPassStatistics)
    kiln::printStatistics(llvm::errs());
  return EXIT_SUCCESS;
}
