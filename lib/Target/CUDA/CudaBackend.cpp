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
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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
          NamedAttribute entries[] = {
              NamedAttribute(StringAttr::get(ctx, "kernel"),
                             StringAttr::get(ctx, name)),
              NamedAttribute(StringAttr::get(ctx, "nodes"),
                             ArrayAttr::get(ctx, nodeAttrs)),
              NamedAttribute(StringAttr::get(ctx, "category"),
                             StringAttr::get(ctx, "gemm"))};
          table.push_back(DictionaryAttr::get(ctx, entries));
          return WalkResult::advance();
        }
        auto launch = dyn_cast<gpu::LaunchOp>(op);
        if (!launch)
          return WalkResult::advance();
        SmallVector<std::string> nodes, origins;
        // Elementwise fusion gives a fused op the location fused[consumer,
        // producer]: read each op's origins innermost first, so the names
        // follow the program order (matmul_add_relu).
        launch.getBody().walk([&](Operation *op) {
          SmallVector<std::string> opNodes, opOrigins;
          collectLocationInfo(op->getLoc(), opNodes, opOrigins);
          for (const std::string &n : llvm::reverse(opNodes))
            if (!llvm::is_contained(nodes, n))
              nodes.push_back(n);
          for (const std::string &o : llvm::reverse(opOrigins))
            if (!llvm::is_contained(origins, o))
              origins.push_back(o);
        });
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
        for (const std::string &k : kinds)
          name += "_" + k;
        launch.setFunctionAttr(FlatSymbolRefAttr::get(ctx, name));
        // All kernels in one gpu.module: one PTX text, one fatbin, one
        // cuModuleLoad per model.
        launch.setModuleAttr(FlatSymbolRefAttr::get(ctx, "kiln_kernels"));
        SmallVector<Attribute> nodeAttrs;
        for (const std::string &n : nodes)
          nodeAttrs.push_back(StringAttr::get(ctx, n));
        NamedAttribute entries[] = {
            NamedAttribute(StringAttr::get(ctx, "kernel"),
                           StringAttr::get(ctx, name)),
            NamedAttribute(StringAttr::get(ctx, "nodes"),
                           ArrayAttr::get(ctx, nodeAttrs))};
        table.push_back(DictionaryAttr::get(ctx, entries));
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
  std::string pipeline =
      "linalg-fuse-elementwise-ops,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map}," +
      // Matmuls first: library calls (--kernels=library), then tiled kernels
      // (tensor cores for fp16/bf16) for the ones left (MatmulKernels.cpp).
      std::string(o.kernels == "library" ? "kiln-cuda-library-calls," : "") +
      "func.func(kiln-cuda-matmul-kernels,"
      "convert-linalg-to-parallel-loops,kiln-cuda-hoist-allocs,"
      "scf-parallel-loop-fusion,"
      // Constant inner bounds and a guard: convert-parallel-loops-to-gpu
      // cannot map the min/max bounds of a size not a multiple of the tile.
      "scf-parallel-loop-tiling{parallel-loop-tile-sizes=4,32 "
      "no-min-max-bounds=true},"
      "gpu-map-parallel-loops,convert-parallel-loops-to-gpu),"
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
}

void registerCudaBackendPasses() {
  PassRegistration<NameKernelsPass>();
  PassRegistration<HoistAllocsPass>();
  registerMatmulKernelsPasses();
  registerLibraryCallsPasses();
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
  PassPipelineRegistration<>(
      "kiln-cuda-pipeline-sm90", "the same for sm_90",
      [](OpPassManager &pm) {
        CudaOptions o;
        o.chip = "sm_90";
        (void)buildCudaPipeline(pm, o);
      });
  PassPipelineRegistration<>(
      "kiln-cuda-pipeline-fatbin", "the same to a fatbin (ptxas) for sm_80",
      [](OpPassManager &pm) {
        CudaOptions o;
        o.format = "fatbin";
        (void)buildCudaPipeline(pm, o);
      });
  PassPipelineRegistration<>(
      "kiln-cuda-pipeline-library",
      "the same for sm_80 with --kernels=library (GEMMs as runtime calls)",
      [](OpPassManager &pm) {
        CudaOptions o;
        o.kernels = "library";
        (void)buildCudaPipeline(pm, o);
      });
}

} // namespace kiln::cuda
