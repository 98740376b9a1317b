//===- CpuBackend.cpp - Kiln's CPU code generator -------------------------===//
//
// The lowering is upstream MLIR all the way once the kiln ops are linalg:
// one-shot bufferization over function boundaries (results become
// caller-provided out-params, inputs and weights read-only), the ownership
// based deallocation pipeline, linalg to parallel loops, the outer parallel
// loops onto OpenMP, then LLVM. Two small Kiln passes frame it: one marks the
// entry's arguments read-only before bufferization, one gives the lowered
// entry the artifact's calling convention (kiln_entry(void **buffers)).
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CpuBackend.h"
#include "kiln/AbiArchive.h"

#include <dlfcn.h>

#include "kiln/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

/// Marks @main's arguments (graph inputs and weights) read-only, so that
/// bufferization never writes into a caller's buffer or the mapped weights.
///
/// Zero-element inputs and outputs have no bare-pointer form in LLVM's
/// calling convention, and need none: an input with no elements is replaced
/// by an empty tensor and dropped from @main's parameters, an output with no
/// elements is dropped from its results (nothing is ever written to it).
/// `kiln.entry_slots` on the module then maps each remaining parameter of
/// @main to its index in kiln_entry's buffer array (which keeps one slot per
/// input, weight and output, as docs/artifact.md says).
struct PrepareEntryPass
    : PassWrapper<PrepareEntryPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrepareEntryPass)
  StringRef getArgument() const override { return "kiln-cpu-prepare-entry"; }
  StringRef getDescription() const override {
    return "Mark @main's arguments read-only for bufferization; drop "
           "zero-element inputs and outputs";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<tensor::TensorDialect>();
  }
  static bool isEmptyTensor(Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.hasStaticShape() && tensor.getNumElements() == 0;
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main) {
      module.emitError("no @main function to compile");
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    unsigned numArgs = main.getNumArguments();
    unsigned numResults = main.getNumResults();
    SmallVector<int64_t> slots;
    llvm::BitVector dropArgs(numArgs), dropResults(numResults);
    b.setInsertionPointToStart(&main.getBody().front());
    for (unsigned i = 0; i < numArgs; ++i) {
      BlockArgument arg = main.getArgument(i);
      if (isEmptyTensor(arg.getType())) {
        auto type = cast<RankedTensorType>(arg.getType());
        arg.replaceAllUsesWith(tensor::EmptyOp::create(
            b, arg.getLoc(), type.getShape(), type.getElementType()));
        dropArgs.set(i);
        continue;
      }
      slots.push_back(i);
    }
    for (unsigned i = 0; i < numResults; ++i) {
      if (isEmptyTensor(main.getResultTypes()[i])) {
        dropResults.set(i);
        continue;
      }
      slots.push_back(numArgs + i);
    }
    if (dropArgs.any() || dropResults.any()) {
      if (failed(main.eraseArguments(dropArgs)))
        return signalPassFailure();
      main.walk([&](func::ReturnOp ret) {
        for (int i = numResults - 1; i >= 0; --i)
          if (dropResults.test(i))
            ret->eraseOperand(i);
      });
      if (failed(main.eraseResults(dropResults)))
        return signalPassFailure();
      module->setAttr("kiln.entry_slots", b.getDenseI64ArrayAttr(slots));
    }
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (isa<TensorType>(main.getArgument(i).getType()))
        main.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                        b.getBoolAttr(false));
  }
};

