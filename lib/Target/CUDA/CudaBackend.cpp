//===- CudaBackend.cpp - linalg -> gpu kernels -> PTX/fatbin ---------------===//
//
// The first CUDA pipeline (docs/cuda-backend.md): elementwise fusion on
// tensors, bufferization, linalg -> scf.parallel, fusion of parallel loop
// nests with the same iteration space (a matmul's fill, the matmul and its
// elementwise epilogue become one nest, so one kernel), tiling onto blocks and
// threads, kernel naming from the origins carried in the locations, outlining,
// NVVM, and serialization with gpu-module-to-binary.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CUDA/CudaBackend.h"
#include "GemmMatch.h"
#include "kiln/Target/Host/HostCodegen.h"
#include "kiln/Target/KernelCategory.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace kiln::cuda {
void registerCudnnCallsPasses(); // CudnnCalls.cpp
namespace {

/// The PTX ISA version named for each chip: LLVM's default (6.0) does not
/// know sm_80+.
static std::string ptxFeature(StringRef chip) {
  if (chip == "sm_90" || chip == "sm_90a")
    return "+ptx80";
  if (chip == "sm_89")
    return "+ptx78";
  return "+ptx80";
}

/// Short kind of a kiln origin for kernel names ("kiln.matmul" -> "matmul").
static std::string kindOf(StringRef origin) {
  origin.consume_front("kiln.");
  std::string s = origin.str();
  for (char &c : s)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return s;
}

/// Names each gpu.launch k<N>_<kinds> from the kiln ops it computes and
/// records the kernel table (kernel -> ONNX nodes) on the module as
/// `kiln.cuda.kernels`. Fails, naming the ONNX node, on compute that stayed
/// on the host (an op the pipeline could not map onto a kernel).
struct NameKernelsPass
    : PassWrapper<NameKernelsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(NameKernelsPass)
  StringRef getArgument() const override { return "kiln-cuda-name-kernels"; }
  StringRef getDescription() const override {
    return "Name gpu.launch kernels by what they fuse; record the kernel table";
  }
  /// The profiler's category (docs/artifact.md) of a kernel computing
  /// `origins`: attention when an attention is among them, else the most
  /// important one's, where a GEMM origin counts only if the kernel sums
  /// products (a loop multiplying inside the thread); a kernel that only
  /// moves data (no arithmetic on its elements) or has no origins is a
  /// copy.
  static std::string categoryOf(gpu::LaunchOp launch,
                                ArrayRef<std::string> origins) {
        bool sumsProducts = false;
    launch.getBody().walk([&](scf::ForOp loop) {
      loop.getBody()->walk([&](Operation *op) {
        if (isa<arith::MulFOp, arith::MulIOp, math::FmaOp>(op))
          sumsProducts = true;
      });
    });
    // A kernel that only moves data (a transpose, a fill, a concat's copy)
    // is a copy whatever op it came from.
    bool computes = false;
    launch.getBody().walk([&](Operation *op) {
      StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace()
                                           : StringRef();
      if ((dialect != "arith" && dialect != "math") ||
          op->hasTrait<OpTrait::ConstantLike>())
        return;
      for (Type t : op->getOperandTypes())
        if (isa<FloatType>(t) ||
            (isa<IntegerType>(t) && t.getIntOrFloatBitWidth() > 1))
          computes = true;
    });
    std::optional<KernelCategory> best;
    if (!computes)
      best = KernelCategory::Copy;
    for (const std::string &o : origins) {
      std::optional<KernelCategory> c = categoryOfKilnOp(o);
      if (!c || o == "kiln.constant")
        continue;
      if (*c == KernelCategory::Attention)
        return kernelCategoryName(*c);
      if (!computes)
        continue;
      if (*c == KernelCategory::GEMM && !sumsProducts)
        c = KernelCategory::Elementwise;
      if (!best || static_cast<int>(*c) < static_cast<int>(*best))
        best = c;
    }
    return kernelCategoryName(best.value_or(KernelCategory::Copy));
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    SmallVector<Attribute> table;
    unsigned index = 0;
    bool failed = false;
    llvm::StringSet<> reported;
    module.walk([&](func::FuncOp func) {
      func.walk([&](Operation *op) {
        if (op->getParentOfType<gpu::LaunchOp>() || isa<gpu::LaunchOp>(op))
          return;
        if (isa<linalg::LinalgOp, scf::ParallelOp, scf::ForOp,
                memref::LoadOp, memref::StoreOp>(op)) {
          // One error per ONNX node: its loop nest has several such ops.
          std::string node = findOnnxNode(op->getLoc());
          if (!reported.insert(node).second)
            return;
          emitError(stripOrigins(op->getLoc()))
              << "CUDA target: '" << op->getName()
                          << "' from ONNX node '"
                          << (node.empty() ? "?" : node)
                          << "' was not mapped onto a GPU kernel "
                             "(unsupported by the CUDA pipeline)";
          failed = true;
        }
      });
      // The kernel table's entry of `name`; a library call's is marked
      // "library": not a function of the fatbin, the runtime does not look
      // it up there (docs/artifact.md, "library").
      auto addEntry = [&](StringRef name, ArrayRef<Attribute> nodeAttrs,
                          StringRef category, bool library) {
        SmallVector<NamedAttribute> entries{
            NamedAttribute(StringAttr::get(ctx, "kernel"),
                           StringAttr::get(ctx, name)),
            NamedAttribute(StringAttr::get(ctx, "nodes"),
                           ArrayAttr::get(ctx, nodeAttrs)),
            NamedAttribute(StringAttr::get(ctx, "category"),
                           StringAttr::get(ctx, category))};
        if (library)
          entries.push_back(NamedAttribute(StringAttr::get(ctx, "library"),
                                           BoolAttr::get(ctx, true)));
        table.push_back(DictionaryAttr::get(ctx, entries));
      };
      func.walk<WalkOrder::PreOrder>([&](Operation *op) {
        // Library calls (--kernels=library, LibraryCalls.cpp) are numbered
        // with the kernels and listed in the table as GEMMs.
        if (auto library =
                op->getAttrOfType<StringAttr>("kiln.cuda.library")) {
          SmallVector<std::string> nodes, origins;
          collectLocationInfo(op->getLoc(), nodes, origins);
          std::string name =
              "k" + std::to_string(index++) + "_" + library.getValue().str();
          op->setAttr("kiln.cuda.library", StringAttr::get(ctx, name));
          SmallVector<Attribute> nodeAttrs;
          for (const std::string &n : nodes)
            if (!llvm::is_contained(nodeAttrs, StringAttr::get(ctx, n)))
              nodeAttrs.push_back(StringAttr::get(ctx, n));
          addEntry(name, nodeAttrs, "gemm", /*library=*/true);
          return WalkResult::advance();
        }
        auto launch = dyn_cast<gpu::LaunchOp>(op);
        if (!launch)
          return WalkResult::advance();
        SmallVector<std::string> nodes, origins, otherNodes;
        // Elementwise fusion gives a fused op the location fused[consumer,
        // producer]: read each op's origins innermost first, so the names
        // follow the program order (matmul_add_relu).
        launch.getBody().walk([&](Operation *op) {
          // A constant (a small weight sunk into the kernel) carries the
          // initializer's name, which is not an ONNX node.
          if (op->hasTrait<OpTrait::ConstantLike>() ||
              isa<memref::GetGlobalOp>(op))
            return;
          SmallVector<std::string> opNodes, opOrigins, opLowered, opOther;
          collectLocationInfo(op->getLoc(), opNodes, opOrigins);
          collectNodes(op->getLoc(), /*underOrigin=*/false, opLowered,
                       opOther);
          for (const std::string &n : llvm::reverse(opLowered))
            if (!llvm::is_contained(nodes, n))
              nodes.push_back(n);
          for (const std::string &n : llvm::reverse(opOther))
            if (!llvm::is_contained(otherNodes, n))
              otherNodes.push_back(n);
          for (const std::string &o : llvm::reverse(opOrigins))
            if (!llvm::is_contained(origins, o))
              origins.push_back(o);
        });
        // Without any node of a kiln op, the names the locations hold.
        if (nodes.empty())
          nodes = otherNodes;
        std::string name = "k" + std::to_string(index++);
        SmallVector<std::string> kinds;
        // The anchor (matmul, conv, reduction) first, then the fused
        // elementwise ops in the order their locations are met.
        auto isAnchor = [](StringRef k) {
          return k.contains("matmul") || k.contains("conv") ||
                 k.contains("gemm") || k.starts_with("reduce") ||
                 k.contains("softmax") || k.contains("attention") ||
                 k.contains("norm");
        };
        for (int anchors = 1; anchors >= 0; --anchors)
          for (const std::string &o : origins) {
            std::string k = kindOf(o);
            if (k == "constant" || llvm::is_contained(kinds, k) ||
                isAnchor(k) != static_cast<bool>(anchors))
              continue;
            kinds.push_back(k);
          }
        if (kinds.empty())
          kinds.push_back("copy");
        std::string category = categoryOf(launch, origins);
        for (const std::string &k : kinds)
          name += "_" + k;
        launch.setFunctionAttr(FlatSymbolRefAttr::get(ctx, name));
        // All kernels in one gpu.module: one PTX text, one fatbin, one
        // cuModuleLoad per model.
        launch.setModuleAttr(FlatSymbolRefAttr::get(ctx, "kiln_kernels"));
        SmallVector<Attribute> nodeAttrs;
        for (const std::string &n : nodes)
          nodeAttrs.push_back(StringAttr::get(ctx, n));
        addEntry(name, nodeAttrs, category, /*library=*/false);
        return WalkResult::skip();
      });
    });
    if (failed)
      return signalPassFailure();
    module->setAttr("kiln.cuda.kernels", ArrayAttr::get(ctx, table));
  }
};

