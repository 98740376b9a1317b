//===- AmxCalls.cpp - bf16 matmuls through Kiln's AMX-BF16 kernel ---------===//
//
// On bufferized IR, replaces each linalg.matmul / linalg.batch_matmul with
// bf16 operands and an f32 accumulator (what `--precision=bf16` lowers a
// MatMul/Gemm to) by an scf.parallel over (batch,) blocks of columns whose
// body calls kiln_abi_bf16gemm_f32 (runtime/abi/kiln_abi_amx.c: tdpbf16ps
// on AMX tiles, a portable loop where AMX is not allowed at run time). The
// backend adds this pass only for targets with AMX-BF16, and then leaves
// those contractions out of kiln-cpu-tile-and-vectorize. Operands whose
// innermost dimension is not contiguous, or a batched B that is not dense
// per batch, keep the linalg op (plain loops).
//
//===----------------------------------------------------------------------===//

#include "KernelCalls.h"
#include "kiln/Target/CPU/CpuBackend.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kiln::cpu {


bool isAmxBf16Contraction(Operation *op) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
    return false;
  auto linalgOp = cast<linalg::LinalgOp>(op);
  if (linalgOp.getNumDpsInputs() != 2 || linalgOp.getNumDpsInits() != 1)
    return false;
  // Plain matmuls only: no transposed/broadcast indexing maps.
  if (auto matmul = dyn_cast<linalg::MatmulOp>(op);
      matmul && matmul.hasUserDefinedMaps())
    return false;
  if (auto batch = dyn_cast<linalg::BatchMatmulOp>(op);
      batch && batch.hasUserDefinedMaps())
    return false;
  // At fewer than 4 rows (a batch-1 GEMV) the 16-row tiles are mostly
  // padding and packing B costs more than it saves: the vectorized kernel
  // of kiln-cpu-tile-and-vectorize is faster there (demo MLP at batch 1:
  // 1.9x slower on AMX).
  auto lhs =
      dyn_cast<ShapedType>(linalgOp.getDpsInputOperand(0)->get().getType());
  if (!lhs || !lhs.hasRank() || lhs.getRank() < 2)
    return false;
  int64_t rows = lhs.getDimSize(lhs.getRank() - 2);
  if (ShapedType::isDynamic(rows) || rows < kAmxMinRows)
    return false;
  auto elementOf = [](Value v) { return getElementTypeOrSelf(v.getType()); };
  return elementOf(linalgOp.getDpsInputOperand(0)->get()).isBF16() &&
         elementOf(linalgOp.getDpsInputOperand(1)->get()).isBF16() &&
         elementOf(linalgOp.getDpsInitOperand(0)->get()).isF32();
}

namespace {

/// Columns per parallel block, as kiln-cpu-int8-calls (the same per-call
/// copy of A against the block's work).
constexpr int64_t kColumnBlock = 128;

struct AmxCallsPass : PassWrapper<AmxCallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AmxCallsPass)
  StringRef getArgument() const override { return "kiln-cpu-amx-bf16-calls"; }
  StringRef getDescription() const override {
    return "Call Kiln's AMX-BF16 GEMM kernel for bf16 x bf16 -> f32 "
           "matmuls (bufferized IR)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<func::FuncDialect, memref::MemRefDialect,
                    scf::SCFDialect, arith::ArithDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (isAmxBf16Contraction(op) && op.hasPureBufferSemantics() &&
          llvm::all_of(op->getOperands(), hasContiguousRows))
        candidates.push_back(op);
    });
    for (linalg::LinalgOp op : candidates) {
      bool batched = isa<linalg::BatchMatmulOp>(op);
      OpBuilder b(op);
      Location loc = op.getLoc();
      StridedOperand a = decompose(b, loc, op.getDpsInputOperand(0)->get());
      StridedOperand w = decompose(b, loc, op.getDpsInputOperand(1)->get());
      StridedOperand c = decompose(b, loc, op.getDpsInitOperand(0)->get());
      auto index = [&](int64_t v) -> Value {
        return arith::ConstantIndexOp::create(b, loc, v);
      };
      // Rows of A and C, and B's rows (K), are the second-to-last dims.
      unsigned r = batched ? 1 : 0;
      Value m = a.sizes[r], k = a.sizes[r + 1], n = w.sizes[r + 1];
      Value block = index(kColumnBlock);
      Value blocks = arith::CeilDivUIOp::create(b, loc, n, block);
      func::FuncOp fn = declareKernel(module, "kiln_abi_bf16gemm_f32", 13);
      SmallVector<Value> lower{index(0)}, upper{blocks}, steps{index(1)};
      if (batched) {
        lower.insert(lower.begin(), index(0));
        upper.insert(upper.begin(), a.sizes[0]);
        steps.insert(steps.begin(), index(1));
      }
      scf::ParallelOp::create(
          b, loc, lower, upper, steps,
          [&](OpBuilder &nb, Location l, ValueRange ivs) {
            Value blockIv = ivs.back();
            Value aOff = a.offset, wOff = w.offset, cOff = c.offset;
            if (batched) {
              auto at = [&](StridedOperand &s, Value base) -> Value {
                return arith::AddIOp::create(
                    nb, l, base,
                    arith::MulIOp::create(nb, l, ivs[0], s.strides[0]));
              };
              aOff = at(a, aOff);
              wOff = at(w, wOff);
              cOff = at(c, cOff);
            }
            Value n0 = arith::MulIOp::create(nb, l, blockIv, block);
            Value n1 = arith::MinUIOp::create(
                nb, l, arith::AddIOp::create(nb, l, n0, block), n);
            func::CallOp::create(
                nb, l, fn,
                ValueRange{a.pointer, aOff, a.strides[r], w.pointer, wOff,
                           w.strides[r], c.pointer, cOff, c.strides[r], m, k,
                           n0, n1});
          });
      op->erase();
    }
  }
};

} // namespace

std::unique_ptr<Pass> createAmxCallsPass() {
  return std::make_unique<AmxCallsPass>();
}

} // namespace kiln::cpu
