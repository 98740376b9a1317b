//===- PackWeights.cpp - Weights in column panels for the GEMM kernels ----===//
//
// kiln-cpu-pack-weights (on the graph, weights hoisted, --kernels=codegen):
// a [K, N] weight that is the right-hand side of MatMul (or Gemm without
// transB) is stored as column panels of `panel` columns, [ceil(N / panel),
// K, panel], the last panel zero-padded; the ops read it through
//
//   linalg.transpose [1, 0, 2] -> tensor.collapse_shape -> [K, panels*panel]
//   -> tensor.extract_slice [K, N] (when padded)
//
// which kiln-cpu-tile-and-vectorize folds away: a thread block of `panel`
// columns (its block-n) reads panel n0 / panel, a contiguous [K, panel]
// slab, instead of K strided runs of the [K, N] matrix. Row-major, a
// register tile read 4 * nr bytes of each of the K rows, one row 4 N bytes
// after the other: every K step another page and no hardware prefetch.
// That made a decode step's matrix-vector products (M = 1, all weight
// traffic) run at half the bandwidth a contiguous read gets: the LM head
// of a 135M-parameter decoder, [1, 576] x [576, 49152], took 3.9 ms on two
// AVX-512 cores, 2.1 ms packed (ONNX Runtime, which prepacks B too: 2.4).
//
// The panels are made at compile time, in the weight's own element type, so
// the artifact's weights section holds the packed bytes and nothing is
// copied at run time. A Gather may read the weight too (a tied LM head:
// the token embedding, stored transposed by kiln-hoist-weights): its
// tensor.extract of [k, n] reads [n / panel, k, n % panel] of the panels
// (kiln-cpu-tile-and-vectorize), so the weight is stored once. A weight
// with any other reader stays [K, N].
// A contraction that kiln-cpu-tile-and-vectorize leaves alone (the AMX-BF16
// kernel's, skip-bf16) is not packed: its weight stays row-major.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CpuBackend.h"
#include "kiln/Analysis/ModelStats.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Pass/Pass.h"

#include <cstring>

using namespace mlir;

namespace kiln::cpu {
namespace {

/// Whether `use` is the [K, N] right-hand side of a matmul the tile pass
/// takes: MatMul's B, or Gemm's B without transA/transB.
bool isPackableUse(OpOperand &use, bool skipBf16) {
  Operation *owner = use.getOwner();
  if (use.getOperandNumber() != 1)
    return false;
  auto type = cast<RankedTensorType>(use.get().getType());
  // On AMX-BF16 targets the bf16 matmuls of kAmxMinRows static rows or more
  // are the AMX kernel's, which reads B row-major; the others (a decode
  // step's one row, a run-time row count) are the tile pass's, which reads
  // panels: left row-major, a GEMV of a [576, 576] bf16 weight read
  // 96-column slices of its 1152-byte rows (decode step: 25 ms, packed 15).
  if (skipBf16 && type.getElementType().isBF16()) {
    auto lhs = dyn_cast<RankedTensorType>(owner->getOperand(0).getType());
    if (!lhs || lhs.getRank() < 2)
      return false;
    int64_t rows = lhs.getDimSize(lhs.getRank() - 2);
    if (!ShapedType::isDynamic(rows) && rows >= kAmxMinRows)
      return false;
  }
  if (isa<kiln::MatMulOp>(owner))
    return true;
  if (auto gemm = dyn_cast<kiln::GemmOp>(owner))
    return gemm.getTransA() == 0 && gemm.getTransB() == 0;
  return false;
}

struct PackWeightsPass
    : PassWrapper<PackWeightsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PackWeightsPass)
  PackWeightsPass() = default;
  PackWeightsPass(const PackWeightsPass &other) : PassWrapper(other) {}
  PackWeightsPass(int64_t panelWidth, bool skipBf16Matmuls, int64_t nr) {
    panel = panelWidth;
    skipBf16 = skipBf16Matmuls;
    registerCols = nr;
  }
  StringRef getArgument() const override { return "kiln-cpu-pack-weights"; }
  StringRef getDescription() const override {
    return "Store the [K, N] matmul weights of @main as column panels "
           "[N/panel, K, panel] for the tiled GEMM kernels";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect, tensor::TensorDialect>();
  }