/// After lowering to LLVM, @main takes one bare pointer per buffer (inputs,
/// weights, outputs). This renames it `kiln_main` (internal) and adds the
/// exported `void kiln_entry(void **buffers)` that loads the pointers and
/// calls it, so the runtime calls every model the same way.
struct EntryWrapperPass
    : PassWrapper<EntryWrapperPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EntryWrapperPass)
  StringRef getArgument() const override { return "kiln-cpu-entry-wrapper"; }
  StringRef getDescription() const override {
    return "Export the lowered @main as kiln_entry(void **buffers)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect>();
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<LLVM::LLVMFuncOp>("main");
    if (!main) {
      module.emitError("kiln-cpu-entry-wrapper: no lowered llvm.func @main");
      return signalPassFailure();
    }
    MLIRContext *context = &getContext();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    LLVM::LLVMFunctionType mainType = main.getFunctionType();
    if (!isa<LLVM::LLVMVoidType>(mainType.getReturnType()) ||
        llvm::any_of(mainType.getParams(),
                     [&](Type t) { return t != ptrType; })) {
      main.emitError("kiln-cpu-entry-wrapper: @main must take bare pointers "
                     "and return nothing (static shapes, outputs as "
                     "out-params)");
      return signalPassFailure();
    }
    main.setSymName("kiln_main");
    main.setLinkage(LLVM::Linkage::Internal);

    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    Location loc = main.getLoc();
    auto entry = LLVM::LLVMFuncOp::create(
        b, loc, "kiln_entry",
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context),
                                    {ptrType}));
    Block *block = entry.addEntryBlock(b);
    b.setInsertionPointToStart(block);
    // Parameters dropped by kiln-cpu-prepare-entry keep their buffer slots.
    SmallVector<int64_t> slots;
    if (auto attr = module->getAttrOfType<DenseI64ArrayAttr>("kiln.entry_slots"))
      slots.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    else
      for (unsigned i = 0; i < mainType.getNumParams(); ++i)
        slots.push_back(i);
    if (slots.size() != mainType.getNumParams()) {
      main.emitError("kiln-cpu-entry-wrapper: kiln.entry_slots does not "
                     "match @main's parameters");
      return signalPassFailure();
    }
    SmallVector<Value> args;
    for (unsigned i = 0; i < mainType.getNumParams(); ++i) {
      Value slot = LLVM::GEPOp::create(b, loc, ptrType, ptrType,
                                       block->getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{(int32_t)slots[i]});
      args.push_back(LLVM::LoadOp::create(b, loc, ptrType, slot));
    }
    LLVM::CallOp::create(b, loc, main, args);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }
};

/// Fuses elementwise linalg.generic chains into one loop nest, and nothing
/// else: upstream's linalg-fuse-elementwise-ops also fuses an elementwise
/// producer into a contraction (the normalized activations recomputed for
/// every output column of the matmul after them) and generalizes named ops
/// while propagating reshapes, which turns linalg.matmul into generics that
/// no later step tiles or calls a library for. Here both ends must be
/// all-parallel generics and the producer must have no other user.
struct FuseElementwisePass
    : PassWrapper<FuseElementwisePass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)
  StringRef getArgument() const override { return "kiln-cpu-fuse-elementwise"; }
  StringRef getDescription() const override {
    return "Fuse chains of elementwise linalg.generic ops (never into "
           "contractions or reductions)";
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
      auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
      bool fuse = producer && consumer && producer->hasOneUse() &&
                  producer.getNumReductionLoops() == 0 &&
                  consumer.getNumReductionLoops() == 0;
      // The fused op takes the consumer's location: merge the producer's
      // into it first, so the kernel profiler still sees both ONNX nodes
      // and both origins. (The pattern fuses right after this returns.)
      if (fuse)
        consumer->setLoc(FusedLoc::get(
            consumer->getContext(), {consumer->getLoc(), producer->getLoc()}));
      return fuse;
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

/// memref.copy into a strided view (the interior of a tensor.pad's buffer,
/// a slice of a concatenation) becomes a call to the runtime's memrefCopy,
/// which copies on one thread, one contiguous run (often a single image row)
/// per memcpy call while the other threads wait. As linalg.copy it becomes
/// loops like any other elementwise op: parallel over the outer dimensions,
/// a vectorizable contiguous innermost loop. Copies between two identity
/// layouts stay memref.copy (one memcpy).
struct CopiesToLoopsPass
    : PassWrapper<CopiesToLoopsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CopiesToLoopsPass)
  StringRef getArgument() const override { return "kiln-cpu-copies-to-loops"; }
  StringRef getDescription() const override {
    return "Rewrite static memref.copy into strided views as linalg.copy";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect>();
  }
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      auto source = dyn_cast<MemRefType>(copy.getSource().getType());
      auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
      if (source && target && source.hasStaticShape() &&
          target.hasStaticShape() && source.getRank() >= 2 &&
          (!source.getLayout().isIdentity() ||
           !target.getLayout().isIdentity()))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
  }
};

