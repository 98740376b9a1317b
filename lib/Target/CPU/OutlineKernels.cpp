//===- OutlineKernels.cpp - Each kernel of @main in a function of its own -===//
//
// kiln-cpu-outline-kernels runs on bufferized IR, after the kernels are
// instrumented and before their loops are lowered. Each top-level kernel of
// a function (a linalg op on buffers, a tiled scf.forall, a loop nest, a
// memref.copy) moves into a private function of its own, called where it
// was:
//
//   func.func private @main_kernel_7(%base: memref<f32>, %n: index,
//                                    %w: memref<576x1536xf32>, ...)
//       attributes {llvm.no_inline} {
//     %x = memref.reinterpret_cast %base to offset: [0], sizes: [%n, 576],
//          strides: [576, 1] : memref<f32> to memref<?x576xf32>
//     <the kernel, reading %x and %w>
//   }
//
// What the kernel reads from outside becomes parameters: scalars as they
// are, buffers of static shape and layout as themselves (one pointer under
// the bare-pointer convention), other buffers as their base buffer plus the
// run-time offset, sizes and strides, rebuilt with memref.reinterpret_cast.
// Constants are cloned in. A buffer that is the only parameter based on its
// allocation (memref.alloc in this function) is `llvm.noalias`: LLVM keeps
// what it knew of distinct allocations in @main.
//
// Then the functions that are the same code become one: the same kernel of
// every layer of a decoder reads other weights and activations, which are
// parameters, so 30 layers have about one layer's kernels. Everything after
// this pass (the loop and vector lowering, the LLVM conversions, LLVM's
// optimizations and code generation) works on that, and @main is left with
// the allocations and the calls. A 30-layer decoder's @main was one function
// of about 200k LLVM instructions, optimized on one core for 100 s.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CpuBackend.h"

#include "DeduplicateFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

/// A memref the bare-pointer convention passes as one pointer: static
/// shape, strides and offset.
bool isBarePointerMemRef(MemRefType type) {
  if (!type.hasStaticShape())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return ShapedType::isStatic(offset) &&
         llvm::all_of(strides, [](int64_t s) { return ShapedType::isStatic(s); });
}

/// A memref passed as its base buffer and run-time offset/sizes/strides:
/// any ranked memref with a strided layout.
bool isDecomposableMemRef(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset));
}

/// Values a kernel may read from outside, and how.
enum class Passing { Clone, Scalar, Pointer, Decomposed, Refused };

Passing classify(Value value) {
  if (Operation *def = value.getDefiningOp())
    if (def->hasTrait<OpTrait::ConstantLike>() && def->getNumOperands() == 0 &&
        def->getNumRegions() == 0 && def->getNumResults() == 1)
      return Passing::Clone;
  Type type = value.getType();
  if (type.isIntOrIndexOrFloat())
    return Passing::Scalar;
  if (auto memref = dyn_cast<MemRefType>(type)) {
    if (isBarePointerMemRef(memref))
      return Passing::Pointer;
    if (isDecomposableMemRef(memref))
      return Passing::Decomposed;
  }
  return Passing::Refused;
}

/// Whether a top-level op is a kernel to outline: it has no results (on
/// buffers everything is written in place) and does work in loops.
bool isOutlinable(Operation *op) {
  if (op->getNumResults() != 0 || op->hasTrait<OpTrait::IsTerminator>())
    return false;
  if (isa<memref::CopyOp, linalg::LinalgOp>(op))
    return true;
  return isa<LoopLikeOpInterface>(op) && op->getNumRegions() > 0;
}

/// The allocation a buffer is a view of (through view-like ops), or null.
Operation *rootAllocation(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<memref::AllocOp, memref::AllocaOp>(def))
      return def;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return nullptr;
    value = view.getViewSource();
  }
  return nullptr;
}

