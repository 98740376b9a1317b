//===- OutlineParallelRegions.cpp - omp.parallel into functions of their own =//
//
// kiln-cpu-outline-parallel-regions: on the LLVM dialect, every omp.parallel
// of a function that has more than one moves into a private function of its
// own (the values it uses from outside become parameters; constants and
// global addresses are cloned in), called where it was.
//
// Why: the translation to LLVM IR outlines each omp.parallel region with
// OpenMPIRBuilder, whose finalize() builds a CodeExtractorAnalysisCache of
// the *whole* enclosing function for every region. All of a model's kernels
// are in kiln_main, so that was quadratic in the model's depth: a 30-layer
// decoder's ~270 parallel regions cost about two thirds of its compile.
// In a function of its own, each region's analysis sees a few blocks.
// LLVM may inline the small functions back afterwards (they are internal):
// the outlining work is done by then.
//
// Outlined regions that are the same code (the same kernel of every layer
// of a decoder, whose weights and activations are parameters) then become
// one function: the calls to the others call the first, and the others are
// erased. A 2-layer decoder's 91 regions are 45 functions; 30 layers'
// regions are as many functions as about one layer's, so the LLVM
// optimization and code generation of the kernels no longer grow with the
// depth.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CpuBackend.h"

#include "DeduplicateFunctions.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

/// An op with no operands and no side effects whose result is cheaper to
/// recreate than to pass (a constant, a global's address).
bool isRematerializable(Value value) {
  Operation *def = value.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         def->getNumResults() == 1 &&
         isa<LLVM::ConstantOp, LLVM::AddressOfOp, LLVM::ZeroOp, LLVM::UndefOp,
             LLVM::PoisonOp>(def);
}

struct OutlineParallelRegionsPass
    : PassWrapper<OutlineParallelRegionsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OutlineParallelRegionsPass)
  StringRef getArgument() const override {
    return "kiln-cpu-outline-parallel-regions";
  }
  StringRef getDescription() const override {
    return "Move each omp.parallel of a function with several into a "
           "function of its own (LLVM dialect)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect, omp::OpenMPDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<LLVM::LLVMFuncOp> funcs(module.getOps<LLVM::LLVMFuncOp>());
    // kiln-cpu-outline-kernels marks its functions `llvm.no_inline` (the
    // func-to-LLVM conversion keeps it as a discardable attribute): inlined
    // back, they would make @main one huge function again.
    for (LLVM::LLVMFuncOp func : funcs)
      if (func->removeAttr("llvm.no_inline"))
        func.setNoInline(true);
    for (LLVM::LLVMFuncOp func : funcs) {
      SmallVector<omp::ParallelOp> regions;
      func.walk([&](omp::ParallelOp op) {
        if (!op->getParentOfType<omp::ParallelOp>())
          regions.push_back(op);
      });
      if (regions.size() < 2)
        continue;
      for (auto [index, op] : llvm::enumerate(regions))
        outlined.push_back(outline(op, func, symbols, index));
    }
    deduplicate(module);
  }

  SmallVector<LLVM::LLVMFuncOp> outlined;

  /// The outlined functions that are the same code become the first of
  /// them.
  void deduplicate(ModuleOp module) {
    SmallVector<FunctionOpInterface> functions(outlined.begin(),
                                               outlined.end());
    deduplicateFunctions(module, functions);
    outlined.clear();
  }

  static LLVM::LLVMFuncOp outline(omp::ParallelOp op,
                                  LLVM::LLVMFuncOp parent,
                                  SymbolTable &symbols, size_t index) {
    MLIRContext *context = op->getContext();
    Location loc = op.getLoc();
    llvm::SetVector<Value> used(op->getOperands().begin(),
                                op->getOperands().end());
    getUsedValuesDefinedAbove(op->getRegions(), used);
    SmallVector<Value> passed, cloned;
    for (Value value : used)
      (isRematerializable(value) ? cloned : passed).push_back(value);
    SmallVector<Type> types;
    for (Value value : passed)
      types.push_back(value.getType());

    OpBuilder b(context);
    b.setInsertionPointAfter(parent);
    auto fn = LLVM::LLVMFuncOp::create(
        b, loc, (parent.getName() + "_parallel_" + Twine(index)).str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context), types),
        LLVM::Linkage::Internal);
    symbols.insert(fn); // renamed if the name is taken
    Block *entry = fn.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    IRMapping mapping;
    for (auto [value, argument] : llvm::zip(passed, entry->getArguments()))
      mapping.map(value, argument);
    for (Value value : cloned)
      b.clone(*value.getDefiningOp(), mapping);
    b.clone(*op, mapping);
    LLVM::ReturnOp::create(b, loc, ValueRange{});

    b.setInsertionPoint(op);
    LLVM::CallOp::create(b, loc, fn, passed);
    op->erase();
    return fn;
  }
};

} // namespace

std::unique_ptr<Pass> createOutlineParallelRegionsPass() {
  return std::make_unique<OutlineParallelRegionsPass>();
}

} // namespace kiln::cpu