/// math.exp, math.expm1, math.tanh and math.erf on f32 (scalars or
/// vectors) become MLIR's polynomial approximations: plain arith (fma,
/// bit casts, selects) that LLVM's loop vectorizer widens like the rest of
/// an elementwise loop. Left as llvm.exp, a vectorized loop calls libm's
/// scalar expf once per lane: softmax, sigmoid/SiLU, GELU and the linear
/// attention's feature map spent most of their time there. The
/// approximations are within a few ulp of libm over the whole range and
/// keep inf/NaN/overflow behaviour (checked by the CPU conformance suite
/// and test/Target/CPU/approximate-math.mlir).
struct ApproximateMathPass
    : PassWrapper<ApproximateMathPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ApproximateMathPass)
  StringRef getArgument() const override { return "kiln-cpu-approximate-math"; }
  StringRef getDescription() const override {
    return "Expand f32 exp/expm1/tanh/erf into vectorizable polynomial "
           "approximations";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, math::MathDialect,
                    vector::VectorDialect>();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) {
          return llvm::is_contained({"exp", "expm1", "tanh", "erf",
                                     "math.exp", "math.expm1", "math.tanh",
                                     "math.erf"},
                                    name);
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void buildLinalgPipeline(OpPassManager &pm, const CpuOptions &options,
                         bool hoistWeights) {
  if (hoistWeights)
    pm.addPass(createKilnHoistWeights());
  pm.addPass(createConvertKilnToLinalg());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(std::make_unique<FuseElementwisePass>());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
}

/// The register tile (rows x vector columns) of the GEMM micro-kernel for the
/// target's vector registers: 16 accumulators of the 32 zmm (AVX-512),
/// 12 of the 16 ymm (AVX2), 8 of the 16 xmm otherwise.
static std::pair<int64_t, int64_t> registerTile(const CpuOptions &options) {
  TargetInfo info;
  std::string error;
  if (!resolveTarget(options, info, error))
    return {4, 8};
  auto has = [&](StringRef feature) {
    return llvm::is_contained(info.features, feature);
  };
  if (has("avx512f"))
    return {8, 32};
  if (has("avx2") && has("fma"))
    return {6, 16};
  return {4, 8};
}

std::unique_ptr<Pass> createPrepareEntryPass() {
  return std::make_unique<PrepareEntryPass>();
}

void buildLLVMPipeline(OpPassManager &pm, const CpuOptions &options) {
  pm.addPass(std::make_unique<PrepareEntryPass>());
  // --kernels=library: BLAS takes the f32 contractions (LibraryCalls, after
  // bufferization); the f16/bf16 ones get the codegen kernels, which widen
  // them in registers, rather than scalar loops.
  // With AMX-BF16 the bf16 matmuls are Kiln's AMX kernel's (after
  // bufferization), in both kernel modes.
  bool amxBf16 = false;
  {
    TargetInfo info;
    std::string error;
    amxBf16 = resolveTarget(options, info, error) &&
              llvm::is_contained(info.features, "amx-bf16") &&
              llvm::is_contained(info.features, "amx-tile");
  }
  if (options.kernels == "codegen" || options.kernels == "library") {
    auto [mr, nr] = registerTile(options);
    pm.addNestedPass<func::FuncOp>(createTileAndVectorizePass(
        mr, nr, /*halfOnly=*/options.kernels == "library", amxBf16));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  bufferization::buildBufferDeallocationPipeline(pm);
  // The int8 GEMM is Kiln's own kernel in both kernel modes.
  pm.addPass(createInt8CallsPass());
  if (amxBf16)
    pm.addPass(createAmxCallsPass());
  if (options.kernels == "library")
    pm.addPass(createLibraryCallsPass());
  // Here each top-level op of @main is one kernel: time them.
  if (options.profileHooks)
    pm.addPass(createInstrumentKernelsPass());
  // The thread blocks of the tiled kernels join the other parallel loops.
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  pm.addNestedPass<func::FuncOp>(std::make_unique<CopiesToLoopsPass>());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createSplitParallelLoopsPass());
  if (options.parallel)
    pm.addPass(createConvertSCFToOpenMPPass());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createLowerVectorsPass());
  VectorTransferToSCFOptions transferOptions;
  transferOptions.enableFullUnroll(true);
  pm.addPass(createConvertVectorToSCFPass(transferOptions));
  // bf16 is a storage type here: arithmetic on it (max pooling's compares,
  // the elementwise ops of --precision=bf16) is done in f32 between an extf
  // and a truncf, and f32 <-> bf16 as integer arithmetic (round to nearest
  // even, subnormals kept), on every CPU. Left to LLVM, each bf16 operation
  // is promoted to f32 and rounded back with a __truncsfbf2 call per element
  // (a compiler-rt builtin; GCC 12's libgcc lacks it) where the CPU has no
  // AVX512-BF16, and with VCVTNEPS2BF16 where it has, which flushes
  // subnormals to zero: the code would be slow on one machine and give
  // other bits on another (test/E2E/conversions.py).
  pm.addPass(math::createMathExtendToSupportedTypes());
  {
    arith::ArithEmulateUnsupportedFloatsOptions emulate;
    emulate.sourceTypeStrs = {"bf16"};
    emulate.targetTypeStr = "f32";
    pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
    arith::ArithExpandOpsPassOptions expand;
    expand.includeBf16 = true;
    pm.addPass(arith::createArithExpandOpsPass(expand));
  }
  // Before the vector lowering: the approximations of vector math build
  // vector ops.
  pm.addPass(std::make_unique<ApproximateMathPass>());
  // Before lower-affine: lowering the transfers makes affine.apply indices.
  ConvertVectorToLLVMPassOptions vectorOptions;
  vectorOptions.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  // expand-strided-metadata creates affine.apply ops (subviews of the tiled
  // kernels, CumSum's run-time axis): lower-affine after it.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  // The vector lowering leaves ub.poison (undefined lanes) behind.
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(std::make_unique<EntryWrapperPass>());
}