struct OutlineKernelsPass
    : PassWrapper<OutlineKernelsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OutlineKernelsPass)
  StringRef getArgument() const override { return "kiln-cpu-outline-kernels"; }
  StringRef getDescription() const override {
    return "Move each top-level kernel of a function into a private function "
           "of its own and merge the ones that are the same code";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<func::FuncDialect, LLVM::LLVMDialect,
                    memref::MemRefDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> parents;
    for (func::FuncOp func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        parents.push_back(func);
    SmallVector<FunctionOpInterface> outlined;
    for (func::FuncOp parent : parents) {
      SmallVector<Operation *> kernels;
      for (Operation &op : parent.getBody().getOps())
        if (isOutlinable(&op))
          kernels.push_back(&op);
      // One kernel alone gains nothing from a call.
      if (kernels.size() < 2)
        continue;
      // The functions follow their parent in the kernels' order.
      Operation *after = parent;
      unsigned index = 0;
      for (Operation *op : kernels)
        if (func::FuncOp fn = outline(op, parent, after, symbols, index)) {
          outlined.push_back(fn);
          after = fn;
          ++index;
        }
    }
    deduplicateFunctions(module, outlined);
  }

  static func::FuncOp outline(Operation *op, func::FuncOp parent,
                              Operation *after, SymbolTable &symbols,
                              unsigned index) {
    llvm::SetVector<Value> used(op->getOperands().begin(),
                                op->getOperands().end());
    getUsedValuesDefinedAbove(op->getRegions(), used);
    SmallVector<Passing> passing;
    for (Value value : used) {
      passing.push_back(classify(value));
      if (passing.back() == Passing::Refused)
        return nullptr;
    }

    MLIRContext *context = op->getContext();
    Location loc = op->getLoc();
    OpBuilder b(op);
    // The call's operands and the function's parameters, in order; for a
    // decomposed buffer, its base and then its dynamic offset, sizes and
    // strides.
    SmallVector<Value> operands;
    struct Decomposed {
      unsigned base;
      SmallVector<unsigned> dynamic; // offset, sizes..., strides...
    };
    SmallVector<Decomposed> decomposed(used.size());
    for (auto [i, value] : llvm::enumerate(used)) {
      if (passing[i] == Passing::Clone)
        continue;
      if (passing[i] != Passing::Decomposed) {
        operands.push_back(value);
        continue;
      }
      auto type = cast<MemRefType>(value.getType());
      SmallVector<int64_t> strides;
      int64_t offset;
      (void)type.getStridesAndOffset(strides, offset);
      auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, value);
      decomposed[i].base = operands.size();
      operands.push_back(metadata.getBaseBuffer());
      auto add = [&](int64_t known, Value runtime) {
        if (ShapedType::isDynamic(known)) {
          decomposed[i].dynamic.push_back(operands.size());
          operands.push_back(runtime);
        }
      };
      add(offset, metadata.getOffset());
      for (auto [size, runtime] :
           llvm::zip(type.getShape(), metadata.getSizes()))
        add(size, runtime);
      for (auto [stride, runtime] : llvm::zip(strides, metadata.getStrides()))
        add(stride, runtime);
    }

    // A buffer parameter is noalias when no other parameter can reach its
    // memory: it is based on an allocation of this function that no other
    // buffer parameter is based on.
    llvm::DenseMap<Operation *, unsigned> allocationUses;
    SmallVector<Operation *> roots(operands.size(), nullptr);
    for (auto [i, operand] : llvm::enumerate(operands))
      if (isa<MemRefType>(operand.getType())) {
        roots[i] = rootAllocation(operand);
        ++allocationUses[roots[i]];
      }

    SmallVector<Type> types;
    for (Value operand : operands)
      types.push_back(operand.getType());
    OpBuilder fb(context);
    fb.setInsertionPointAfter(after);
    auto fn = func::FuncOp::create(
        fb, loc, (parent.getName() + "_kernel_" + Twine(index)).str(),
        FunctionType::get(context, types, {}));
    fn.setPrivate();
    fn->setAttr("llvm.linkage",
                LLVM::LinkageAttr::get(context, LLVM::Linkage::Internal));
    fn->setAttr("llvm.no_inline", UnitAttr::get(context));
    symbols.insert(fn); // renamed if the name is taken
    for (auto [i, root] : llvm::enumerate(roots))
      if (root && allocationUses[root] == 1)
        fn.setArgAttr(i, "llvm.noalias", UnitAttr::get(context));
    Block *entry = fn.addEntryBlock();
    fb.setInsertionPointToStart(entry);

    IRMapping mapping;
    unsigned next = 0;
    for (auto [i, value] : llvm::enumerate(used)) {
      switch (passing[i]) {
      case Passing::Clone:
        fb.clone(*value.getDefiningOp(), mapping);
        break;
      case Passing::Scalar:
      case Passing::Pointer:
        mapping.map(value, entry->getArgument(next++));
        break;
      case Passing::Decomposed: {
        auto type = cast<MemRefType>(value.getType());
        SmallVector<int64_t> strides;
        int64_t offset;
        (void)type.getStridesAndOffset(strides, offset);
        const Decomposed &d = decomposed[i];
        unsigned dynamic = 0;
        auto get = [&](int64_t known) -> OpFoldResult {
          if (ShapedType::isDynamic(known))
            return entry->getArgument(d.dynamic[dynamic++]);
          return fb.getIndexAttr(known);
        };
        OpFoldResult offsetValue = get(offset);
        SmallVector<OpFoldResult> sizes, strideValues;
        for (int64_t size : type.getShape())
          sizes.push_back(get(size));
        for (int64_t stride : strides)
          strideValues.push_back(get(stride));
        Value rebuilt = memref::ReinterpretCastOp::create(
            fb, loc, type, entry->getArgument(d.base), offsetValue, sizes,
            strideValues);
        mapping.map(value, rebuilt);
        next = d.base + 1 + d.dynamic.size();
        break;
      }
      case Passing::Refused:
        llvm_unreachable("refused values are not outlined");
      }
    }
    fb.clone(*op, mapping);
    func::ReturnOp::create(fb, loc);

    func::CallOp::create(b, loc, fn, operands);
    op->erase();
    return fn;
  }
};

} // namespace

std::unique_ptr<Pass> createOutlineKernelsPass() {
  return std::make_unique<OutlineKernelsPass>();
}

} // namespace kiln::cpu
