//===- CpuBackend.h - Kiln's CPU code generator -----------------*- C++ -*-===//
//
// From the optimized kiln graph to a shared object for the host CPU:
//
//   graph (kiln)  --buildLinalgPipeline-->  linalg on tensors
//                 --buildLLVMPipeline--->   LLVM dialect, kiln_entry(void**)
//   host:: translateToLLVMIR -> optimizeLLVMModule -> emitMachineCode
//   linkSharedObject: the object + Kiln's ABI support archive -> .so bytes
//
// (kiln/Target/Host/HostCodegen.h holds the code generation both targets
// share.)
//
// The calling convention of the result is docs/artifact.md's "Code ABI".
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_CPU_CPUBACKEND_H
#define KILN_TARGET_CPU_CPUBACKEND_H

#include "kiln/Target/KernelCategory.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::cpu {

struct CpuOptions {
  /// `native` (the host CPU and its features), `generic` (x86-64 baseline,
  /// runs on any x86-64), or an LLVM CPU name (e.g. skylake-avx512).
  std::string cpu = "native";
  /// `auto` (codegen, and the float32 channels-last convolutions through
  /// oneDNN where Kiln is built with it), `codegen` (MLIR-generated loops)
  /// or `library` (OpenBLAS GEMM for the matmuls and convolutions).
  std::string kernels = "auto";
  /// Whether the GEMMs and the other ops are Kiln's generated code (auto,
  /// codegen).
  bool codegenKernels() const { return kernels != "library"; }
  /// Whether the library convolutions (kiln::isLibraryConvolution) are
  /// oneDNN calls.
  bool dnnlConvolutions() const { return kernels == "auto" && haveDnnl(); }
  static bool haveDnnl() {
#ifdef KILN_HAVE_DNNL
    return true;
#else
    return false;
#endif
  }
  /// Parallel loops on OpenMP (the thread count is a run-time option).
  bool parallel = true;
  /// LLVM optimization level (0..3).
  unsigned llvmOptLevel = 3;
  /// Bracket each kernel with the profiling hooks (kiln_abi_prof_begin/end)
  /// and record the kernel table in the artifact (docs/artifact.md).
  bool profileHooks = true;
  /// Each top-level kernel in a function of its own, the same ones merged
  /// (kiln-cpu-outline-kernels): the lowering and LLVM see one layer's
  /// kernels of a deep model, not one huge function.
  bool outlineKernels = true;
};

/// The columns of one thread block of the tiled GEMM kernels (the tile
/// pass's block-n) and of one panel of a packed weight: a block reads one
/// panel.
constexpr int64_t kWeightPanel = 256;

/// The columns of the thread blocks of a GEMM whose output has `n` columns,
/// and of the panels its weight is stored in: the widest multiple of
/// `registerCols`, from `maxCols` down to two register tiles, that splits N
/// into an even number of whole blocks; `maxCols` when none does (or N is
/// dynamic). A decode step has one row, so its blocks are N's: [1, 576] x
/// [576, 576] in blocks of 256 was 256 + 256 + 64 columns, one thread
/// running two blocks while the other ran one, and a [576, 192] weight was
/// one block on one thread; as 6 x 96 and 2 x 96 two threads (or three, or
/// six) share them evenly. The weight-packing pass and the tile pass both
/// call this, so a block reads exactly one panel.
inline int64_t gemmBlockColumns(int64_t n, int64_t maxCols,
                                int64_t registerCols) {
  if (n <= 0 || registerCols <= 0)
    return maxCols;
  for (int64_t cols = maxCols - maxCols % registerCols;
       cols >= 2 * registerCols; cols -= registerCols)
    if (n % cols == 0 && (n / cols) % 2 == 0)
      return cols;
  return maxCols;
}

/// The fewest rows of A (M, static) a bf16 matmul needs to go to the AMX-BF16
/// kernel (kiln-cpu-amx-bf16-calls); fewer or a run-time count: the tile
/// pass's vectorized kernel.
constexpr int64_t kAmxMinRows = 4;

/// On the graph, weights hoisted (--kernels=codegen): the [K, N] weights
/// that MatMul/Gemm read as B become column panels [N/panel, K, panel],
/// read through a transpose that kiln-cpu-tile-and-vectorize folds into
/// its thread blocks (a contiguous slab per block). skipBf16: the AMX-BF16
/// kernel's weights stay row-major.
/// `panel` is the widest panel; each weight's is gemmBlockColumns(N, panel,
/// registerCols) (registerCols: the tile pass's nr for the target).
std::unique_ptr<mlir::Pass> createPackWeightsPass(int64_t panel = kWeightPanel,
                                                  bool skipBf16 = false,
                                                  int64_t registerCols = 32);
void registerPackWeightsPass();

/// kiln-cpu-pack-weights with the options' target (none with
/// --kernels=library).
void buildPackWeightsPipeline(mlir::OpPassManager &pm,
                              const CpuOptions &options);
/// kiln ops (after the graph pipeline) -> linalg/tensor/arith/math; the large
/// constants become weight arguments of @main first.
void buildLinalgPipeline(mlir::OpPassManager &pm, const CpuOptions &options,
                         bool hoistWeights = true);