void registerCpuBackendDialects(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, index::IndexDialect, linalg::LinalgDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  omp::OpenMPDialect, scf::SCFDialect, tensor::TensorDialect,
                  vector::VectorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  // Tiling, masking and subset hoisting of the codegen kernels.
  linalg::registerTilingInterfaceExternalModels(registry);
  linalg::registerSubsetOpInterfaceExternalModels(registry);
  linalg::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerTilingInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  vector::registerSubsetOpInterfaceExternalModels(registry);
}

void registerCpuBackendPasses() {
  PassRegistration<PrepareEntryPass>();
  PassRegistration<EntryWrapperPass>();
  PassRegistration<FuseElementwisePass>();
  PassRegistration<CopiesToLoopsPass>();
  PassRegistration<ApproximateMathPass>();
  registerPass([] { return createInstrumentKernelsPass(); });
  registerPass([] { return createLibraryCallsPass(); });
  registerPass([] { return createInt8CallsPass(); });
  registerPass([] { return createAmxCallsPass(); });
  registerTileAndVectorizePasses();
  PassPipelineRegistration<>(
      "kiln-cpu-linalg-pipeline",
      "kiln graph -> linalg on tensors (weights hoisted)",
      [](OpPassManager &pm) { buildLinalgPipeline(pm, CpuOptions()); });
  PassPipelineRegistration<>(
      "kiln-cpu-llvm-pipeline", "linalg on tensors -> LLVM dialect",
      [](OpPassManager &pm) { buildLLVMPipeline(pm, CpuOptions()); });
}

//===----------------------------------------------------------------------===//
// Target, LLVM IR, machine code
//===----------------------------------------------------------------------===//

/// The x86 features an artifact records: the ones code generation can use
/// and the runtime can check with __builtin_cpu_supports.
static const char *const kRecordedFeatures[] = {
    "sse4.2",  "avx",       "avx2",     "fma",        "f16c",
    "avx512f", "avx512bw",  "avx512dq", "avx512vl",   "avx512vnni",
    "avxvnni", "avx512bf16", "avx512fp16", "amx-tile", "amx-bf16"};