/// Moves the static allocations to the top of each function. Bufferization
/// places a result's alloc right before the loop nest that fills it, and
/// scf-parallel-loop-fusion only fuses adjacent nests: with the allocs out of
/// the way, a matmul's nest and its elementwise epilogue become neighbours.
struct HoistAllocsPass
    : PassWrapper<HoistAllocsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HoistAllocsPass)
  StringRef getArgument() const override { return "kiln-cuda-hoist-allocs"; }
  StringRef getDescription() const override {
    return "Move static memref.alloc ops to the function's entry";
  }
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &entry = func.getBody().front();
    SmallVector<memref::AllocOp> allocs;
    for (auto alloc : entry.getOps<memref::AllocOp>())
      if (alloc->getNumOperands() == 0)
        allocs.push_back(alloc);
    for (memref::AllocOp alloc : llvm::reverse(allocs))
      alloc->moveBefore(&entry, entry.begin());
  }
};

} // namespace

LogicalResult buildCudaPipeline(OpPassManager &pm, const CudaOptions &o) {
  // The entry's inputs and weights are read-only (bufferization never
  // writes into them); zero-element buffers leave the signature.
  pm.addPass(host::createPrepareEntryPass());
  std::string pipeline =
      // int8 GEMMs as signed ones: cuBLASLt calls (library mode) or
      // tensor-core kernels (codegen mode), both s8 x s8 -> s32.
      std::string(o.kernels == "library"
                      ? "func.func(kiln-cuda-int8-prepare),"
                      : "func.func(kiln-cuda-int8-prepare{library=false}),") +
      "linalg-fuse-elementwise-ops,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      // The outputs become out-parameters (kiln_entry's output buffers);
      // a result's allocation is replaced by its out-parameter.
      "buffer-results-to-out-params{hoist-static-allocs=true "
      "modify-public-functions=true}," +
      // Matmuls first: library calls (--kernels=library: int8 GEMMs as
      // cuBLASLt IMMA calls, Int8Calls.cpp; float GEMMs as cuBLASLt calls,
      // LibraryCalls.cpp), then tiled kernels (tensor cores for
      // fp16/bf16/int8)
      // for the ones left (MatmulKernels.cpp). Convolutions before them all
      // (cuDNN, CudnnCalls.cpp): the GEMM matchers would remark on them.
      std::string(o.kernels == "library"
                      ? "kiln-cuda-cudnn-calls,kiln-cuda-int8-calls,"
                        "kiln-cuda-library-calls,"
                      : "") +
      "func.func(kiln-cuda-matmul-kernels,kiln-cuda-copies-to-kernels,"
      "convert-linalg-to-parallel-loops,kiln-cuda-hoist-allocs,"
      "scf-parallel-loop-fusion,"
      // Fixed bounds with a guard inside: a dim that is not a multiple of
      // the tile (10 classes) keeps a static launch size, which
      // convert-parallel-loops-to-gpu needs.
      "scf-parallel-loop-tiling{parallel-loop-tile-sizes=4,32 "
      "no-min-max-bounds=true},"
      "gpu-map-parallel-loops,convert-parallel-loops-to-gpu,"
      "kiln-cuda-sink-globals),"
      "kiln-cuda-name-kernels,"
      // Constants into the kernels: conversions fold them to the function's
      // entry, and as kernel parameters they turn index math by constants
      // into divisions by parameters.
      "gpu-launch-sink-index-computations,gpu-kernel-outlining,"
      "gpu.module(kiln-cuda-align-workgroup),canonicalize,lower-affine,"
      "nvvm-attach-target{chip=" +
      o.chip + " O=3 features=" + ptxFeature(o.chip) +
      // math.exp & co. become calls to libdevice's __nv_* functions, which
      // ptxas cannot resolve: link libdevice into each kernel module.
      " l=" KILN_CUDA_LIBDEVICE "},"
      "gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,"
      "reconcile-unrealized-casts),"
      "gpu-module-to-binary{format=" +
      o.format + "}";
  return parsePassPipeline(pipeline, pm);
}

