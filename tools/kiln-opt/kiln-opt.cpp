//===- kiln-opt.cpp - mlir-opt with Kiln's dialect and passes -------------===//

#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Pipelines/Pipelines.h"
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
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
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
  mlir::registerTransformsPasses();
  kiln::registerPipelines();
  mlir::LogicalResult result =
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry);
  if (kilnPassStatistics)
    kiln::printStatistics(llvm::errs());
  return mlir::asMainReturnCode(result);
}