  Option<int64_t> panel{*this, "panel",
                        llvm::cl::desc("Columns of the widest panel (the "
                                       "tile pass's block-n); each weight's "
                                       "is gemmBlockColumns(N, panel, nr)"),
                        llvm::cl::init(kWeightPanel)};
  Option<int64_t> registerCols{
      *this, "nr",
      llvm::cl::desc("The tile pass's register tile columns (nr)"),
      llvm::cl::init(32)};
  Option<bool> skipBf16{*this, "skip-bf16",
                        llvm::cl::desc("Leave bf16 weights row-major (the "
                                       "AMX-BF16 kernel reads them)"),
                        llvm::cl::init(false)};
  Option<int64_t> minBytes{*this, "min-bytes",
                           llvm::cl::desc("Pack weights of at least this "
                                          "many bytes"),
                           llvm::cl::init(64 * 1024)};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal() || panel < 1)
      return;
    OpBuilder b(&getContext());
    unsigned numArgs = main.getNumArguments();
    for (unsigned i = 0; i < numArgs; ++i) {
      BlockArgument arg = main.getArgument(i);
      if (!main.getArgAttr(i, "kiln.weight"))
        continue;
      auto value = main.getArgAttrOfType<ElementsAttr>(i, "kiln.weight_value");
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!value || !type || type.getRank() != 2 || !type.hasStaticShape())
        continue;
      Type element = type.getElementType();
      if (!(element.isF32() || element.isF16() || element.isBF16()))
        continue;
      int64_t k = type.getDimSize(0), n = type.getDimSize(1);
      int64_t width = element.getIntOrFloatBitWidth() / 8;
      // This weight's panel: its matmuls' thread blocks.
      int64_t panel = gemmBlockColumns(n, this->panel, registerCols);
      // A weight no wider than one panel is one panel already.
      if (n <= panel || k * n * width < minBytes)
        continue;
      // Every reader must read the panels where they lie: the matmuls (the
      // tile pass's thread blocks) and Gathers (their tensor.extract, which
      // the tile pass re-indexes); anything else would copy the weight back
      // into [K, N] in every run.
      bool matmuls = false, others = false;
      for (OpOperand &use : arg.getUses()) {
        if (isPackableUse(use, skipBf16))
          matmuls = true;
        else if (!isa<kiln::GatherOp>(use.getOwner()) ||
                 use.getOperandNumber() != 0)
          others = true;
      }
      if (!matmuls || others)
        continue;
      ArrayRef<char> data = kiln::weightBytes(value, width);
      if (data.empty())
        continue;

      int64_t panels = (n + panel - 1) / panel;
      std::vector<char> packed(size_t(panels * k * panel * width), 0);
      for (int64_t p = 0; p < panels; ++p) {
        int64_t cols = std::min<int64_t>(panel, n - p * panel);
        for (int64_t row = 0; row < k; ++row)
          std::memcpy(&packed[size_t(((p * k + row) * panel) * width)],
                      &data[size_t((row * n + p * panel) * width)],
                      size_t(cols * width));
      }
      auto packedType = RankedTensorType::get({panels, k, panel}, element);
      std::string name =
          main.getArgAttrOfType<StringAttr>(i, "kiln.weight").str();
      if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
        name = resource.getRawHandle().getKey().str();
      AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
          ArrayRef<char>(packed), alignof(std::max_align_t));
      auto packedValue = DenseResourceElementsAttr::get(
          packedType, name + ".panels", std::move(blob));

      arg.setType(packedType);
      main.setArgAttr(i, "kiln.weight_value", packedValue);

      // [panels, K, panel] -> [K, panels, panel] -> [K, panels * panel]
      // -> [K, N]: the layout the ops read, until the tile pass reads the
      // panels directly.
      b.setInsertionPointToStart(&main.getBody().front());
      Location loc = arg.getLoc();
      Value empty = tensor::EmptyOp::create(
          b, loc, ArrayRef<int64_t>{k, panels, panel}, element);
      Value transposed =
          linalg::TransposeOp::create(b, loc, arg, empty,
                                      ArrayRef<int64_t>{1, 0, 2})
              ->getResult(0);
      Value unpacked = tensor::CollapseShapeOp::create(
          b, loc, transposed, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
      if (panels * panel != n)
        unpacked = tensor::ExtractSliceOp::create(
            b, loc, type, unpacked, ArrayRef<OpFoldResult>{b.getIndexAttr(0),
                                                           b.getIndexAttr(0)},
            ArrayRef<OpFoldResult>{b.getIndexAttr(k), b.getIndexAttr(n)},
            ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
      arg.replaceAllUsesExcept(unpacked, transposed.getDefiningOp());
    }
    main.setType(FunctionType::get(&getContext(),
                                   main.getBody().front().getArgumentTypes(),
                                   main.getFunctionType().getResults()));
  }
};

} // namespace

std::unique_ptr<Pass> createPackWeightsPass(int64_t panel, bool skipBf16,
                                            int64_t registerCols) {
  return std::make_unique<PackWeightsPass>(panel, skipBf16, registerCols);
}

void registerPackWeightsPass() { PassRegistration<PackWeightsPass>(); }

} // namespace kiln::cpu