void registerCudaBackendDialects(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, nvgpu::NVGPUDialect,
                  vector::VectorDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  // convert-gpu-to-nvvm finds the patterns of the dialects inside kernels
  // through these interfaces (mlir-opt registers them all).
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  // The host code's gpu.binary: #gpu.select_object embeds the fatbin and
  // loads it (mgpuModuleLoad) from a global constructor.
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}

void registerCudaBackendPasses() {
  PassRegistration<NameKernelsPass>();
  PassRegistration<HoistAllocsPass>();
  registerInt8CallsPasses();
  registerHostCodePasses();
  registerMatmulKernelsPasses();
  registerLibraryCallsPasses();
  registerCudnnCallsPasses(); // CudnnCalls.cpp: convolutions through cuDNN
  registerConvertNVGPUToNVVMPass();
  registerTransformsPasses();
  registerGPUPasses();
  registerSCFPasses();
  registerLinalgPasses();
  mlir::registerSCFToControlFlowPass();
  registerConvertParallelLoopToGpuPass();
  registerConvertGpuOpsToNVVMOps();
  registerReconcileUnrealizedCastsPass();
  registerLowerAffinePass();
  bufferization::registerBufferizationPasses();
  static CudaOptions defaults;
  PassPipelineRegistration<>(
      "kiln-cuda-pipeline",
      "linalg on tensors -> gpu kernels serialized to PTX (sm_80)",
      [](OpPassManager &pm) { (void)buildCudaPipeline(pm, defaults); });
  // The pipeline with one option other than the default (the tests').
  auto registerVariant = [](StringRef name, StringRef description,
                            std::string CudaOptions::*option,
                            StringRef value) {
    PassPipelineRegistration<>(
        name, description,
        [option, value = value.str()](OpPassManager &pm) {
          CudaOptions o;
          o.*option = value;
          (void)buildCudaPipeline(pm, o);
        });
  };
  registerVariant("kiln-cuda-pipeline-sm90", "the same for sm_90",
                  &CudaOptions::chip, "sm_90");
  registerVariant("kiln-cuda-pipeline-fatbin",
                  "the same to a fatbin (ptxas) for sm_80",
                  &CudaOptions::format, "fatbin");
  registerVariant(
      "kiln-cuda-pipeline-library",
      "the same for sm_80 with --kernels=library (GEMMs as runtime calls)",
      &CudaOptions::kernels, "library");
}

} // namespace kiln::cuda