bool resolveTarget(const CpuOptions &options, TargetInfo &info,
                   std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  info.triple = llvm::sys::getDefaultTargetTriple();
  llvm::Triple triple(info.triple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return false;
  llvm::StringMap<bool> enabled;
  if (options.cpu == "native") {
    info.cpu = llvm::sys::getHostCPUName().str();
    enabled = llvm::sys::getHostCPUFeatures();
  } else if (options.cpu == "generic") {
    info.cpu = triple.isX86() ? "x86-64" : "generic";
  } else {
    info.cpu = options.cpu;
    // Asked for an unknown CPU, LLVM warns on stderr and goes on: check the
    // name against a generic subtarget first.
    std::unique_ptr<llvm::MCSubtargetInfo> generic(
        target->createMCSubtargetInfo(triple, "", ""));
    if (!generic || !generic->isCPUStringValid(info.cpu)) {
      error = "unknown CPU '" + options.cpu + "' for " + info.triple +
              " (use native, generic or an LLVM CPU name)";
      return false;
    }
    std::unique_ptr<llvm::MCSubtargetInfo> sti(
        target->createMCSubtargetInfo(triple, info.cpu, ""));
    if (!sti) {
      error = "unknown CPU '" + options.cpu + "' for " + info.triple +
              " (use native, generic or an LLVM CPU name)";
      return false;
    }
    for (const char *feature : kRecordedFeatures)
      if (sti->checkFeatures(std::string("+") + feature))
        enabled[feature] = true;
  }
  std::string features;
  for (auto &entry : enabled) {
    if (!features.empty())
      features += ",";
    features += (entry.second ? "+" : "-") + entry.first().str();
  }
  info.featureString = options.cpu == "native" ? features : "";
  for (const char *feature : kRecordedFeatures)
    if (enabled.lookup(feature))
      info.features.push_back(feature);
  return true;
}

std::unique_ptr<llvm::TargetMachine>
createTargetMachine(const TargetInfo &info, unsigned optLevel,
                    std::string &error) {
  llvm::Triple triple(info.triple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions targetOptions;
  auto level = optLevel == 0   ? llvm::CodeGenOptLevel::None
               : optLevel == 1 ? llvm::CodeGenOptLevel::Less
               : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                               : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, info.cpu, info.featureString, targetOptions, llvm::Reloc::PIC_,
      std::nullopt, level));
  if (!machine)
    error = "cannot create a target machine for " + info.triple + " " + info.cpu;
  return machine;
}

std::unique_ptr<llvm::Module> translateToLLVMIR(ModuleOp module,
                                                llvm::LLVMContext &context,
                                                llvm::TargetMachine &machine) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "kiln_model");
  if (!llvmModule)
    return nullptr;
  llvmModule->setTargetTriple(machine.getTargetTriple());
  llvmModule->setDataLayout(machine.createDataLayout());
  return llvmModule;
}

bool optimizeLLVMModule(llvm::Module &module, llvm::TargetMachine &machine,
                        unsigned optLevel, std::string &error) {
  auto transformer = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                               &machine);
  if (llvm::Error err = transformer(&module)) {
    error = llvm::toString(std::move(err));
    return false;
  }
  return true;
}

bool emitMachineCode(llvm::Module &module, llvm::TargetMachine &machine,
                     bool assembly, std::string &out, std::string &error) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr,
                                  assembly ? llvm::CodeGenFileType::AssemblyFile
                                           : llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit this file type";
    return false;
  }
  pm.run(module);
  out.assign(buffer.begin(), buffer.end());
  return true;
}

std::string findSupportArchive(const char *envVar, llvm::StringRef name) {
  if (const char *env = std::getenv(envVar))
    return env;
  // Beside the running tool (build/bin/../lib), then beside the binary that
  // holds this code (a library loaded by another program: the Python
  // extension, a test), then where the build put it.
  auto beside = [&](const std::string &binary) {
    llvm::SmallString<256> path(
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(binary)));
    llvm::sys::path::append(path, "lib", name);
    return std::string(path);
  };
  std::string self = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&findSupportArchive));
  std::string candidate = beside(self);
  if (llvm::sys::fs::exists(candidate))
    return candidate;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&findSupportArchive), &info) &&
      info.dli_fname) {
    std::string library = beside(info.dli_fname);
    if (llvm::sys::fs::exists(library))
      return library;
  }
  llvm::SmallString<256> built(
      llvm::sys::path::parent_path(KILN_ABI_ARCHIVE_PATH));
  llvm::sys::path::append(built, name);
  if (llvm::sys::fs::exists(built))
    return std::string(built);
  return candidate;
}

bool linkSharedObject(const std::string &object, const CpuOptions &options,
                      std::string &sharedObject, std::string &error) {
  std::string archive = findSupportArchive("KILN_ABI_ARCHIVE", "libkiln_abi.a");
  if (!llvm::sys::fs::exists(archive)) {
    error = "Kiln's ABI support archive not found at " + archive +
            " (set KILN_ABI_ARCHIVE)";
    return false;
  }
  std::vector<std::string> libraries = {"-Wl,--whole-archive", archive};
  // The library-mode kernels run their own OpenMP regions: their archive
  // goes before -lomp, which --as-needed would otherwise drop from a model
  // without parallel loops of its own.
  if (options.kernels == "library") {
    llvm::SmallString<256> blas(llvm::sys::path::parent_path(archive));
    llvm::sys::path::append(blas, "libkiln_abi_blas.a");
    libraries.push_back(std::string(blas));
  }
  std::string ompDir =
      "/usr/lib/llvm-" + std::to_string(LLVM_VERSION_MAJOR) + "/lib";
  libraries.insert(libraries.end(), {"-Wl,--no-whole-archive", "-L" + ompDir,
                                     "-Wl,-rpath," + ompDir, "-lomp"});
  if (options.kernels == "library")
    libraries.push_back("-lopenblas");
  libraries.push_back("-lm");
  return linkWithSystemCompiler(object, libraries, "the model's shared object",
                                sharedObject, error);
}