/// linalg on tensors -> LLVM dialect with the exported `kiln_entry`.
void buildLLVMPipeline(mlir::OpPassManager &pm, const CpuOptions &options);
/// --kernels=auto, on the graph (weights hoisted): the channels-last
/// convolutions kiln::isLibraryConvolution accepts become calls to oneDNN
/// (kiln_abi_dnnl.cpp) with their epilogue as post-ops.
std::unique_ptr<mlir::Pass> createDnnlCallsPass();
/// On the graph: kiln.all_reduce (tensor parallelism) becomes a call to
/// kiln_abi_all_reduce_sum_* (the runtime's MPI all-reduce), or with
/// `cuda` to the CUDA shim's kiln_rt_cuda_all_reduce_* (NCCL).
std::unique_ptr<mlir::Pass> createCollectiveCallsPass(bool cuda = false);
/// --kernels=library: float32 matmul, batch_matmul and NCHW convolution on
/// buffers become calls to OpenBLAS-backed kernels (kiln_abi_blas.c).
std::unique_ptr<mlir::Pass> createLibraryCallsPass();
/// On buffers: the int8 contraction of kiln.quantized_matmul (the
/// linalg.generic marked `kiln.int8_matmul`) becomes calls to Kiln's int8
/// GEMM kernel (kiln_abi_qgemm.c), parallel over column blocks.
std::unique_ptr<mlir::Pass> createInt8CallsPass();
/// On buffers: linalg.matmul / batch_matmul with bf16 operands and an f32
/// accumulator become calls to Kiln's AMX-BF16 GEMM kernel
/// (kiln_abi_amx.c), parallel over (batch,) column blocks.
std::unique_ptr<mlir::Pass> createAmxCallsPass();
/// The contractions createAmxCallsPass takes (checked on tensors too, so
/// that kiln-cpu-tile-and-vectorize leaves them alone).
bool isAmxBf16Contraction(mlir::Operation *op);
/// --kernels=codegen, on tensors: float32 matmul, batch_matmul and NCHW
/// convolution (as im2col + GEMM) tiled into thread blocks (scf.forall) and
/// mr x nr register tiles, vectorized as outer-product micro-kernels.
/// halfOnly (--kernels=library): only the contractions with f16/bf16
/// operands, which the BLAS calls do not take. skipAmxBf16: not the ones
/// the AMX-BF16 kernel takes (isAmxBf16Contraction).
std::unique_ptr<mlir::Pass>
createTileAndVectorizePass(int64_t mr, int64_t nr, bool halfOnly = false,
                           bool skipAmxBf16 = false);
/// On tensors, before the tile pass: a float32 NCHW convolution whose only
/// run-time extent is the batch as an scf.for of static one-image ones.
std::unique_ptr<mlir::Pass> createSplitDynamicPass();
/// On tensors, before createSplitDynamicPass: contractions and NCHW
/// convolutions with run-time extents get static copies for the sizes the
/// module's `kiln.shape_hints` (--shape-hints) name: opt, or every size of
/// a range of at most 4 (scf.index_switch, the dynamic op as the default).
std::unique_ptr<mlir::Pass> createSpecializeShapesPass();
/// After bufferization: vector.contract to outer products/FMAs, n-D vector
/// ops towards the 1-D ones convert-vector-to-llvm takes.
std::unique_ptr<mlir::Pass> createLowerVectorsPass();
/// Multi-dimensional scf.parallel: the outer dimensions stay parallel (enough
/// iterations for the threads), the inner ones become scf.for, so that the
/// OpenMP loop does not collapse the innermost (vectorizable) dimension.
std::unique_ptr<mlir::Pass> createSplitParallelLoopsPass();
void registerTileAndVectorizePasses();
/// After createSplitParallelLoopsPass: the innermost scf.for of an
/// elementwise loop nest gets a vector body of `vectorBits`-wide registers
/// (contiguous loads and stores along the induction variable, invariants
/// broadcast) and a scalar remainder.
std::unique_ptr<mlir::Pass> createVectorizeInnerLoopsPass(int64_t vectorBits);
void registerVectorizeInnerLoopsPass();
/// On tensors, right before bufferization: the ops of @main that compute
/// only from weights (they run on every call) as the module attribute
/// `kiln.weight_transforms` ([{op, weights, onnx_nodes, bytes}]).
std::unique_ptr<mlir::Pass> createFindWeightTransformsPass();
void registerFindWeightTransformsPass();

/// On the LLVM dialect: each omp.parallel of a function with several moves
/// into a function of its own, so that translating the OpenMP regions is not
/// quadratic in the number of kernels of @main.
std::unique_ptr<mlir::Pass> createOutlineParallelRegionsPass();

/// On bufferized IR, after the instrumentation: each top-level kernel of a
/// function moves into a private function of its own (parameters: what it
/// reads from outside), and the ones that are the same code become one, so
/// that the lowering and LLVM work on one layer's kernels, not on every
/// layer's copy of them in one huge @main.
std::unique_ptr<mlir::Pass> createOutlineKernelsPass();

/// On bufferized IR, before the loops are lowered: brackets each top-level
/// kernel of @main with calls to kiln_abi_prof_begin/end(i32 id) and records
/// the kernel table as the module attribute `kiln.kernels`.
std::unique_ptr<mlir::Pass> createInstrumentKernelsPass();
/// The module's `kiln.kernels` as the artifact's JSON array ("" when the
/// module has none).
std::string kernelTableJson(mlir::ModuleOp module);

/// The dialects the lowering creates and their bufferization models.
void registerCpuBackendDialects(mlir::DialectRegistry &registry);
/// Registers the passes above (and Kiln's own entry-point passes) for
/// kiln-opt.
void registerCpuBackendPasses();

/// Links objects into a shared object with Kiln's ABI support archive
/// (libkiln_abi.a beside the tools, or $KILN_ABI_ARCHIVE), libomp and libm,
/// using the system C compiler ($KILN_CC, else cc).
bool linkSharedObject(llvm::ArrayRef<std::string> objects,
                      const CpuOptions &options, std::string &sharedObject,
                      std::string &error);

} // namespace kiln::cpu

#endif // KILN_TARGET_CPU_CPUBACKEND_H
