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
#include "kiln/Target/Host/HostCodegen.h"

#include "InPlaceOutputs.h"

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
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

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
    // With symbolic dims (kiln-cpu-dynamic-entry) the last parameters are
    // the symbols' values: kiln_entry reads them from the int64 array in
    // the buffer slot after the outputs.
    unsigned numSymbols = 0;
    if (auto symbols = module->getAttrOfType<ArrayAttr>("kiln.symbols"))
      numSymbols = symbols.size();
    auto i64 = IntegerType::get(context, 64);
    unsigned numBuffers = mainType.getNumParams() >= numSymbols
                              ? mainType.getNumParams() - numSymbols
                              : 0;
    if (!isa<LLVM::LLVMVoidType>(mainType.getReturnType()) ||
        mainType.getNumParams() < numSymbols ||
        llvm::any_of(mainType.getParams().take_front(numBuffers),
                     [&](Type t) { return t != ptrType; }) ||
        llvm::any_of(mainType.getParams().drop_front(numBuffers),
                     [&](Type t) { return t != i64; })) {
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
      for (unsigned i = 0; i < numBuffers; ++i)
        slots.push_back(i);
    if (slots.size() != numBuffers) {
      main.emitError("kiln-cpu-entry-wrapper: kiln.entry_slots does not "
                     "match @main's parameters");
      return signalPassFailure();
    }
    SmallVector<Value> args;
    for (unsigned i = 0; i < numBuffers; ++i) {
      Value slot = LLVM::GEPOp::create(b, loc, ptrType, ptrType,
                                       block->getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{(int32_t)slots[i]});
      args.push_back(LLVM::LoadOp::create(b, loc, ptrType, slot));
    }
    if (numSymbols) {
      // The symbols' slot follows every input, weight and output slot
      // (those dropped for having no elements included).
      int32_t symbolSlot = 0;
      if (auto count = module->getAttrOfType<IntegerAttr>("kiln.num_slots"))
        symbolSlot = count.getInt();
      else
        symbolSlot = slots.empty() ? 0 : slots.back() + 1;
      Value slot = LLVM::GEPOp::create(b, loc, ptrType, ptrType,
                                       block->getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{symbolSlot});
      Value values = LLVM::LoadOp::create(b, loc, ptrType, slot);
      for (unsigned k = 0; k < numSymbols; ++k) {
        Value at = LLVM::GEPOp::create(b, loc, ptrType, i64, values,
                                       ArrayRef<LLVM::GEPArg>{(int32_t)k});
        args.push_back(LLVM::LoadOp::create(b, loc, i64, at));
      }
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
/// layouts stay memref.copy (one memcpy). Static or not.
struct CopiesToLoopsPass
    : PassWrapper<CopiesToLoopsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CopiesToLoopsPass)
  StringRef getArgument() const override { return "kiln-cpu-copies-to-loops"; }
  StringRef getDescription() const override {
    return "Rewrite memref.copy into strided views as linalg.copy";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect>();
  }
  void runOnOperation() override {
    host::copiesToLinalg(getOperation(), [](memref::CopyOp copy) {
      auto source = dyn_cast<MemRefType>(copy.getSource().getType());
      auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
      // Run-time extents too (a dynamic batch): the loops take them.
      return source && target && source.getRank() >= 2 &&
             (!source.getLayout().isIdentity() ||
              !target.getLayout().isIdentity());
    });
  }
};

/// Gives each use of a tensor.empty a tensor.empty of its own, right after
/// it, before bufferization. CSE merges the identical tensor.empty ops of a
/// model into one value that dozens of ops across every layer write into;
/// one-shot bufferization and empty-tensor elimination then analyse that
/// alias set for every use, which was quadratic in the model's depth (9 of
/// a 30-layer decoder's 16 s of backend passes, 0.2 s with 6 layers). Each
/// tensor.empty becomes an allocation anyway.
struct DuplicateEmptyTensorsPass
    : PassWrapper<DuplicateEmptyTensorsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DuplicateEmptyTensorsPass)
  StringRef getArgument() const override {
    return "kiln-cpu-duplicate-empty-tensors";
  }
  StringRef getDescription() const override {
    return "Give each use of a tensor.empty its own (before bufferization)";
  }
  void runOnOperation() override {
    SmallVector<tensor::EmptyOp> shared;
    getOperation().walk([&](tensor::EmptyOp op) {
      if (!op->use_empty() && !op->hasOneUse())
        shared.push_back(op);
    });
    OpBuilder b(&getContext());
    for (tensor::EmptyOp op : shared) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : llvm::drop_begin(op->getUses()))
        uses.push_back(&use);
      b.setInsertionPointAfter(op);
      for (OpOperand *use : uses)
        use->set(b.clone(*op)->getResult(0));
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