/// LLVM's compiler-rt builtins for the code LLVM 22 generates:
/// $KILN_BUILTINS_ARCHIVE, else the clang resource folder of the LLVM that
/// Kiln links (Debian's libclang-rt-22-dev). Empty when it is absent.
static std::string findBuiltinsArchive() {
  if (const char *env = std::getenv("KILN_BUILTINS_ARCHIVE"))
    return env;
  llvm::SmallString<256> path("/usr/lib/llvm-" +
                              std::to_string(LLVM_VERSION_MAJOR));
  llvm::sys::path::append(path, "lib", "clang",
                          std::to_string(LLVM_VERSION_MAJOR), "lib");
  llvm::sys::path::append(path, "linux", "libclang_rt.builtins-x86_64.a");
  return llvm::sys::fs::exists(path) ? std::string(path) : std::string();
}

bool linkWithSystemCompiler(const std::string &object,
                            llvm::ArrayRef<std::string> libraries,
                            llvm::StringRef what, std::string &sharedObject,
                            std::string &error) {
  const char *ccEnv = std::getenv("KILN_CC");
  auto cc = llvm::sys::findProgramByName(ccEnv ? ccEnv : "cc");
  if (!cc) {
    error = "no C compiler driver to link with (install gcc, or set KILN_CC)";
    return false;
  }
  llvm::SmallString<128> objPath, soPath, logPath;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("kiln-model", "o", fd, objPath) ||
      llvm::sys::fs::createTemporaryFile("kiln-model", "so", soPath) ||
      llvm::sys::fs::createTemporaryFile("kiln-link", "log", logPath)) {
    error = "cannot create temporary files";
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << object;
  }
  // -z defs: a symbol the code needs and nothing here defines is a link
  // error now, not a load error on the machine that runs the artifact.
  std::vector<std::string> args = {*cc, "-shared", "-Wl,-z,defs", "-o",
                                   std::string(soPath), std::string(objPath)};
  args.insert(args.end(), libraries.begin(), libraries.end());
  // LLVM lowers conversions the target CPU has no instruction for (f32 ->
  // bf16 without AVX512-BF16, f16 <-> f32 without F16C, f64 -> f16/bf16)
  // to compiler-rt builtins (__truncsfbf2, __extendhfsf2, ...). The system
  // compiler's libgcc (GCC 12) lacks the bf16 ones, so the builtins of the
  // LLVM that generated the code are linked in, their symbols kept local.
  std::string builtins = findBuiltinsArchive();
  if (!builtins.empty()) {
    args.push_back(builtins);
    args.push_back("-Wl,--exclude-libs," +
                   llvm::sys::path::filename(builtins).str());
  }
  llvm::SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt,
                                                llvm::StringRef(logPath),
                                                llvm::StringRef(logPath)};
  int rc = llvm::sys::ExecuteAndWait(*cc, argRefs, std::nullopt, redirects);
  auto so = llvm::MemoryBuffer::getFile(soPath);
  if (rc != 0 || !so) {
    auto log = llvm::MemoryBuffer::getFile(logPath);
    error = "linking " + what.str() + " failed";
    if (log)
      error += ":\n" + (*log)->getBuffer().str();
    if (builtins.empty() && log &&
        ((*log)->getBuffer().contains("__trunc") ||
         (*log)->getBuffer().contains("__extend")))
      error += "\n(LLVM's compiler-rt builtins were not found: install "
               "libclang-rt-" + std::to_string(LLVM_VERSION_MAJOR) +
               "-dev, or set KILN_BUILTINS_ARCHIVE)";
  } else {
    sharedObject = (*so)->getBuffer().str();
  }
  llvm::sys::fs::remove(objPath);
  llvm::sys::fs::remove(soPath);
  llvm::sys::fs::remove(logPath);
  return error.empty();
}

} // namespace kiln::cpu