/// Whether the target has AMX-BF16 (an unknown CPU name: the baseline's
/// features, reported where the code is generated).
static bool hasAmxBf16(const CpuOptions &options) {
  host::TargetInfo target;
  std::string error;
  if (!host::resolveTarget(options.cpu, target, error))
    return false;
  return llvm::is_contained(target.features, "amx-bf16") &&
         llvm::is_contained(target.features, "amx-tile");
}

/// The register tile (rows x vector columns) of the GEMM micro-kernel for the
/// target's vector registers: 16 accumulators of the 32 zmm (AVX-512),
/// 12 of the 16 ymm (AVX2), 8 of the 16 xmm otherwise.
static std::pair<int64_t, int64_t>
registerTile(llvm::ArrayRef<std::string> features) {
  auto has = [&](StringRef feature) {
    return llvm::is_contained(features, feature);
  };
  if (has("avx512f"))
    return {8, 32};
  if (has("avx2") && has("fma"))
    return {6, 16};
  return {4, 8};
}

void buildPackWeightsPipeline(OpPassManager &pm, const CpuOptions &options) {
  // --kernels=auto: the channels-last convolutions the graph pipeline kept
  // for a library kernel, and the matmuls of many rows by a weight, become
  // oneDNN calls (before the packing, which leaves their weights alone).
  // Tensor parallelism's all-reduces: calls to the runtime (a no-op on a
  // module that has none).
  pm.addPass(createCollectiveCallsPass());
  if (options.dnnlConvolutions())
    pm.addPass(createDnnlCallsPass());
  if (options.codegenKernels()) {
    // The panels are the tile pass's thread blocks: the same register tile.
    host::TargetInfo target;
    std::string error;
    if (!host::resolveTarget(options.cpu, target, error))
      target.features.clear();
    pm.addPass(createPackWeightsPass(kWeightPanel,
                                     /*skipBf16=*/hasAmxBf16(options),
                                     registerTile(target.features).second));
  }
}

void buildLinalgPipeline(OpPassManager &pm, const CpuOptions &options,
                         bool hoistWeights) {
  // Without hoisting here, the caller hoisted the weights and packs them
  // (the driver: before it records their bytes in the artifact's
  // signature; the CUDA target reads them as they are).
  if (hoistWeights) {
    pm.addPass(createKilnHoistWeights());
    buildPackWeightsPipeline(pm, options);
  }
  pm.addPass(createConvertKilnToLinalg());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(std::make_unique<FuseElementwisePass>());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
}


/// The width of the target's vector registers.
static int64_t vectorRegisterBits(llvm::ArrayRef<std::string> features) {
  if (llvm::is_contained(features, "avx512f"))
    return 512;
  if (llvm::is_contained(features, "avx2") || llvm::is_contained(features, "avx"))
    return 256;
  return 128;
}

void buildLLVMPipeline(OpPassManager &pm, const CpuOptions &options) {
  pm.addPass(host::createPrepareEntryPass());
  // --kernels=library: BLAS takes the f32 contractions (LibraryCalls, after
  // bufferization); the f16/bf16 ones get the codegen kernels, which widen
  // them in registers, rather than scalar loops.
  // With AMX-BF16 the bf16 matmuls are Kiln's AMX kernel's (after
  // bufferization), in both kernel modes.
  // An unknown CPU name is reported where the code is generated; until
  // then the baseline's features stand.
  host::TargetInfo target;
  std::string error;
  if (!host::resolveTarget(options.cpu, target, error))
    target.features.clear();
  bool amxBf16 = hasAmxBf16(options);
  if (options.kernels == "auto" || options.kernels == "codegen" ||
      options.kernels == "library") {
    auto [mr, nr] = registerTile(target.features);
    // A convolution's run-time batch: a loop of static one-image ones
    // (library mode calls its kernel with the run-time batch instead).
    // --shape-hints: static copies for the hinted sizes first.
    if (options.codegenKernels()) {
      pm.addNestedPass<func::FuncOp>(createSpecializeShapesPass());
      pm.addNestedPass<func::FuncOp>(createSplitDynamicPass());
    }
    pm.addNestedPass<func::FuncOp>(createTileAndVectorizePass(
        mr, nr, /*halfOnly=*/options.kernels == "library", amxBf16));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  // What is left of the weights' transforms runs on every call: recorded
  // for the compile report (goal: none).
  pm.addPass(createFindWeightTransformsPass());
  // A static KV cache: the inputs written in place become writable.
  pm.addPass(createMarkInPlaceOutputsPass());
  pm.addNestedPass<func::FuncOp>(std::make_unique<DuplicateEmptyTensorsPass>());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // Loops (kiln.loop, kiln.scan) yield new tensors each iteration.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createElideAliasedCopiesPass());
  pm.addPass(host::createDynamicEntryPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  // Deallocations in loops (kiln.loop, kiln.scan) may call a helper with
  // dynamic memref arguments, which the bare-pointer calling convention
  // cannot pass: inline it.
  pm.addPass(createInlinerPass());
  // The int8 GEMM is Kiln's own kernel in both kernel modes.
  pm.addPass(createInt8CallsPass());
  if (amxBf16)
    pm.addPass(createAmxCallsPass());
  if (options.kernels == "library")
    pm.addPass(createLibraryCallsPass());
  // Here each top-level op of @main is one kernel: time them.
  if (options.profileHooks)
    pm.addPass(createInstrumentKernelsPass());
  // Each kernel in a function of its own, the same ones merged: the rest of
  // the pipeline and LLVM see one layer's kernels, not thirty copies.
  if (options.outlineKernels)
    pm.addPass(createOutlineKernelsPass());
  // The thread blocks of the tiled kernels join the other parallel loops.
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  pm.addNestedPass<func::FuncOp>(std::make_unique<CopiesToLoopsPass>());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createSplitParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(
      createVectorizeInnerLoopsPass(vectorRegisterBits(target.features)));
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
  pm.addPass(createOutlineParallelRegionsPass());
  pm.addPass(std::make_unique<EntryWrapperPass>());
}

void registerCpuBackendDialects(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, index::IndexDialect, linalg::LinalgDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  omp::OpenMPDialect, scf::SCFDialect, tensor::TensorDialect,
                  vector::VectorDialect>();
  // The inliner after the deallocation pipeline (func.call of its helper).
  func::registerInlinerExtension(registry);
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
  host::registerHostCodegenPasses();
  PassRegistration<EntryWrapperPass>();
  PassRegistration<FuseElementwisePass>();
  PassRegistration<CopiesToLoopsPass>();
  PassRegistration<ApproximateMathPass>();
  PassRegistration<DuplicateEmptyTensorsPass>();
  registerPass([] { return createInstrumentKernelsPass(); });
  registerPass([] { return createOutlineParallelRegionsPass(); });
  registerPass([] { return createOutlineKernelsPass(); });
  registerPass([] { return createLibraryCallsPass(); });
  registerPass([] { return createDnnlCallsPass(); });
  registerPass([] { return createCollectiveCallsPass(); });
  registerPass([] { return createCollectiveCallsPass(/*cuda=*/true); });
  registerPass([] { return createInt8CallsPass(); });
  registerPass([] { return createMarkInPlaceOutputsPass(); });
  registerPass([] { return createElideAliasedCopiesPass(); });
  registerPass([] { return createAmxCallsPass(); });
  registerPass([] { return createSplitDynamicPass(); });
  registerPass([] { return createSpecializeShapesPass(); });
  registerPackWeightsPass();
  registerTileAndVectorizePasses();
  registerVectorizeInnerLoopsPass();
  registerFindWeightTransformsPass();
  PassPipelineRegistration<>(
      "kiln-cpu-linalg-pipeline",
      "kiln graph -> linalg on tensors (weights hoisted)",
      [](OpPassManager &pm) { buildLinalgPipeline(pm, CpuOptions()); });
  PassPipelineRegistration<>(
      "kiln-cpu-llvm-pipeline", "linalg on tensors -> LLVM dialect",
      [](OpPassManager &pm) { buildLLVMPipeline(pm, CpuOptions()); });
}

bool linkSharedObject(llvm::ArrayRef<std::string> objects,
                      const CpuOptions &options, std::string &sharedObject,
                      std::string &error) {
  std::string archive =
      host::findSupportArchive("KILN_ABI_ARCHIVE", "libkiln_abi.a");
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
  libraries.push_back("-Wl,--no-whole-archive");
  // The oneDNN convolutions: the archive's kernel, an ordinary archive
  // member taken only when the code calls it, before -lomp (it asks for
  // the thread count) and libdnnl (needed only then).
  if (options.dnnlConvolutions()) {
    llvm::SmallString<256> dnnl(llvm::sys::path::parent_path(archive));
    llvm::sys::path::append(dnnl, "libkiln_abi_dnnl.a");
    libraries.push_back(std::string(dnnl));
  }
  // libomp of the LLVM whose OpenMP lowering the code calls into.
  std::string ompDir = host::llvmLibraryDir();
  libraries.insert(libraries.end(),
                   {"-L" + ompDir, "-Wl,-rpath," + ompDir, "-lomp"});
  if (options.kernels == "library")
    libraries.push_back("-lopenblas");
  if (options.dnnlConvolutions())
    libraries.insert(libraries.end(), {"-Wl,--as-needed", "-ldnnl",
                                       "-lstdc++", "-Wl,--no-as-needed"});
  libraries.push_back("-lm");
  return host::linkWithSystemCompiler(
      objects, libraries, "the model's shared object", sharedObject, error);
}

} // namespace kiln::cpu
